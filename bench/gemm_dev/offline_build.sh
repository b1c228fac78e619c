#!/usr/bin/env bash
# Compiles the GEMM harness on a machine without a GPU, to check every configuration (errors,
# registers, spills, SASS instruction mix) before a device run. Fetches the CUDA 13.0 compiler
# pieces from PyPI once (nvcc, NVVM, runtime/CRT/CCCL/cuBLAS headers, cuobjdump 13.2) into
# target/gemm-kit; links against stub driver symbols, so the binary is for inspection only.
#   bash bench/gemm_dev/offline_build.sh [PART ...]     # default: every part
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
kit="$root/target/gemm-kit"
if [ ! -f "$kit/.complete" ]; then
  mkdir -p "$kit/dl" "$kit/bin"
  python3 -m pip download --quiet --no-deps -d "$kit/dl" "nvidia-cuda-nvcc==13.0.88" "nvidia-nvvm==13.0.88" \
    "nvidia-cuda-runtime==13.0.96" "nvidia-cuda-crt==13.0.88" "nvidia-cuda-cccl==13.0.85" "nvidia-cublas==13.0.2.14" \
    "nvidia-cuda-cuobjdump==13.2.*" "nvidia-cuda-nvdisasm==13.2.*"
  for w in "$kit"/dl/*.whl; do unzip -q -o "$w" -d "$kit/tk"; done
  cp "$kit"/tk/nvidia/cu13/bin/cuobjdump "$kit"/tk/nvidia/cu13/bin/nvdisasm "$kit/bin/" 2>/dev/null || true
  chmod +x "$kit"/tk/nvidia/cu13/bin/* "$kit"/tk/nvidia/cu13/nvvm/bin/cicc "$kit"/bin/* 2>/dev/null || true
  (cd "$kit/tk/nvidia/cu13/lib" && ln -sf libcublas.so.13 libcublas.so && ln -sf libcublasLt.so.13 libcublasLt.so)
  mkdir -p "$kit/stub"
  printf 'int cuTensorMapEncodeTiled(){return 0;}\nint cuFuncGetName(){return 0;}\n' >"$kit/stub/s.c"
  gcc -shared -fPIC "$kit/stub/s.c" -o "$kit/stub/libcuda.so"
  touch "$kit/.complete"
fi
cu="$kit/tk/nvidia/cu13"
out="$root/target/gemm-kit/build"
mkdir -p "$out"
parts=("$@")
[ ${#parts[@]} = 0 ] && parts=(0 1 2 3 4 5 6 7 -1)
for part in "${parts[@]}"; do
  "$cu/bin/nvcc" -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -I "$root/crates/phobos-cuda/cuda" -I "$here" \
    -I "$cu/include" -Xptxas -v -DPART="$part" -c "$here/harness.cu" -o "$out/part$part.o" >"$out/ptxas$part.log" 2>&1 \
    || { echo "part $part FAILED"; grep -i error "$out/ptxas$part.log" | head; exit 1; }
  echo "part $part ok"
done
python3 "$here/table.py" ptxas <(cat "$out"/ptxas*.log)
if ls "$out"/part-1.o >/dev/null 2>&1; then
  "$cu/bin/nvcc" -gencode arch=compute_90a,code=sm_90a "$out"/part*.o -o "$out/harness" -L "$cu/lib" -L "$kit/stub" \
    -lcublas -lcublasLt -lcuda && echo "linked $out/harness"
fi
for f in "$out"/part*.o; do PATH="$kit/bin:$PATH" cuobjdump --dump-sass "$f"; done >"$out/sass.txt" 2>/dev/null
python3 "$here/table.py" sass "$out/sass.txt"
