#!/usr/bin/env bash
# bench/NOTES.md r36: the hand-edited kernels bench/exp/pf_run.sh times, written into
# bench/exp/gen/ (ignored by git; carry it to the GPU machine) from `phobos emit` and the edits
# below. PHOBOS: the phobos binary (target/release/phobos by default).
set -euo pipefail
cd "$(dirname "$0")/../.."
P=${PHOBOS:-target/release/phobos}
G=bench/exp/gen
mkdir -p "$G"
hook='s|#include "gemm/ptx.cuh"|#include "gemm/ptx.cuh"\n#include "pf_hook.cuh"|'
srow() { # name N BLOCK THREADS: softmax_row bf16's staged one-pass point, with the hook header
  "$P" emit examples/softmax_row.ph --types T=bf16 --dims "M=2048,N=$2" \
    --autotune "BLOCK=$3 THREADS=$4 PACK=4 ROW_SMEM=2 ROWS_AHEAD=0 ROW_SPLIT=1 ONE_PASS=1" | sed "$hook" > "$G/srow_$1.cu"
}
no_exp='s|ph::exp2_approx(x_2_landed.v\[ph_i\] \* 1.442695f - m_2) \* (1.0f / l_2)|x_2_landed.v[ph_i]|'
no_pass='s|ph::row_max_sumexp2(x_2, |pf_wait_all(x_2, |'
srow start 50257 57344 1024
# r36: the L2 prefetch of row r + PF_D after the row's copies are issued, or before the store.
sed -i '/x_2 = ph::load_row_smem_fill/a\    pf_row(X, r, N, M);' "$G/srow_start.cu"
sed '/x_2 = ph::load_row_smem_fill/{n;d}' "$G/srow_start.cu" | sed '/const auto x_2_landed = /i\    pf_row(X, r, N, M);' > "$G/srow_store.cu"
# r36b: the store's arithmetic gone (v1), the one pass too (v2: a staged copy), the one pass alone (v3).
sed "$no_exp" "$G/srow_start.cu" > "$G/srow_v1.cu"
sed "$no_exp; $no_pass" "$G/srow_start.cu" > "$G/srow_v2.cu"
sed "$no_pass" "$G/srow_start.cu" > "$G/srow_v3.cu"
# through SRC DST STORE: the direct store's groups written over the staged buffer in place
# (pf_put_direct), then the buffer stored by pf_hook.cuh's STORE after the group loop.
through() {
  python3 - "$1" "$2" "$3" <<'PY'
import sys
s = open(sys.argv[1]).read()
a = "ph::smem_row_store_direct<ph::bf16>(x_2_landed, ph_j, ph_g, ph_out);\n      }\n"
assert s.count(a) == 1
s = s.replace(a, "pf_put_direct<ph::bf16>(x_2_landed, ph_j, ph_g, ph_out);\n      }\n      " + sys.argv[3] + "(x_2_landed, ph_out);\n")
open(sys.argv[2], "w").write(s)
PY
}
for f in start v2; do
  # r36c: by bulk stores (startb, v2b).
  through "$G/srow_$f.cu" "$G/srow_${f}b.cu" pf_bulk_store
  # r44: by warps on whole 128-byte lines (startl, v2l).
  through "$G/srow_$f.cu" "$G/srow_${f}l.cu" pf_line_store
done
# r36d: a third and a sixth of the row a block, as if split (rows of 25129, 16753, 12565), and the
# half row's kernel launched in clusters of two that never speak (b28c).
srow b28 25129 28672 512
srow b18 16753 18432 256
srow b14 12565 14336 256
for f in b28 b18 b14; do sed "$no_exp; $no_pass" "$G/srow_$f.cu" > "$G/srow_${f}v2.cu"; done
sed 's/extern "C" __global__ void __launch_bounds__/extern "C" __global__ void __cluster_dims__(2,1,1) __launch_bounds__/' "$G/srow_b28.cu" > "$G/srow_b28c.cu"
cat > "$G/rows_r36d.sh" <<'ROWS'
ROWS=([b28]="4096 25129" [b28v2]="4096 25129" [b18]="6144 16753" [b18v2]="6144 16753" [b14]="8192 12565" [b14v2]="8192 12565" [b28c]="4096 25129")
ROWS
# The cross-entropy's winner with the hook after its row's copies.
"$P" emit examples/cross_entropy.ph --types T=bf16 --dims M=4096,V=50257 \
  --autotune "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=2 ROWS_AHEAD=0 ROW_SPLIT=1 ONE_PASS=1" |
  sed "$hook" | sed '/ x = ph::load_row_smem_fill/a\    pf_row(X, r, V, M);' > "$G/xent_start.cu"

# r37: the odd transpose's winner (emitted for 8191x8193: element accesses) and the aligned
# shapes' own kernels; r37b, the winner with an L2 prefetch of a tile's lines (tr_hook.cuh);
# r37c, its store by line windows (tr_ls, tr_ls2) and a whole transpose by them (tr_ll, tr_ll2,
# tr_lines.cuh). tr_run.sh runs them (RUNS from bench/exp/tr_runs_r37*.txt).
tr() { # name dims pins
  "$P" emit examples/transpose.ph --dims "$2" --autotune "$3" > "$G/$1.cu"
}
tr tr_odd M=8191,N=8193 "TILE_R=128 TILE_C=64 TILES=1 THREADS=1024 AHEAD=1 VEC_COPY=0"
tr tr_al M=8192,N=8192 "TILE_R=128 TILE_C=64 TILES=1 THREADS=1024 AHEAD=1 VEC_COPY=0"
tr tr_al64 M=8192,N=8192 "TILE_R=64 TILE_C=64 TILES=1 THREADS=512 AHEAD=1 VEC_COPY=0"
tr tr_oddv M=8191,N=8193 "TILE_R=128 TILE_C=64 TILES=1 THREADS=1024 AHEAD=1 VEC_COPY=1"
sed 's|#include "phobos_reduce.cuh"|#include "phobos_reduce.cuh"\n#include "tr_hook.cuh"|' "$G/tr_odd.cu" |
  sed '/const int c = ph::mul((int)blockIdx.y, 64);/a\  tr_pf(X, M, N);' > "$G/tr_pf.cu"
python3 - "$G" <<'PY'
import sys
G = sys.argv[1] + "/"
s = open(G + "tr_odd.cu").read().replace('#include "phobos_reduce.cuh"', '#include "phobos_reduce.cuh"\n#include "tr_lines.cuh"')
a = """    ph::Tile<float, Blk64x128> ph_t1 = ph::transpose<Blk64x128>(t, ph_scratch);
    ph::store_tile(ph::Region<float>{Y, c, r, N, M, M, 1, true}, ph_t1);"""
assert a in s
for f in ("", "2"):
    b = "    tr_store_lines%s<64, 128>(ph::Region<float>{Y, c, r, N, M, M, 1, true}, t, ph_scratch);" % f
    open(G + "tr_ls%s.cu" % f, "w").write(s.replace(a, b))
k = """// launch: 1024 threads, 33280 bytes of dynamic shared memory (bench/exp/tr_lines.cuh, 128x64 tiles)
#include "phobos_prelude.cuh"
#include "phobos_memory.cuh"
#include "tr_lines.cuh"
extern "C" __global__ void __launch_bounds__(1024, 2) transpose(const float* __restrict__ X, float* __restrict__ Y, int M, int N) {
  extern __shared__ __align__(128) float ph_buf[];
  tr_lines<128, 64, 1024>(X, Y, M, N, ph_buf);
}
"""
open(G + "tr_ll.cu", "w").write(k)
open(G + "tr_ll2.cu", "w").write(k.replace("tr_lines<", "tr_lines2<"))
k64 = k.replace("1024 threads, 33280", "512 threads, 16640").replace("128x64", "64x64")
k64 = k64.replace("__launch_bounds__(1024, 2)", "__launch_bounds__(512, 4)").replace("tr_lines<128, 64, 1024>", "tr_lines<64, 64, 512>")
open(G + "tr_ll64.cu", "w").write(k64)
PY

# r38: a partly staged row (ph::load_row_smem_fill's ST < G): the thread's first ST groups staged
# by slabs, the rest read from global memory (HOLD=1: once, into registers, as the copies are
# issued; 0: by each pass, the store's from L2), so three or more blocks share a multiprocessor.
# part_<name>: softmax_row at THREADS=T, BLOCK, ST, HOLD and the blocks a multiprocessor asked
# of the compiler (__launch_bounds__), its buffer cut to the staged chunks.
part() { # name BLOCK THREADS ST HOLD BLOCKS_PER_SM [xent]
  if [[ ${7-} == xent ]]; then
    "$P" emit examples/cross_entropy.ph --types T=bf16 --dims M=4096,V=50257 \
      --autotune "BLOCK=$2 THREADS=$3 WHOLE=1 PACK=4 ROW_SMEM=2 ROWS_AHEAD=0 ROW_SPLIT=1 ONE_PASS=1" > "$G/xent_$1.cu"
    set -- "$G/xent_$1.cu" "${@:2}"
  else
    "$P" emit examples/softmax_row.ph --types T=bf16 --dims M=2048,N=50257 \
      --autotune "BLOCK=$2 THREADS=$3 PACK=4 ROW_SMEM=2 ROWS_AHEAD=0 ROW_SPLIT=1 ONE_PASS=1" > "$G/srow_$1.cu"
    set -- "$G/srow_$1.cu" "${@:2}"
  fi
  python3 - "$@" <<'PY'
import re, sys
out, block, threads, st, hold, mb = sys.argv[1], *map(int, sys.argv[2:7])
s = open(out).read()
g = block // 8 // threads
def one(pat, rep, n=1):
    global s
    s, k = re.subn(pat, rep, s)
    assert k == n, pat
m = re.search(r"ph::Scratch<(\d+)> ph_scratch\{ph_smem \+ (\d+)\}", s)
scratch, at = int(m.group(1)), int(m.group(2))
head = at - (g * threads + 1) * 16  # the slabs' barriers
new_at = head + st * threads * 16
total = new_at + scratch
one(r"ph_smem \+ %d\}" % at, "ph_smem + %d}" % new_at)
one(r"(// launch: \d+ threads, )\d+( bytes)", r"\g<1>%d\g<2>" % total)
one(r"(unsigned char ph_smem\[\];  // )\d+", r"\g<1>%d" % total)
one(r"__launch_bounds__\((\d+), \d+\)", r"__launch_bounds__(\1, %d)" % mb)
one(r"(ph::SmemRow<ph::bf16, Blk\w+, true)>", r"\1, %d, %s>" % (st, "true" if hold else "false"))
one(r"(load_row_smem_fill<Blk\w+, ph::EVICT_NORMAL, true, true)>", r"\1, %d, %s>" % (st, "true" if hold else "false"))
one(r"(ph::smem_row_put<ph::bf16>\(x_2_landed, ph_j, ph_g)\)", r"\1, ph_out)", "xent_" not in out)
open(out, "w").write(s)
PY
}
part p9 57344 512 9 0 3    # 14 groups, 9 staged: 73.9 KB, three blocks
part p9h 57344 512 9 1 3   # the 5 streamed held in 20 registers
part p9b 53248 512 9 0 3   # 13 groups (the fewest at 512 threads), 4 streamed
part p9bh 53248 512 9 1 3
part x9b 53248 512 9 0 3 xent  # the cross-entropy's (no store pass)
part x9bh 53248 512 9 1 3 xent
"$P" emit examples/softmax_row.ph --types T=bf16 --dims M=2048,N=50257 \
  --autotune "BLOCK=57344 THREADS=512 PACK=4 ROW_SMEM=2 ROWS_AHEAD=0 ROW_SPLIT=1 ONE_PASS=1" > "$G/srow_t512.cu"

# r39: the odd transpose's winner with eviction hints (examples/transpose.ph's accesses given
# `cache = ...`): X's tiles read once, `evict_first` (tr_ef); Y's row segments, whose end sectors
# a neighbouring block completes, `evict_last` (tr_el); both (tr_efl).
trh() { # name x_hint y_hint
  sed -E "s/(X\[[^]]*TILE_C)\]/\1, cache = $2]/; s/(Y\[c :\+ TILE_C, r :\+ TILE_R)\]/\1, cache = $3]/" \
    examples/transpose.ph > "$G/$1.ph"
  "$P" emit "$G/$1.ph" --dims M=8191,N=8193 \
    --autotune "TILE_R=128 TILE_C=64 TILES=1 THREADS=1024 AHEAD=1 VEC_COPY=0" > "$G/$1.cu"
}
trh tr_ef evict_first evict_normal
trh tr_el evict_normal evict_last
trh tr_efl evict_first evict_last
# r51: the bf16 odd transpose's winner, against bench/exp/tr16_pairs.cu (bench/exp/tr16_run.sh).
"$P" emit examples/transpose.ph --types T=bf16 --dims M=8191,N=8193 \
  --autotune "TILE_R=256 TILE_C=64 TILES=1 THREADS=1024 AHEAD=1 VEC_COPY=0 STORE_LINES=1" > "$G/tr16_gen.cu"
