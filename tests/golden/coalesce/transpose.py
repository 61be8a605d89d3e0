"""Golden input: a tile read along rows and written along columns, so its
load and its store want different layouts (one conversion must stay)."""
import tessera
import tessera.language as tl


@tessera.jit
def transpose_kernel(src, dst, M, N, src_stride, dst_stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(src + rows[:, None] * src_stride + cols[None, :], mask=mask)
    tl.store(dst + cols[None, :] * dst_stride + rows[:, None], x, mask=mask)
