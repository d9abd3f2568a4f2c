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
# The suites to run, modules of the one integration-test binary `it`.
suites=(sandbox sandbox_escape sandbox_fallback sandbox_forked sandbox_zygote net_proxy)

if [ "$(id -u)" -ne 0 ]; then
    echo "setup-sandbox-user: must run as root (it creates a user)" >&2
    exit 1
fi
id -u "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"

# The build directory may not be reachable by another user (e.g. under /root): stage copies
# of the test binaries and of rein, which the tests find through REIN_TEST_BIN.
json=$(cargo test --locked --no-run --test it --message-format=json 2>/dev/null)
rm -rf "$stage"
install -d -m 0755 "$stage"
exe=$(printf '%s\n' "$json" | grep -o '"executable":"[^"]*/deps/it-[^"]*"' | tail -1 | cut -d'"' -f4)
[ -n "$exe" ] || { echo "setup-sandbox-user: no test binary it" >&2; exit 1; }
install -m 0755 "$exe" "$stage/it"
rein=$(printf '%s\n' "$json" | grep -o '"executable":"[^"]*/rein"' | tail -1 | cut -d'"' -f4)
[ -n "$rein" ] || rein="${CARGO_TARGET_DIR:-target}/debug/rein"
install -m 0755 "$rein" "$stage/rein"

if [ "${1:-}" = "--run" ]; then
    filters=()
    for t in "${suites[@]}"; do filters+=("$t::"); done
    echo "== ${suites[*]} as $user"
    # The tests' worlds: outside /tmp, which sandboxed commands see empty but for their own.
    worlds="/home/$user/rtw"
    rm -rf "$worlds"
    install -d -o "$user" -m 0700 "$worlds"
    runuser -u "$user" -- env -i PATH="/usr/local/bin:/usr/bin:/bin" HOME="/home/$user" \
        TMPDIR=/tmp REIN_TEST_TMPDIR="$worlds" REIN_TEST_BIN="$stage/rein" REIN_SANDBOX_TESTS_REQUIRED=1 \
        bash -c "cd '$stage' && ./it --test-threads=2 ${filters[*]}"
fi
