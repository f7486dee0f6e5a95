"""Kinds at import (BRIEF §5, issue 4): libmagic on a corpus of real files of every listed type.

The files are made at test time: pictures and clips with ffmpeg, HEIC and AVIF with heif-enc
(libheif-examples), documents and containers written here by hand as minimal valid files (a PDF
with a correct cross-reference table, OOXML and OpenDocument zips, an EPUB). The Debian packages
are installed by `make test` (TEST_PACKAGES): ffmpeg, libheif-examples.
"""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import shutil
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

import corpus

# ---------------------------------------------------------------------------------------------
# The corpus


def need(program: str, package: str) -> str:
    path = shutil.which(program)
    if path is None:
        pytest.fail(f"{program} is needed to make the test corpus (Debian package: {package}; "
                    f"'make test' installs it)", pytrace=False)
    return path


def ffmpeg(*args: str) -> None:
    need("ffmpeg", "ffmpeg")
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", *args], check=True, timeout=120)


CT = "[Content_Types].xml"


def make_ooxml(path: Path, part: str, main: str, content_type: str, order_first: bool = True) -> None:
    """A minimal OOXML package. With order_first, `[Content_Types].xml` comes first, as Office
    writes it; otherwise the parts come in another order (as some other tools write them)."""
    types = (f'<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/'
             f'package/2006/content-types"><Default Extension="rels" ContentType="application/'
             f'vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" '
             f'ContentType="application/xml"/><Override PartName="/{part}" ContentType="{content_type}"/></Types>')
    rels = ('<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/'
            'package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/'
            f'officeDocument/2006/relationships/officeDocument" Target="{part}"/></Relationships>')
    entries = [(CT, types), ("_rels/.rels", rels), (part, main)]
    if not order_first:
        entries = [("docProps/app.xml", "<Properties/>"), (part, main), ("_rels/.rels", rels), (CT, types)]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries:
            z.writestr(name, data)


def make_odf(path: Path, mime: str) -> None:
    """A minimal OpenDocument package: `mimetype` first and stored, then the manifest."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(zipfile.ZipInfo("mimetype"), mime, compress_type=zipfile.ZIP_STORED)
        z.writestr("content.xml", '<?xml version="1.0"?><office:document-content xmlns:office='
                   '"urn:oasis:names:tc:opendocument:xmlns:office:1.0"/>', compress_type=zipfile.ZIP_DEFLATED)
        z.writestr("META-INF/manifest.xml", f'<?xml version="1.0"?><manifest:manifest xmlns:manifest='
                   f'"urn:oasis:names:tc:opendocument:xmlns:manifest:1.0"><manifest:file-entry '
                   f'manifest:full-path="/" manifest:media-type="{mime}"/></manifest:manifest>',
                   compress_type=zipfile.ZIP_DEFLATED)


def make_epub(path: Path) -> None:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        z.writestr("META-INF/container.xml", '<?xml version="1.0"?><container version="1.0" xmlns='
                   '"urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile full-path='
                   '"OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>')
        z.writestr("OEBPS/content.opf", '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" '
                   'version="3.0"><metadata/><manifest/><spine/></package>')
        z.writestr("OEBPS/ch1.xhtml", "<html><body><p>Chapter one.</p></body></html>")


# name -> expected kind. Everything listed in the issue: raster photos, video clips, documents,
# and audio and archives as other.
EXPECTED = {
    "photo.jpg": "photo", "photo.png": "photo", "photo.gif": "photo", "photo.webp": "photo",
    "photo.tiff": "photo", "photo.bmp": "photo", "photo.heic": "photo", "photo.avif": "photo",
    "clip.mp4": "video", "clip.webm": "video", "clip.mkv": "video", "clip.mov": "video", "clip.avi": "video",
    "paper.pdf": "document", "notes.txt": "document", "readme.md": "document", "table.csv": "document",
    "letter.rtf": "document", "drawing.svg": "document", "page.html": "document", "data.json": "document",
    "word.docx": "document", "sheet.xlsx": "document", "slides.pptx": "document",
    "reordered.docx": "document", "reordered.xlsx": "document",
    "text.odt": "document", "sheet.ods": "document", "slides.odp": "document", "book.epub": "document",
    "sound.wav": "other", "sound.mp3": "other", "sound.flac": "other", "sound.ogg": "other", "sound.m4a": "other",
    "bundle.zip": "other", "bundle.tar": "other", "bundle.tar.gz": "other", "bundle.tar.xz": "other",
    "bundle.bz2": "other", "random.bin": "other", "program.elf": "other",
}


def build_media_corpus(d: Path) -> Path:
    """Writes every file of EXPECTED into `d` (made once per session by the fixture)."""
    d.mkdir(parents=True, exist_ok=True)
    src = "testsrc=size=96x64:rate=10"
    ffmpeg("-f", "lavfi", "-i", src, "-frames:v", "1", str(d / "photo.jpg"))
    for ext in ("png", "gif", "webp", "tiff", "bmp"):
        ffmpeg("-f", "lavfi", "-i", src, "-frames:v", "1", str(d / f"photo.{ext}"))
    need("heif-enc", "libheif-examples")
    subprocess.run(["heif-enc", "-q", "50", "-o", str(d / "photo.heic"), str(d / "photo.jpg")],
                   check=True, timeout=120, capture_output=True)
    subprocess.run(["heif-enc", "-A", "-q", "50", "-o", str(d / "photo.avif"), str(d / "photo.jpg")],
                   check=True, timeout=120, capture_output=True)
    # Two-second clips with a tone, so the poster frame at 1 s exists.
    av = ["-f", "lavfi", "-i", src, "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=8000", "-t", "2"]
    ffmpeg(*av, "-pix_fmt", "yuv420p", "-c:v", "libx264", "-c:a", "aac", str(d / "clip.mp4"))
    ffmpeg(*av, "-c:v", "libvpx", "-b:v", "100k", "-c:a", "libopus", str(d / "clip.webm"))
    ffmpeg(*av, "-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac", str(d / "clip.mkv"))
    ffmpeg(*av, "-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac", str(d / "clip.mov"))
    ffmpeg(*av, "-c:v", "mpeg4", "-c:a", "mp3", str(d / "clip.avi"))
    tone = ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=22050", "-t", "1"]
    ffmpeg(*tone, str(d / "sound.wav"))
    ffmpeg(*tone, "-c:a", "libmp3lame", str(d / "sound.mp3"))
    ffmpeg(*tone, str(d / "sound.flac"))
    ffmpeg(*tone, "-c:a", "libvorbis", str(d / "sound.ogg"))
    ffmpeg(*tone, "-c:a", "aac", str(d / "sound.m4a"))

    (d / "paper.pdf").write_bytes(corpus.pdf("Quarterly report of the lamp-post"))
    (d / "notes.txt").write_text("Meet at the lamp-post at noon.\nBring the umbrella.\n")
    (d / "readme.md").write_text("# Narnia\n\nA *wardrobe* with a [door](https://example.org).\n\n- one\n- two\n")
    (d / "table.csv").write_text("name,age,city\nLucy,8,Finchley\nEdmund,10,Finchley\nSusan,12,Finchley\n")
    (d / "letter.rtf").write_text("{\\rtf1\\ansi\\deff0 {\\fonttbl {\\f0 Times;}}\\f0\\fs24 Dear Mr Tumnus.\\par}\n")
    (d / "drawing.svg").write_text('<?xml version="1.0" encoding="UTF-8"?>\n<svg xmlns="http://www.w3.org/2000/svg" '
                                   'width="10" height="10"><rect width="10" height="10" fill="red"/></svg>\n')
    (d / "page.html").write_text("<!DOCTYPE html>\n<html><head><title>t</title></head><body><p>Hi</p></body></html>\n")
    (d / "data.json").write_text(json.dumps({"lamp": "post", "years": [1, 2, 3]}) + "\n")
    w = "application/vnd.openxmlformats-officedocument."
    make_ooxml(d / "word.docx", "word/document.xml", "<w:document/>", w + "wordprocessingml.document.main+xml")
    make_ooxml(d / "sheet.xlsx", "xl/workbook.xml", "<workbook/>", w + "spreadsheetml.sheet.main+xml")
    make_ooxml(d / "slides.pptx", "ppt/presentation.xml", "<p:presentation/>", w + "presentationml.presentation.main+xml")
    make_ooxml(d / "reordered.docx", "word/document.xml", "<w:document/>", w + "wordprocessingml.document.main+xml",
               order_first=False)
    make_ooxml(d / "reordered.xlsx", "xl/workbook.xml", "<workbook/>", w + "spreadsheetml.sheet.main+xml",
               order_first=False)
    o = "application/vnd.oasis.opendocument."
    make_odf(d / "text.odt", o + "text")
    make_odf(d / "sheet.ods", o + "spreadsheet")
    make_odf(d / "slides.odp", o + "presentation")
    make_epub(d / "book.epub")

    with zipfile.ZipFile(d / "bundle.zip", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("notes.txt", "hello\n")
        z.writestr("photos/list.txt", "a b c\n")
    with tarfile.open(d / "bundle.tar", "w") as t:
        t.add(d / "notes.txt", arcname="notes.txt")
    (d / "bundle.tar.gz").write_bytes(gzip.compress((d / "bundle.tar").read_bytes()))
    (d / "bundle.tar.xz").write_bytes(lzma.compress((d / "bundle.tar").read_bytes()))
    (d / "bundle.bz2").write_bytes(bz2.compress(b"some text to compress\n" * 50))
    import random
    rng = random.Random(4)
    (d / "random.bin").write_bytes(bytes([0x00, 0x01, 0xfe, 0xff]) + bytes(rng.randrange(256) for _ in range(4096)))
    shutil.copyfile("/bin/true", d / "program.elf")
    return d


@pytest.fixture(scope="session")
def media(tmp_path_factory) -> Path:
    return build_media_corpus(tmp_path_factory.mktemp("media"))


# ---------------------------------------------------------------------------------------------
# Tests


def test_every_file_gets_its_kind(vault, media):
    missing = sorted(set(EXPECTED) - {p.name for p in media.iterdir()})
    assert not missing, f"corpus incomplete: {missing}"
    r = vault.ok("mkdir /m; cd /m; import " + " ".join(str(media / n) for n in sorted(EXPECTED)))
    r = vault.ok("ls --json /m")
    got = {}
    for line in r.out_lines:
        obj = json.loads(line)
        got[obj["name"]] = (obj["kind"], obj["mime"])
    wrong = {n: got.get(n) for n, k in EXPECTED.items() if got.get(n, (None,))[0] != k}
    assert not wrong, ("kinds differ from the expected ones (name: (kind, mime) got): "
                       + ", ".join(f"{n}: {g} expected {EXPECTED[n]}" for n, g in sorted(wrong.items())))


def test_office_and_opendocument_types_are_named(vault, media):
    names = ["word.docx", "reordered.docx", "sheet.xlsx", "reordered.xlsx", "slides.pptx", "text.odt", "book.epub"]
    vault.ok("import " + " ".join(str(media / n) for n in names))
    r = vault.ok("ls --json")
    mimes = {json.loads(l)["name"]: json.loads(l)["mime"] for l in r.out_lines}
    w = "application/vnd.openxmlformats-officedocument."
    assert mimes["word.docx"] == mimes["reordered.docx"] == w + "wordprocessingml.document", mimes
    assert mimes["sheet.xlsx"] == mimes["reordered.xlsx"] == w + "spreadsheetml.sheet", mimes
    assert mimes["slides.pptx"] == w + "presentationml.presentation", mimes
    assert mimes["text.odt"] == "application/vnd.oasis.opendocument.text", mimes
    assert mimes["book.epub"] == "application/epub+zip", mimes


def test_find_type_uses_the_kinds(vault, media):
    picked = ["photo.png", "clip.mp4", "paper.pdf", "sound.mp3", "bundle.zip"]
    vault.ok("import " + " ".join(str(media / n) for n in picked))
    for kind, name in [("photo", "photo.png"), ("video", "clip.mp4"), ("document", "paper.pdf")]:
        assert vault.ok(f"find -type {kind}").out_lines == [f"/{name}"], kind
    assert vault.ok("find -type other").out_lines == ["/bundle.zip", "/sound.mp3"]


def test_stdin_import_is_classified_too(vault, media):
    data = (media / "photo.png").read_bytes()
    r = vault("-c", "import - pasted", input=data)
    assert r.rc == 0, r.describe()
    assert "kind: photo" in vault.ok("stat pasted").out_lines
