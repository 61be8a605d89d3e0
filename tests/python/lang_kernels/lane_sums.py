"""Loop-carried sums for compiler/passes/DeferLaneReductions.h, each the row sum of an online
softmax over [128, BLOCK] blocks of a [128, N] matrix (out: the sums, then the maxima):
online_sum keeps per-lane partial sums through its loop, the others must not
(tests/python/test_defer_lane_reductions.py); tests/gpu/test_lang_ops.py runs them all."""
import tessera
import tessera.language as tl


@tessera.jit
def _block(x_ptr, rows, cols, start, N):
    return tl.load(x_ptr + rows[:, None] * N + start + cols[None, :])


@tessera.jit
def online_sum(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    rows = tl.arange(0, 128)
    cols = tl.arange(0, BLOCK)
    m = tl.full([128], -float("inf"), tl.float32)
    l = tl.zeros([128], tl.float32)
    for start in range(0, N, BLOCK):
        x = _block(x_ptr, rows, cols, start, N)
        m_new = tl.maximum(m, tl.max(x, axis=1))
        l = l * tl.exp2(m - m_new) + tl.sum(tl.exp2(x - m_new[:, None]), axis=1)
        m = m_new
    tl.store(out_ptr + rows, l)
    tl.store(out_ptr + 128 + rows, m)


@tessera.jit
def sum_read_in_loop(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    """l is read by something else in the loop: the running sum is stored each step."""
    rows = tl.arange(0, 128)
    cols = tl.arange(0, BLOCK)
    m = tl.full([128], -float("inf"), tl.float32)
    l = tl.zeros([128], tl.float32)
    for start in range(0, N, BLOCK):
        x = _block(x_ptr, rows, cols, start, N)
        m_new = tl.maximum(m, tl.max(x, axis=1))
        l = l * tl.exp2(m - m_new) + tl.sum(tl.exp2(x - m_new[:, None]), axis=1)
        m = m_new
        tl.store(out_ptr + rows, l)
    tl.store(out_ptr + 128 + rows, m)


@tessera.jit
def sum_from_one(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    """Starts from 1: each lane of a row would add it."""
    rows = tl.arange(0, 128)
    cols = tl.arange(0, BLOCK)
    m = tl.full([128], -float("inf"), tl.float32)
    l = tl.full([128], 1.0, tl.float32)
    for start in range(0, N, BLOCK):
        x = _block(x_ptr, rows, cols, start, N)
        m_new = tl.maximum(m, tl.max(x, axis=1))
        l = l * tl.exp2(m - m_new) + tl.sum(tl.exp2(x - m_new[:, None]), axis=1)
        m = m_new
    tl.store(out_ptr + rows, l)
    tl.store(out_ptr + 128 + rows, m)


@tessera.jit
def sum_plus_one(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    """Adds a whole value each step: each lane of a row would add it."""
    rows = tl.arange(0, 128)
    cols = tl.arange(0, BLOCK)
    m = tl.full([128], -float("inf"), tl.float32)
    l = tl.zeros([128], tl.float32)
    for start in range(0, N, BLOCK):
        x = _block(x_ptr, rows, cols, start, N)
        m_new = tl.maximum(m, tl.max(x, axis=1))
        l = l * tl.exp2(m - m_new) + tl.sum(tl.exp2(x - m_new[:, None]), axis=1) + 1.0
        m = m_new
    tl.store(out_ptr + rows, l)
    tl.store(out_ptr + 128 + rows, m)


@tessera.jit
def sum_squared(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    """Not linear in the partial sums."""
    rows = tl.arange(0, 128)
    cols = tl.arange(0, BLOCK)
    m = tl.full([128], -float("inf"), tl.float32)
    l = tl.zeros([128], tl.float32)
    for start in range(0, N, BLOCK):
        x = _block(x_ptr, rows, cols, start, N)
        m_new = tl.maximum(m, tl.max(x, axis=1))
        s = tl.sum(tl.exp2(x - m_new[:, None]), axis=1)
        l = l * tl.exp2(m - m_new) + s * s
        m = m_new
    tl.store(out_ptr + rows, l)
    tl.store(out_ptr + 128 + rows, m)
