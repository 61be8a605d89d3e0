"""Golden input: a loop-carried accumulator fed by a reduction, whose layout
(a slice of the 2-D load's) differs from the rank's default; it is carried
in the slice layout so the conversion happens once, after the loop."""
import tessera
import tessera.language as tl


@tessera.jit
def column_sum_kernel(src, dst, M, N, stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, M, BLOCK_M):
        rows = start + tl.arange(0, BLOCK_M)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        x = tl.load(src + rows[:, None] * stride + cols[None, :], mask=mask, other=0.0)
        acc += tl.sum(x.to(tl.float32), axis=0)
    tl.store(dst + cols, acc, mask=cols < N)
