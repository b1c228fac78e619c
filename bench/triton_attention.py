"""A Triton attention forward kernel, the baseline bench/attention.py times beside Phobos and SDPA.

One program computes BLOCK_M query rows of one batch-head: it streams K and V in BLOCK_N-row
tiles, keeps the running row maximum and row sum of the online softmax in base 2 (the scale is
folded into log2(e)), and for causal attention stops at the diagonal, masking only the tiles that
cross it. A few launch configurations are autotuned per problem, as a Triton user would.
"""
import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634


def _configs():
    return [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=w, num_stages=s)
            for bm in (64, 128) for bn in (64, 128) for w in (4, 8) for s in (2, 3)
            if not (bm == 64 and w == 8)]


@triton.autotune(configs=_configs(), key=["N", "D", "CAUSAL"])
@triton.jit
def _attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, qk_scale, N, D: tl.constexpr,
                      CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start = tl.program_id(0) * BLOCK_M
    base = tl.program_id(1).to(tl.int64) * N * D
    rows = start + tl.arange(0, BLOCK_M)
    dcol = tl.arange(0, D)
    q = tl.load(q_ptr + base + rows[:, None] * D + dcol[None, :], mask=rows[:, None] < N, other=0.0)
    m = tl.full([BLOCK_M], float("-inf"), tl.float32)
    s_row = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    # Tiles wholly below the diagonal need no causal mask; the ones crossing it do.
    full_end = start if CAUSAL else N
    hi = tl.minimum(start + BLOCK_M, N) if CAUSAL else N
    for c in range(0, hi, BLOCK_N):
        cols = c + tl.arange(0, BLOCK_N)
        kt = tl.load(k_ptr + base + cols[None, :] * D + dcol[:, None], mask=cols[None, :] < N, other=0.0)
        s = tl.dot(q, kt) * qk_scale
        # Full [BLOCK_M, BLOCK_N] from the start: the causal branch below narrows it per row.
        keep = (cols[None, :] < N) & (rows[:, None] >= 0)
        if c + BLOCK_N > full_end:
            if CAUSAL:
                keep = keep & (cols[None, :] <= rows[:, None])
        s = tl.where(keep, s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m - m_new)
        s_row = s_row * alpha + tl.sum(p, 1)
        v = tl.load(v_ptr + base + cols[:, None] * D + dcol[None, :], mask=cols[:, None] < N, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m = m_new
    acc = acc / s_row[:, None]
    tl.store(o_ptr + base + rows[:, None] * D + dcol[None, :], acc.to(o_ptr.dtype.element_ty),
             mask=rows[:, None] < N)


def attention(q, k, v, o, scale, causal):
    """O = softmax(Q Kᵀ · scale) V for [BH, N, D] tensors, written into o."""
    bh, n, d = q.shape

    def grid(meta):
        return (triton.cdiv(n, meta["BLOCK_M"]), bh, 1)

    _attention_kernel[grid](q, k, v, o, scale * LOG2E, n, D=d, CAUSAL=int(causal))
    return o


if __name__ == "__main__":
    import torch.nn.functional as F
    for causal in (0, 1):
        q, k, v = (torch.randn(4, 1000, 64, device="cuda", dtype=torch.float16) for _ in range(3))
        o = torch.empty_like(q)
        attention(q, k, v, o, 0.125, causal)
        ref = F.scaled_dot_product_attention(q[None], k[None], v[None], is_causal=bool(causal), scale=0.125)[0]
        print(causal, (o.float() - ref.float()).abs().max().item())
