#!/usr/bin/env bash
# The policy oracle (tests/policy_oracle.rs) traces bash with strace; install it if missing.
set -euo pipefail
if ! command -v strace >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq strace >/dev/null
fi
