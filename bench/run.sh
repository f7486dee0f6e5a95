#!/usr/bin/env bash
# make bench: Narnia's speed and memory targets (issue 6), measured side by side with cp, sync,
# tar and age in the same run, as medians of interleaved rounds. Prints a table.
#
#   NARNIA_BIN        the narnia binary (release build)
#   NARNIA_BENCH_BIN  the narnia-bench binary (same build): times the library in process
#   BENCH_ROUNDS      interleaved rounds per comparison (default 3, at least 3 for the table)
#   BENCH_TMP         where to work (default: a fresh directory under /tmp); removed at the end.
#                     The camera roll needs about 45 GB free there (its outputs stay to the end).
#   BENCH_ONLY        a comma-separated subset of big,small,library,scale,batch,devices,sync,door,inbox
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
: "${NARNIA_BIN:?set NARNIA_BIN to the narnia release binary}"
: "${NARNIA_BENCH_BIN:?set NARNIA_BENCH_BIN to the narnia-bench release binary}"

# Tools we compare with, installed if missing (Debian packages).
need=""
command -v age >/dev/null 2>&1 || need="$need age"
command -v file >/dev/null 2>&1 || need="$need file"
command -v rclone >/dev/null 2>&1 || need="$need rclone"
command -v ffmpeg >/dev/null 2>&1 || need="$need ffmpeg"
[ -x /usr/bin/time ] || need="$need time"
command -v python3 >/dev/null 2>&1 || need="$need python3"
if [ -n "$need" ]; then
    echo "bench: installing Debian packages:$need" >&2
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $need >/dev/null
fi

work="$(mktemp -d "${BENCH_TMP:-/tmp}/narnia-bench.XXXXXX")"
cleanup() { rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

python3 "$here/bench.py" --work "$work" --narnia "$NARNIA_BIN" --bench "$NARNIA_BENCH_BIN" \
    --rounds "${BENCH_ROUNDS:-3}" ${BENCH_ONLY:+--only "$BENCH_ONLY"}
