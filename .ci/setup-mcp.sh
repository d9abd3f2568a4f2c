#!/usr/bin/env bash
# Installs the real MCP servers the MCP tests run against (pinned), into a cache dir, and
# prints the directory; fast when they are there already. Usage:
#   export REIN_MCP_SERVERS="$(bash .ci/setup-mcp.sh)"
set -euo pipefail
dir="${REIN_MCP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rein-mcp}"
pins=(
  "@modelcontextprotocol/server-everything@2026.8.31"
  "@modelcontextprotocol/server-filesystem@2026.8.31"
  "@modelcontextprotocol/conformance@0.1.16"
)
stamp="$dir/.installed"
want="${pins[*]}"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -d "$dir/node_modules" ]]; then
  echo "$dir"
  exit 0
fi
command -v npm >/dev/null || { echo "setup-mcp: npm is needed for the MCP tests" >&2; exit 1; }
mkdir -p "$dir"
[[ -f "$dir/package.json" ]] || echo '{"name":"rein-mcp-test-servers","private":true}' >"$dir/package.json"
npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "${pins[@]}" >&2
echo "$want" >"$stamp"
echo "$dir"
