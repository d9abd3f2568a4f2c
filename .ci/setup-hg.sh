#!/usr/bin/env bash
# Installs Mercurial (pinned, a wheel from PyPI) into a venv in a cache dir for the tests that
# run the person's own `hg` as an oracle, and prints the path of its `hg`; fast when it is
# there already. Usage:
#   export REIN_TEST_HG="$(bash .ci/setup-hg.sh)"
set -euo pipefail
pin="mercurial==7.2.4"
dir="${REIN_HG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rein-hg}"
stamp="$dir/.installed"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$pin" && -x "$dir/bin/hg" ]]; then
  echo "$dir/bin/hg"
  exit 0
fi
rm -rf "$dir"
python3 -m venv "$dir" >&2
"$dir/bin/pip" install --quiet --only-binary :all: "$pin" >&2
echo "$pin" >"$stamp"
echo "$dir/bin/hg"
