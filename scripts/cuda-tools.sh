#!/usr/bin/env bash
# Fetches NVRTC and ptxas (CUDA 13.0.x) from PyPI into .tools/cuda, once, and prints the
# environment that makes them visible. Used by ./test.sh and ./run.sh; safe to run again.
#   eval "$(scripts/cuda-tools.sh)"
# With --nvdisasm, also nvdisasm (for scripts/regs.py --sass; PyPI has it from CUDA 13.2 on, and
# it reads 13.0's cubins), exported as PHOBOS_NVDISASM:
#   eval "$(scripts/cuda-tools.sh --nvdisasm)"
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
if [ "${1:-}" = "--nvdisasm" ]; then
  nvd_dest="$dest/nvdisasm"
  if [ ! -f "$nvd_dest/.complete-13.2" ]; then
    mkdir -p "$nvd_dest"
    "$(command -v python3 || command -v python)" -m pip install --quiet --disable-pip-version-check \
      --no-deps --target "$nvd_dest/site" "nvidia-cuda-nvdisasm==13.2.*" >&2
    touch "$nvd_dest/.complete-13.2"
  fi
  nvdisasm="$(find "$nvd_dest/site" -type f -name nvdisasm | head -n 1)"
  [ -n "$nvdisasm" ] || { echo "cuda-tools: nvdisasm missing under $nvd_dest" >&2; exit 1; }
  chmod +x "$nvdisasm"
  echo "export PHOBOS_NVDISASM=\"$nvdisasm\""
fi
