#!/usr/bin/env bash
# bench/NOTES.md r44, r42 and r43 in one GPU call (carry .gpu-bundle and bench/exp/gen, written
# here by `bash bench/exp/pf_gen.sh`): r44's hand-edited softmax_row kernels against their
# originals ($OUT/r44.txt), then bench/rowwise.py's bf16 softmax and transposes, then its f32
# transposes (r43 keeps their code: the same winners expected), each run in its own folder under
# $OUT with its table in $OUT/<name>.txt.
#   bash bench/exp/s50_run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
bash scripts/gpu-unpack.sh || { echo "s50_run: could not unpack .gpu-bundle" >&2; exit 2; }
out=${OUT:-$(pwd -P)/target/s50}
mkdir -p "$out"
export PHOBOS_BIN_DIR
PHOBOS_BIN_DIR=$(pwd -P)/.gpu-bundle/bin
rc=0
SROW="start:0 startl:0 v2:0 v2l:0" XENT="" WIDTHS="50257 50176" B=$out/r44bin bash bench/exp/pf_run.sh 2>&1 |
  tee "$out/r44.txt"
rm -rf "$out/r44bin"
for run in "bf16:--only softmax,transpose --dtype bf16" "f32_transpose:--only transpose --dtype f32"; do
  name=${run%%:*}
  mkdir -p "$out/$name"
  # shellcheck disable=SC2086
  OUT=$out/$name python3 -u bench/rowwise.py ${run#*:} 2>&1 | tee "$out/$name.txt"
  ((PIPESTATUS[0] == 0)) || rc=1
  cp "$out/$name/rowwise.json" "$out/$name.json" 2>/dev/null
  rm -rf "${out:?}/$name"
done
exit "$rc"
