"""A K-loop GEMM on one small block (tests/python/test_mma_repeated_warps.py): blocks with fewer
16 x 8 tensor-core tiles than warps (GPTQ's 16 x 16 small-M GEMM on 4 warps)."""
import tessera.language as tl
from tessera import jit


@jit
def small_gemm(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rows = tl.arange(0, BM)
    cols = tl.arange(0, BN)
    ks = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + rows[:, None] * K + (k0 + ks)[None, :])
        b = tl.load(b_ptr + (k0 + ks)[:, None] * BN + cols[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rows[:, None] * BN + cols[None, :], acc)
