"""Masked 2-D copy of a strided matrix, tile by tile (exercises 2-D blocks,
broadcasting of row and column offsets, and masks on both edges)."""
import tessera
import tessera.language as tl


@tessera.jit
def copy2d_kernel(src_ptr, dst_ptr, n_rows, n_cols, src_stride, dst_stride,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    tile = tl.load(src_ptr + rows[:, None] * src_stride + cols[None, :], mask=mask, other=0.0)
    tl.store(dst_ptr + rows[:, None] * dst_stride + cols[None, :], tile, mask=mask)
