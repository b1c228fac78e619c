#!/usr/bin/env bash
# The main job: builds the tools (release) and tunes a kernel with phobos-kbench.
#   ./run.sh                      tune the seed GEMM (examples/gemm.ph)
#   ./run.sh ARGS...              run phobos-kbench with ARGS instead
# With a GPU, the seed GEMM is tuned at M=N=K=4096 on it. Without one, the whole loop runs on
# the CPU interpreter at M=N=K=256 (times are the interpreter's, and labelled so), after every
# variant has been compiled with NVRTC.
set -euo pipefail
cd "$(dirname "$0")"
eval "$(scripts/cuda-tools.sh)"
cargo build --release --quiet -p phobos-cli
kbench=target/release/phobos-kbench
if [ "$#" -gt 0 ]; then
  exec "$kbench" "$@"
fi
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  exec "$kbench" examples/gemm.ph --dims M=4096,N=4096,K=4096 --report
fi
echo "run.sh: no GPU here; compiling every variant offline, then tuning on the CPU interpreter" >&2
"$kbench" examples/gemm.ph --dims M=256,N=256,K=256 --dry-run
exec "$kbench" examples/gemm.ph --dims M=256,N=256,K=256 --backend interp --report
