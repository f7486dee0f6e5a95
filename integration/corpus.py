"""A real, varied file tree for round-trip, opacity and type tests, built without network.

Layout (under ROOT/corpus, the folder that tests import):

    images/        PNG, BMP, GIF, JPEG written here by Python, plus real images copied from the
                   system (/usr/share: *.png, *.jpg, *.svg, *.gif, *.ico) when there are any
    documents/     a hand-built PDF, text, CSV, JSON, HTML, Markdown, plus system PDFs/HTML
    archives/      tar.gz, zip, gzip, bzip2, xz made with the stdlib, plus system *.gz
    audio/         a WAV made with the wave module, plus a system MP3 when there is one
    videos/        a hand-built MP4 container
    binaries/      an ELF copied from /bin, random files at the content chunk boundaries
                   (1 MiB-1, 1 MiB, 1 MiB+1, 2 MiB, 3 MiB+5; the chunk is 1 MiB), tiny files
    empty/         zero-byte files, and an empty folder `nothing here/`
    hostile/       names with spaces, quotes, glob characters, a leading dash, `;`, `#`, `\\`,
                   emoji, a leading dot, names of exactly 255 bytes (ASCII and multi-byte)
    unicode/nfc/   "café.txt" spelled NFC (c a f U+00E9)
    unicode/nfd/   "café.txt" spelled NFD (c a f e U+0301)
    deep/l1/l2/l3/l4/   nesting four levels below `deep`

NFC and NFD: the two spellings are different names on the host but the same name in the vault
(names are NFC-normalised), so they live in *different* folders here and both round-trip; an
export writes the NFC spelling, so expected vault paths are the NFC form of the host paths.
What happens when both spellings are imported into one folder (keep-both numbering) is tested
separately in test_commands.py.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import json
import lzma
import os
import random
import shutil
import struct
import tarfile
import unicodedata
import wave
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

MIB = 1048576

NFC_NAME = unicodedata.normalize("NFC", "caf\u00e9.txt")
NFD_NAME = unicodedata.normalize("NFD", "caf\u00e9.txt")
assert NFC_NAME != NFD_NAME

LONG_ASCII_NAME = "L" * 251 + ".txt"                       # 255 bytes
LONG_UTF8_NAME = "\u00e9" * 126 + "abc"                     # 252 + 3 = 255 bytes in NFC
assert len(LONG_ASCII_NAME.encode()) == 255
assert len(LONG_UTF8_NAME.encode()) == 255

HOSTILE_NAMES = [
    "name with spaces.txt",
    "  two leading spaces.txt",
    "trailing space .txt",
    "it's.txt",
    'say "hi".txt',
    "both ' and \".txt",
    "star*.txt",
    "*",
    "what?.txt",
    "[brackets].txt",
    "[!neg].txt",
    "-leading-dash.txt",
    "--double-dash",
    "semi;colon.txt",
    "#hash.txt",
    "back\\slash.txt",
    "dollar $HOME.txt",
    "tilde ~.txt",
    "(parens) & amp.txt",
    "emoji \U0001F4F7\U0001F389.txt",
    ".hidden.txt",
    LONG_ASCII_NAME,
    LONG_UTF8_NAME,
]


def nfc(s: str) -> str:
    return unicodedata.normalize("NFC", s)


# ---------------------------------------------------------------------------------------------
# Files made by Python


def png(width: int, height: int, rng: random.Random, noise: bool = False) -> bytes:
    """A valid 8-bit RGB PNG."""
    rows = []
    for y in range(height):
        if noise:
            row = rng.randbytes(width * 3)
        else:
            row = bytes((x * 255 // max(1, width - 1), y * 255 // max(1, height - 1), 128)[c]
                        for x in range(width) for c in range(3))
        rows.append(b"\x00" + row)
    raw = b"".join(rows)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    return (b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9))
            + chunk(b"IEND", b""))


def bmp(width: int, height: int) -> bytes:
    """A valid 24-bit BMP."""
    row_size = (width * 3 + 3) & ~3
    pixels = b"".join(
        bytes(((x * 7) & 255, (y * 5) & 255, ((x + y) * 3) & 255) * 1)
        for y in range(height) for x in range(width) for _ in [0]
    )
    rows = []
    for y in range(height):
        row = pixels[y * width * 3:(y + 1) * width * 3]
        rows.append(row + b"\x00" * (row_size - len(row)))
    data = b"".join(rows)
    header = struct.pack("<2sIHHI", b"BM", 14 + 40 + len(data), 0, 0, 14 + 40)
    info = struct.pack("<IiiHHIIiiII", 40, width, height, 1, 24, 0, len(data), 2835, 2835, 0, 0)
    return header + info + data


# The classic 1x1 transparent GIF89a.
GIF_1X1 = (b"GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00!\xf9\x04\x01\x00\x00"
           b"\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;")


def jpeg_gray_8x8() -> bytes:
    """A valid baseline JFIF: one 8x8 mid-grey block, with one-symbol Huffman tables."""
    soi = b"\xff\xd8"
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    dqt = b"\xff\xdb" + struct.pack(">H", 67) + b"\x00" + b"\x01" * 64
    sof0 = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, 8, 8, 1) + b"\x01\x11\x00"
    counts = b"\x01" + b"\x00" * 15
    dht_dc = b"\xff\xc4" + struct.pack(">H", 20) + b"\x00" + counts + b"\x00"
    dht_ac = b"\xff\xc4" + struct.pack(">H", 20) + b"\x10" + counts + b"\x00"
    sos = b"\xff\xda" + struct.pack(">H", 8) + b"\x01\x01\x00\x00\x3f\x00"
    # DC category 0 ("0"), then AC end-of-block ("0"), padded with 1 bits.
    scan = b"\x3f"
    return soi + app0 + dqt + sof0 + dht_dc + dht_ac + sos + scan + b"\xff\xd9"


def pdf(text: str) -> bytes:
    """A small valid PDF with one page of text and a correct xref table."""
    stream = f"BT /F1 18 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(f"{i} 0 obj\n".encode() + body + b"\nendobj\n")
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    for off in offsets:
        out.write(f"{off:010d} 00000 n \n".encode())
    out.write(f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n"
              .encode())
    return out.getvalue()


def wav(seconds: float = 0.25) -> bytes:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        frames = bytearray()
        for i in range(int(8000 * seconds)):
            frames += struct.pack("<h", int(8000 * ((i // 20) % 2 * 2 - 1)))
        w.writeframes(bytes(frames))
    return buf.getvalue()


def text_lines(rng: random.Random, n: int, tag: str) -> bytes:
    words = ["wardrobe", "lamp-post", "lion", "witch", "snow", "faun", "turkish", "delight",
             "beaver", "cair", "paravel", "aslan", "stone", "table", "winter"]
    lines = [f"{tag} line {i:05d}: " + " ".join(rng.choice(words) for _ in range(12))
             for i in range(n)]
    return ("\n".join(lines) + "\n").encode()


# ---------------------------------------------------------------------------------------------
# Real files from the system


SYSTEM_ROOTS = ["/usr/share/doc", "/usr/share/pixmaps", "/usr/share/icons", "/usr/share/fonts",
                "/usr/share/javascript", "/usr/share/sounds", "/usr/share/backgrounds",
                "/usr/share/mime", "/usr/share/common-licenses"]


def find_system_files(exts: dict[str, int], max_size: int = 2 * MIB,
                      max_visits: int = 60000) -> dict[str, list[Path]]:
    """Up to exts[ext] regular files per extension, smallest path first, from SYSTEM_ROOTS."""
    found: dict[str, list[Path]] = {e: [] for e in exts}
    visits = 0
    for root in SYSTEM_ROOTS:
        if not os.path.isdir(root):
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in sorted(filenames):
                visits += 1
                if visits > max_visits:
                    return found
                ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
                if ext in found and len(found[ext]) < exts[ext]:
                    p = Path(dirpath) / name
                    try:
                        st = p.lstat()
                    except OSError:
                        continue
                    if p.is_file() and not p.is_symlink() and 512 <= st.st_size <= max_size:
                        found[ext].append(p)
            if all(len(found[e]) >= exts[e] for e in exts):
                return found
    return found


def elf_binary() -> Path | None:
    for p in ("/bin/ls", "/usr/bin/ls", "/bin/true", "/usr/bin/env"):
        path = Path(p)
        if path.is_file():
            with open(path, "rb") as f:
                if f.read(4) == b"\x7fELF":
                    return path
    return None


# ---------------------------------------------------------------------------------------------
# The corpus


@dataclass
class Corpus:
    """The built tree: `root` is the folder to import (named `corpus`)."""

    root: Path
    # host path relative to root -> expected vault path relative to the imported folder (NFC)
    files: dict[str, str] = field(default_factory=dict)
    # same, for folders (including empty ones)
    dirs: dict[str, str] = field(default_factory=dict)
    sha256: dict[str, str] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    # host relative path -> the kind the vault should give it (only where it is unambiguous)
    kinds: dict[str, str] = field(default_factory=dict)

    def path(self, rel: str) -> Path:
        return self.root / rel

    def content(self, rel: str) -> bytes:
        return (self.root / rel).read_bytes()


def build_corpus(base: Path, seed: int = 20261129) -> Corpus:
    rng = random.Random(seed)
    root = Path(base) / "corpus"
    root.mkdir(parents=True)
    c = Corpus(root=root)

    def put(rel: str, data: bytes, kind: str | None = None):
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        if kind:
            c.kinds[rel] = kind

    def copy(rel: str, src: Path):
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, p)

    # images
    put("images/gradient.png", png(64, 48, rng), "photo")
    put("images/noise.png", png(200, 150, rng, noise=True), "photo")
    put("images/tiles.bmp", bmp(33, 17), "photo")
    put("images/pixel.gif", GIF_1X1, "photo")
    put("images/grey.jpg", jpeg_gray_8x8(), "photo")
    put("images/drawing.svg", b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" '
        b'width="10" height="10"><rect width="10" height="10" fill="red"/></svg>\n')
    system = find_system_files({"png": 3, "jpg": 3, "jpeg": 1, "svg": 2, "gif": 2, "ico": 1,
                                "pdf": 2, "html": 2, "gz": 3, "mp3": 1, "ogg": 1, "ttf": 1})
    for ext in ("png", "jpg", "jpeg", "svg", "gif", "ico"):
        for i, src in enumerate(system[ext]):
            copy(f"images/system/{ext}-{i} {src.name}", src)

    # documents
    put("documents/report.pdf", pdf("Narnia corpus test PDF"), "document")
    put("documents/notes.txt", text_lines(rng, 400, "notes"), "document")
    put("documents/table.csv", b"id,name,size\n" + b"".join(
        f"{i},item{i},{rng.randrange(1 << 30)}\n".encode() for i in range(500)), "document")
    put("documents/data.json", json.dumps({"k%d" % i: list(range(i % 7)) for i in range(200)},
                                          indent=2).encode())
    put("documents/page.html", b"<!DOCTYPE html>\n<html><head><title>corpus</title></head>"
        b"<body><p>Behind the wardrobe.</p></body></html>\n")
    put("documents/readme.md", b"# Heading\n\nSome *markdown* text with `code`.\n")
    put("documents/unicode text.txt", "Überall Schnee — 雪 — снег — ❄\n".encode() * 50, "document")
    put("documents/crlf.txt", b"windows\r\nline endings\r\n" * 30)
    put("documents/no newline at end", b"no trailing newline")
    for ext in ("pdf", "html"):
        for i, src in enumerate(system[ext]):
            copy(f"documents/system/{ext}-{i} {src.name}", src)

    # archives
    tar_buf = io.BytesIO()
    with tarfile.open(fileobj=tar_buf, mode="w:gz") as tar:
        for i in range(5):
            data = text_lines(rng, 30, f"tar{i}")
            info = tarfile.TarInfo(f"inner/file{i}.txt")
            info.size = len(data)
            info.mtime = 1700000000
            tar.addfile(info, io.BytesIO(data))
    put("archives/bundle.tar.gz", tar_buf.getvalue())
    zip_buf = io.BytesIO()
    with zipfile.ZipFile(zip_buf, "w", zipfile.ZIP_DEFLATED) as z:
        for i in range(5):
            z.writestr(zipfile.ZipInfo(f"z/entry{i}.txt", (2024, 1, 1, 0, 0, 0)),
                       text_lines(rng, 20, f"zip{i}"))
    put("archives/bundle.zip", zip_buf.getvalue())
    put("archives/notes.txt.gz", gzip.compress(text_lines(rng, 100, "gz"), mtime=0))
    put("archives/notes.txt.bz2", bz2.compress(text_lines(rng, 100, "bz")))
    put("archives/notes.txt.xz", lzma.compress(text_lines(rng, 100, "xz")))
    for i, src in enumerate(system["gz"]):
        copy(f"archives/system/gz-{i} {src.name}", src)

    # audio
    put("audio/beep.wav", wav())
    for ext in ("mp3", "ogg"):
        for i, src in enumerate(system[ext]):
            copy(f"audio/{ext}-{i} {src.name}", src)

    # video (a hand-built MP4 container)
    put("videos/clip.mp4", mp4(), "video")

    # binaries
    elf = elf_binary()
    if elf:
        copy("binaries/ls-copy", elf)
    put("binaries/chunk minus one.bin", rng.randbytes(MIB - 1), "other")
    put("binaries/chunk exact.bin", rng.randbytes(MIB), "other")
    put("binaries/chunk plus one.bin", rng.randbytes(MIB + 1), "other")
    put("binaries/two chunks.bin", rng.randbytes(2 * MIB), "other")
    put("binaries/three chunks plus five.bin", rng.randbytes(3 * MIB + 5), "other")
    put("binaries/one byte.bin", b"\x00")
    put("binaries/two bytes.bin", b"\xff\x01")
    put("binaries/three bytes.bin", b"abc")
    put("binaries/all byte values.bin", bytes(range(256)) * 4)
    put("binaries/font.ttf", system["ttf"][0].read_bytes() if system["ttf"] else rng.randbytes(4096))

    # zero-byte files and an empty folder
    put("empty/zero.bin", b"")
    put("empty/zero.txt", b"")
    put("empty/.zero-hidden", b"")
    (root / "empty/nothing here").mkdir(parents=True)

    # hostile names
    for i, name in enumerate(HOSTILE_NAMES):
        put("hostile/" + name, f"hostile file {i}: {name}\n".encode() + rng.randbytes(64))
    # a folder with a hostile name holding a file
    put("hostile/dir with 'quote' and *star*/inner [x].txt", b"inside a hostile folder\n")

    # NFC and NFD in different folders
    put("unicode/nfc/" + NFC_NAME, b"spelled NFC\n")
    put("unicode/nfd/" + NFD_NAME, b"spelled NFD\n")
    put("unicode/\u65e5\u672c\u8a9e\u306e\u540d\u524d.txt", "日本語\n".encode())
    put("unicode/Ελληνικά.txt", "αβγ\n".encode())

    # deep nesting
    put("deep/top.txt", b"level 0\n")
    put("deep/l1/one.txt", b"level 1\n")
    put("deep/l1/l2/two.txt", b"level 2\n")
    put("deep/l1/l2/l3/three.txt", b"level 3\n")
    put("deep/l1/l2/l3/l4/four.txt", b"level 4\n")
    put("deep/l1/l2/l3/l4/leaf.png", png(8, 8, rng), "photo")

    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        if p.is_dir():
            c.dirs[rel] = nfc(rel)
        elif p.is_file():
            c.files[rel] = nfc(rel)
            data = p.read_bytes()
            c.sha256[rel] = hashlib.sha256(data).hexdigest()
            c.sizes[rel] = len(data)
    assert len(set(c.files.values())) == len(c.files), "corpus: two host files share a vault path"
    return c


def mp4(payload: int = 4000) -> bytes:
    """An ISO media (MP4) file: an `ftyp` box and an `mdat` box (libmagic: video/mp4)."""
    ftyp = struct.pack(">I", 24) + b"ftypmp42" + b"\x00\x00\x00\x00" + b"mp42isom"
    return ftyp + struct.pack(">I", 8 + payload) + b"mdat" + bytes(payload)


if __name__ == "__main__":
    import sys
    import tempfile
    base = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp())
    corp = build_corpus(base)
    total = sum(corp.sizes.values())
    print(f"{len(corp.files)} files, {len(corp.dirs)} folders, {total} bytes under {corp.root}")

