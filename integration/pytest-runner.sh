# Sourced by run-all.sh and as-ordinary-user.sh: `run_pytest JOBS ARGS...` runs pytest with
# JOBS tests at once through pytest-xdist, with the first Python that has both (Debian's, which
# `make test-deps` gives python3-pytest-xdist, before whichever python3 comes first on PATH),
# and one at a time, saying so, where none has xdist.
run_pytest() {
    local jobs="$1"; shift
    local py
    for py in /usr/bin/python3 python3; do
        if "$py" -c 'import pytest, xdist' 2>/dev/null; then
            [ "$jobs" -gt 1 ] && set -- -n "$jobs" "$@"
            "$py" -m pytest "$@"
            return
        fi
    done
    echo "note: no Python here has pytest-xdist (python3-pytest-xdist): the tests run one at a time" >&2
    python3 -m pytest "$@"
}
