#!/usr/bin/env bash
# The tests whose outcome depends on who runs them, again as an ordinary user: the suite runs as
# root on CI and on the development machines, where permission checks pass that fail for
# everyone else (a non-root `init` once failed on Linux before 6.10, and only a review found it).
# The store's own modes say what is committed (an object 0400, a leftover 0600), and root writes
# read-only files and kills and inspects other users' processes: so the crash, sync, device,
# tamper and viewing tests run again too. Tests that need root skip themselves (FUSE without
# access to /dev/fuse, `strace -y` on a process that is not dumpable, loop mounts).
# Run by `make test` beside the whole suite (`run-all.sh`); as an ordinary user already, there is nothing to add.
#
# Arguments are passed to pytest (run-all.sh chooses tests with -m).
#
#   NARNIA_BIN          the narnia binary to test
#   NARNIA_TEST_JOBS    tests run at once (default 4)
set -euo pipefail
: "${NARNIA_BIN:?set NARNIA_BIN to the narnia binary}"
if [ "$(id -u)" != 0 ]; then
    echo "as-ordinary-user: the suite already ran as an ordinary user"
    exit 0
fi
user=narnia-test
id "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/sh "$user"
# The user may not be able to read the checkout (a clone under /root): it gets copies.
work="$(mktemp -d /tmp/narnia-ordinary-user.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cp -r "$(dirname "$0")" "$work/integration"
install -m 755 "$NARNIA_BIN" "$work/narnia"
chown -R "$user" "$work"
if ! runuser -u "$user" -- "$work/narnia" --version >/dev/null 2>&1; then
    echo "as-ordinary-user: skipped: $user cannot run $work/narnia (a noexec /tmp?)" >&2
    exit 0
fi
cd "$work/integration"
runuser -u "$user" -- env -i PATH="$PATH" HOME="$work" LANG=C.UTF-8 NARNIA_BIN="$work/narnia" \
    bash -c 'source ./pytest-runner.sh; run_pytest "$@"' run_pytest "${NARNIA_TEST_JOBS:-4}" -q -p no:cacheprovider --basetemp "$work/pytest" "$@" \
    test_commands.py test_shell_habits.py test_inbox.py test_devices.py test_bad_input.py test_auth_lock.py \
    test_crash.py test_sync_engines.py test_store_forks.py test_device_housekeeping.py test_disk_full.py \
    test_hardening.py test_tamper.py test_roundtrip.py test_viewing.py test_cover.py
