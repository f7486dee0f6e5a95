#!/usr/bin/env bash
# The integration part of `make test`. Most tests spend most of their time waiting on the
# processes they drive (sleeps, fsync, timeouts), so several run at once (pytest-xdist, Debian's
# python3-pytest-xdist): first the whole suite, and beside it, at the same time, the
# ordinary-user pass (`as-ordinary-user.sh`, which does anything only as root); then, alone,
# the tests marked `serial` (pytest.ini), which open a window in time another process must meet
# (a system call held for seconds, a lease during a long import), and which that load could make
# miss it. About 8 minutes on two cores, where one test at a time took about 16. The
# ordinary-user pass's output follows the suite's; the status is the first failure's.
#
#   NARNIA_BIN          the narnia binary to test
#   NARNIA_TEST_JOBS    tests run at once by each pass (default 4; 1 runs one at a time)
set -uo pipefail
: "${NARNIA_BIN:?set NARNIA_BIN to the narnia binary}"
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/pytest-runner.sh"
jobs="${NARNIA_TEST_JOBS:-4}"
log="$(mktemp)"
NARNIA_TEST_JOBS="$jobs" bash "$here/as-ordinary-user.sh" -m "not serial" > "$log" 2>&1 &
ordinary=$!
trap 'kill "$ordinary" 2>/dev/null; rm -f "$log"' EXIT
run_pytest "$jobs" -q -m "not serial" "$here"
suite=$?
wait "$ordinary"
pass=$?
echo "as an ordinary user:"
cat "$log"
echo "alone, the tests that open a window in time:"
run_pytest 1 -q -m serial "$here"
serial=$?
echo "alone, as an ordinary user:"
NARNIA_TEST_JOBS=1 bash "$here/as-ordinary-user.sh" -m serial
ordinary_serial=$?
for status in "$suite" "$pass" "$serial" "$ordinary_serial"; do
    [ "$status" != 0 ] && exit "$status"
done
exit 0
