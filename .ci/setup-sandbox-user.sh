#!/usr/bin/env bash
# The sandbox tests as an unprivileged user: CI runs as root, where rein takes a plain mount
# namespace; real users get the user-namespace path, and only this run exercises it.
#
#   .ci/setup-sandbox-user.sh          create the user and stage the test binaries
#   .ci/setup-sandbox-user.sh --run    ... and run them as that user
#
# Idempotent; fast when already built (it reuses the binaries of `cargo test`).
set -euo pipefail
cd "$(dirname "$0")/.."
user=rein-sandbox-ci
stage=/tmp/rein-sandbox-ci
tests=(sandbox sandbox_escape sandbox_fallback)

if [ "$(id -u)" -ne 0 ]; then
    echo "setup-sandbox-user: must run as root (it creates a user)" >&2
    exit 1
fi
id -u "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"

# The build directory may not be reachable by another user (e.g. under /root): stage copies
# of the test binaries and of rein, which the tests find through REIN_TEST_BIN.
args=()
for t in "${tests[@]}"; do args+=(--test "$t"); done
json=$(cargo test --locked --no-run "${args[@]}" --message-format=json 2>/dev/null)
rm -rf "$stage"
install -d -m 0755 "$stage"
for t in "${tests[@]}"; do
    exe=$(printf '%s\n' "$json" | grep -o "\"executable\":\"[^\"]*/deps/$t-[^\"]*\"" | tail -1 | cut -d'"' -f4)
    [ -n "$exe" ] || { echo "setup-sandbox-user: no test binary for $t" >&2; exit 1; }
    install -m 0755 "$exe" "$stage/$t"
done
rein=$(printf '%s\n' "$json" | grep -o '"executable":"[^"]*/rein"' | tail -1 | cut -d'"' -f4)
[ -n "$rein" ] || rein="${CARGO_TARGET_DIR:-target}/debug/rein"
install -m 0755 "$rein" "$stage/rein"

if [ "${1:-}" = "--run" ]; then
    for t in "${tests[@]}"; do
        echo "== $t as $user"
        runuser -u "$user" -- env -i PATH="/usr/local/bin:/usr/bin:/bin" HOME="/home/$user" \
            TMPDIR=/tmp REIN_TEST_BIN="$stage/rein" REIN_SANDBOX_TESTS_REQUIRED=1 \
            bash -c "cd '$stage' && ./$t --test-threads=2"
    done
fi
