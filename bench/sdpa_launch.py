"""Launch torch's SDPA a few times on one attention problem, for Nsight Compute to sample
(bench/stalls.sh's BASELINE). Environment: BH, N, D, DTYPE (f16, bf16), BACKEND (cudnn, flash),
CAUSAL (0, 1)."""
import os

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

bh, n, d = (int(os.environ.get(k, v)) for k, v in (("BH", 32), ("N", 4096), ("D", 64)))
dtype = {"f16": torch.float16, "bf16": torch.bfloat16}[os.environ.get("DTYPE", "f16")]
backend = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}[
    os.environ.get("BACKEND", "cudnn")]
q, k, v = (torch.randn(1, bh, n, d, device="cuda", dtype=dtype) for _ in range(3))
with sdpa_kernel(backend):
    for _ in range(3):
        o = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, is_causal=os.environ.get("CAUSAL", "0") == "1")
torch.cuda.synchronize()
