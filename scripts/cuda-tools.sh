#!/usr/bin/env bash
# Fetches NVRTC and ptxas (CUDA 13.0.x) from PyPI into .tools/cuda, once, and prints the
# environment that makes them visible. Used by ./test.sh and ./run.sh; safe to run again.
#   eval "$(scripts/cuda-tools.sh)"
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$root/.tools/cuda"
stamp="$dest/.complete-13.0"
if [ ! -f "$stamp" ]; then
  mkdir -p "$dest"
  py="$(command -v python3 || command -v python)"
  "$py" -m pip install --quiet --disable-pip-version-check --no-deps --target "$dest/site" \
    "nvidia-cuda-nvrtc==13.0.*" "nvidia-cuda-nvcc==13.0.*" >&2
  touch "$stamp"
fi
# The wheels lay out nvidia/cu13/{lib,bin}; find them rather than hard-coding the layout.
lib="$(dirname "$(find "$dest/site" -name 'libnvrtc.so.13*' | head -n 1)")"
ptxas="$(find "$dest/site" -type f -name ptxas | head -n 1)"
[ -n "$lib" ] && [ -n "$ptxas" ] || { echo "cuda-tools: NVRTC or ptxas missing under $dest" >&2; exit 1; }
chmod +x "$ptxas"
echo "export LD_LIBRARY_PATH=\"$lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}\""
echo "export PHOBOS_PTXAS=\"$ptxas\""
echo "export PATH=\"$(dirname "$ptxas"):\$PATH\""
