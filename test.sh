#!/usr/bin/env bash
# Runs the test suite on a fresh machine: fetches NVRTC and ptxas (CUDA 13.0, from PyPI) for the
# tests that compile generated CUDA offline, then runs every test of the workspace.
# GPU tests are ignored here; scripts/gpu-check.sh runs them on a GPU machine.
set -euo pipefail
cd "$(dirname "$0")"
eval "$(scripts/cuda-tools.sh)"
# Tests that need NVRTC fail instead of skipping when it is missing.
export PHOBOS_REQUIRE_NVRTC=1
# The examples as programs (tests run crates/phobos's first_use twice, as a user would).
cargo build --workspace --examples
cargo test --workspace --all-targets "$@"
# --all-targets leaves out the doctests (the phobos crate's run on the interpreter).
cargo test --workspace --doc "$@"
