"""A kernel for tests/python/test_aot_cpp.py whose block needs more than the default 48 KB of
dynamic shared memory (the transpose goes through shared memory: 128 x 128 fp32, rows padded by 4 words: 66 KB), so a
C++ bundle must opt in before launching it."""
import tessera
import tessera.language as tl


@tessera.jit
def transpose_kernel(src, dst, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.arange(0, BM)
    cols = tl.arange(0, BN)
    block = tl.load(src + rows[:, None] * BN + cols[None, :])
    tl.store(dst + cols[:, None] * BM + rows[None, :], tl.trans(block))
