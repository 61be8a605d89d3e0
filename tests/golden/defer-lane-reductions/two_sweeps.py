"""An online softmax's row sum over two key sweeps, as the attention forward has (blocked
layout, no dot): each sweep's reduce(sum) becomes `partial` (no shuffles in the loop), the
second loop starts from the first one's partial sums, and one lane_reduce after the second
adds the 16 lanes of a row up (tpw = [2, 16]). The row maximum (not linear) keeps its whole reduce."""
import tessera
import tessera.language as tl


@tessera.jit
def two_sweeps(x_ptr, out_ptr, N, SPLIT, BLOCK: tl.constexpr):
    rows = tl.arange(0, 128)
    cols = tl.arange(0, BLOCK)
    m = tl.full([128], -float("inf"), tl.float32)
    l = tl.zeros([128], tl.float32)
    for start in range(0, SPLIT, BLOCK):
        x = tl.load(x_ptr + rows[:, None] * N + start + cols[None, :])
        m_new = tl.maximum(m, tl.max(x, axis=1))
        l = l * tl.exp2(m - m_new) + tl.sum(tl.exp2(x - m_new[:, None]), axis=1)
        m = m_new
    for start in range(SPLIT, N, BLOCK):
        x = tl.load(x_ptr + rows[:, None] * N + start + cols[None, :], mask=start + cols[None, :] < N,
                    other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, axis=1))
        l = l * tl.exp2(m - m_new) + tl.sum(tl.exp2(x - m_new[:, None]), axis=1)
        m = m_new
    tl.store(out_ptr + rows, l)
    tl.store(out_ptr + 128 + rows, m)
