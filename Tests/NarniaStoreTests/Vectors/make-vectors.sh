#!/usr/bin/env bash
# Regenerates the committed format-2 vector store (only when the format changes on purpose):
#   bash Tests/NarniaStoreTests/Vectors/make-vectors.sh .build/debug/narnia
# `two-devices` is one store changed on two devices (two copies at different paths) and merged
# as a sync engine would: device A imports docs/hello.txt, an empty file and two-chunks.bin
# (two chunks, for the chunk vectors) and makes shared/x; device B imports notes/ (three small
# files that share one pack) and makes shared/x too; B's files are then copied into A's folder.
# TwoDeviceVectorTests reads it, and tampered copies of it.
#
# `store` and `packed-store` are format-1 stores written by the build before format 2
# (commit 02f3faa's make-vectors.sh); this script cannot make them any more. Every build must
# upgrade and read them (StoreVectorTests, PackedVectorTests).
set -euo pipefail
bin=$(realpath "${1:?path to narnia}")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src/docs" "$work/src/notes"
printf 'hello, narnia\n' > "$work/src/docs/hello.txt"
: > "$work/src/empty"
# 1 MiB + 5 bytes of a fixed pattern: two chunks, for the swapped-chunk and missing-chunk vectors.
python3 -c "import sys; sys.stdout.buffer.write(bytes((i * 7 + 3) % 251 for i in range(1048581)))" > "$work/src/two-chunks.bin"
printf 'first note\n' > "$work/src/notes/a.txt"
printf 'second note, a little longer\n' > "$work/src/notes/b.txt"
: > "$work/src/notes/c.txt"
printf 'vector passphrase\n' > "$work/pass"
narnia() { (cd "$work/src" && NARNIA_INSECURE_TEST_KDF=1 "$bin" --vault "$1" --passphrase-file "$work/pass" "${@:2}"); }
narnia "$work/a" init
cp -a "$work/a" "$work/b"
narnia "$work/a" -c "import docs; import empty; import two-chunks.bin; mkdir -p shared/x; devices name device-a"
narnia "$work/b" -c "import notes; mkdir -p shared/x; devices name device-b"
cp -rn "$work/b/." "$work/a/"
rm -rf "${here:?}/two-devices"
cp -a "$work/a" "$here/two-devices"
echo "vector store written to $here/two-devices"
