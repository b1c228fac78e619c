# The copy's time against its size, timed as bench/rowwise.py times it (do_bench, L2 flushed):
# its slope and intercept, to set beside the row kernels' (bench/NOTES.md r33).
import torch, triton.testing as tt
rows = [1, 132, 264, 528, 1056, 2048, 4096]
row_bytes = 50257 * 2
for r in rows:
    n = r * row_bytes  # bytes moved: n / 2 read, n / 2 written (rowwise.py's copy of a row op's bytes)
    src = torch.empty(n // 2, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    t = tt.do_bench(lambda: dst.copy_(src), warmup=25, rep=200)
    # the same read bytes as a cross-entropy of r rows: copy r rows (n read, n written)
    src2 = torch.empty(n, dtype=torch.uint8, device="cuda")
    dst2 = torch.empty_like(src2)
    t2 = tt.do_bench(lambda: dst2.copy_(src2), warmup=25, rep=200)
    print(f"rows {r:5d}  copy of {n/1e6:8.2f} MB moved: {t*1000:7.2f} us   copy of {2*n/1e6:8.2f} MB moved: {t2*1000:7.2f} us")
