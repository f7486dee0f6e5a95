#!/usr/bin/env bash
# Regenerates the committed test-vector store (only when the format changes on purpose):
#   bash Tests/NarniaStoreTests/Vectors/make-vectors.sh .build/debug/narnia [STORE-NAME]
# `store` holds three files with known content, one object each (one import command per file);
# StoreVectorTests opens it, and tampers with copies of it, to check that every later build
# still reads this format byte for byte. `packed-store` holds a folder of three small files
# imported in one command, so they share one pack (journal operation 8); PackedVectorTests
# reads it.
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

mkdir -p "$work/src/notes"
printf 'first note\n' > "$work/src/notes/a.txt"
printf 'second note, a little longer\n' > "$work/src/notes/b.txt"
: > "$work/src/notes/c.txt"
narnia() { (cd "$work/src" && NARNIA_INSECURE_TEST_KDF=1 "$bin" --vault "$here/$1" --passphrase-file "$work/pass" "${@:2}"); }
for store in ${2:-store packed-store}; do
    rm -rf "${here:?}/$store"
    narnia "$store" init
    case "$store" in
        store) narnia store -c "import docs; import empty; import two-chunks.bin" ;;
        packed-store) narnia packed-store -c "import notes" ;;
    esac
    echo "vector store written to $here/$store"
done
