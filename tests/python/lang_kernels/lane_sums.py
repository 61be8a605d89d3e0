"""Loop-carried sums for compiler/passes/DeferLaneReductions.h: the row sums of an online
softmax over [128, BLOCK] blocks of a [128, N] matrix (out: the sums, then the maxima).
VARIANT "online" keeps per-lane partial sums through its loop; the others must not
(tests/python/test_defer_lane_reductions.py): "read_in_loop" stores the running sum each
step, "from_one" starts from 1 and "plus_one" adds 1 each step (each lane of a row would add
it), "squared" adds the block's sum squared (not linear). tests/gpu/test_lang_ops.py runs
them all."""
import tessera
import tessera.language as tl


@tessera.jit
def row_sums(x_ptr, out_ptr, N, BLOCK: tl.constexpr, VARIANT: tl.constexpr = "online"):
    rows = tl.arange(0, 128)
    cols = tl.arange(0, BLOCK)
    m = tl.full([128], -float("inf"), tl.float32)
    if VARIANT == "from_one":
        l = tl.full([128], 1.0, tl.float32)
    else:
        l = tl.zeros([128], tl.float32)
    for start in range(0, N, BLOCK):
        x = tl.load(x_ptr + rows[:, None] * N + start + cols[None, :])
        m_new = tl.maximum(m, tl.max(x, axis=1))
        s = tl.sum(tl.exp2(x - m_new[:, None]), axis=1)
        if VARIANT == "squared":
            s = s * s
        l = l * tl.exp2(m - m_new) + s
        if VARIANT == "plus_one":
            l = l + 1.0
        m = m_new
        if VARIANT == "read_in_loop":
            tl.store(out_ptr + rows, l)
    tl.store(out_ptr + rows, l)
    tl.store(out_ptr + 128 + rows, m)
