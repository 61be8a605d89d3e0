"""A rotation applied to groups of GROUP rows a program, the last group cut short by
min(start + GROUP, n_rows) (Unsloth's RoPE over groups of heads, whose row stride is a constexpr too; tests/python/test_clamped_loop_ptx.py)."""
import tessera.language as tl
from tessera import jit


@jit
def rotate_row_groups(X, cos_ptr, sin_ptr, n_rows, ROW_STRIDE: tl.constexpr, GROUP: tl.constexpr,
                      HALF: tl.constexpr):
    cols = tl.arange(0, HALF)
    c = tl.load(cos_ptr + cols)
    s = tl.load(sin_ptr + cols)
    start = tl.program_id(0) * GROUP
    end = min(start + GROUP, n_rows)
    for r in range(start, end):
        x1 = tl.load(X + r * ROW_STRIDE + cols)
        x2 = tl.load(X + r * ROW_STRIDE + HALF + cols)
        tl.store(X + r * ROW_STRIDE + cols, x1 * c - x2 * s)
        tl.store(X + r * ROW_STRIDE + HALF + cols, x2 * c + x1 * s)
