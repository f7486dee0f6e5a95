#!/usr/bin/env bash
# The integration part of `make test`: the whole suite, and beside it, at the same time, the
# ordinary-user pass (`as-ordinary-user.sh`, which does anything only as root). Each spends most
# of its time waiting on the processes it drives, so together on two cores they take little more
# than the longer alone (one after the other, about 17 minutes on CI). The ordinary-user pass's
# output follows the suite's; the status is the suite's, else the pass's.
#
#   NARNIA_BIN   the narnia binary to test
set -uo pipefail
: "${NARNIA_BIN:?set NARNIA_BIN to the narnia binary}"
here="$(cd "$(dirname "$0")" && pwd)"
log="$(mktemp)"
bash "$here/as-ordinary-user.sh" > "$log" 2>&1 &
ordinary=$!
trap 'kill "$ordinary" 2>/dev/null; rm -f "$log"' EXIT
python3 -m pytest -q "$here"
suite=$?
wait "$ordinary"
pass=$?
echo "as an ordinary user:"
cat "$log"
[ "$suite" != 0 ] && exit "$suite"
exit "$pass"
