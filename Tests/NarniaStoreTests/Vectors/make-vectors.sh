#!/usr/bin/env bash
# Regenerates the committed test-vector store (only when the format changes on purpose):
#   bash Tests/NarniaStoreTests/Vectors/make-vectors.sh .build/debug/narnia
# The store holds three files with known content; StoreVectorTests opens it, and tampers with
# copies of it, to check that every later build still reads this format byte for byte.
set -euo pipefail
bin=$(realpath "${1:?path to narnia}")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src/docs"
printf 'hello, narnia\n' > "$work/src/docs/hello.txt"
: > "$work/src/empty"
# 1 MiB + 5 bytes of a fixed pattern: two chunks, for the swapped-chunk and missing-chunk vectors.
python3 -c "import sys; sys.stdout.buffer.write(bytes((i * 7 + 3) % 251 for i in range(1048581)))" > "$work/src/two-chunks.bin"
printf 'vector passphrase\n' > "$work/pass"
rm -rf "$here/store"
NARNIA_INSECURE_TEST_KDF=1 "$bin" --vault "$here/store" --passphrase-file "$work/pass" init
(cd "$work/src" && NARNIA_INSECURE_TEST_KDF=1 "$bin" --vault "$here/store" --passphrase-file "$work/pass" -c "import docs empty two-chunks.bin")
echo "vector store written to $here/store"
