#!/usr/bin/env bash
# bench/NOTES.md r44, r42 and r43 on the GPU machine (carry .gpu-bundle and bench/exp/gen, written
# here by `bash bench/exp/pf_gen.sh`), the parts named, in order:
#   r44   the hand-edited softmax_row kernels (store by whole lines) against their originals
#   row   bench/rowwise.py's bf16 softmax_row
#   bf16  bench/rowwise.py's bf16 softmax and transposes (r42, r43)
#   f32t  bench/rowwise.py's f32 transposes (r43 keeps their code: the same winners expected)
#   allbf16, allf32  bench/rowwise.py's whole bf16 or f32 table (issue 16's cases of that type)
#   soft  bench/rowwise.py's softmax.ph rows in both types (NOTES r46)
#   tr    bench/rowwise.py's transposes in both types (NOTES r47)
#   trodd the same at 8191x8193 only (NOTES r48)
# each table in $OUT/<part>.txt; the rows (<part>.json) and the tuner's records of every point
# (<part>.tsv, every measurement) packed in $OUT/records.tgz (the device returns few files).
#   bash bench/exp/s50_run.sh r44 row bf16 f32t
set -uo pipefail
cd "$(dirname "$0")/../.."
bash scripts/gpu-unpack.sh || { echo "s50_run: could not unpack .gpu-bundle" >&2; exit 2; }
out=${OUT:-$(pwd -P)/target/s50}
mkdir -p "$out"
export PHOBOS_BIN_DIR
PHOBOS_BIN_DIR=$(pwd -P)/.gpu-bundle/bin
rc=0
for part in "$@"; do
  case $part in
    r44)
      SROW="start:0 startl:0 v2:0 v2l:0" XENT="" WIDTHS="50257 50176" B=$out/r44bin \
        bash bench/exp/pf_run.sh 2>&1 | tee "$out/r44.txt"
      ((PIPESTATUS[0] == 0)) || rc=1
      rm -rf "$out/r44bin"
      continue ;;
    row) args="--only softmax_row --dtype bf16" ;;
    bf16) args="--only softmax,transpose --dtype bf16" ;;
    f32t) args="--only transpose --dtype f32" ;;
    allbf16) args="--dtype bf16" ;;
    allf32) args="--dtype f32" ;;
    soft) args="--only softmax" ;;
    tr) args="--only transpose" ;;
    trodd) args="--only transpose --shape 8191" ;;
    *) echo "s50_run: unknown part $part (r44, row, bf16, f32t, allbf16, allf32, soft, tr, trodd)" >&2; rc=2; continue ;;
  esac
  mkdir -p "$out/$part"
  # shellcheck disable=SC2086
  OUT=$out/$part python3 -u bench/rowwise.py $args 2>&1 | tee "$out/$part.txt"
  ((PIPESTATUS[0] == 0)) || rc=1
  mkdir -p "$out/records"
  cp "$out/$part/rowwise.json" "$out/records/$part.json" 2>/dev/null
  # The measurements alone: the whole store can pass the device's file size limit.
  python3 - "$out/$part/rowwise.sqlite" >"$out/records/$part.tsv" <<'PY'
import sqlite3, sys
cols = "kernel_name, dims, dtypes, point, phase, status, median_ms, registers, spill_store_bytes"
print(cols.replace(", ", "\t"))
for row in sqlite3.connect(sys.argv[1]).execute(f"select {cols} from measurements"):
    print("\t".join(map(str, row)))
PY
  rm -rf "${out:?}/$part"
  tar czf "$out/records.tgz" -C "$out" records
done
rm -rf "${out:?}/records"
exit "$rc"
