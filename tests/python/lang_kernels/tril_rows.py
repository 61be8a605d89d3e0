import tessera
import tessera.language as tl


@tessera.jit
def tril_inverse_16(A, A_inv, T):
    # fla's solve_tril_16x16 row recurrence: row i of the block is read as a row (b_a[:, None]
    # scales the block) and as the sum's layout (b_a + sum(..., 0)), each iteration.
    i_t = tl.program_id(0)
    o_i = tl.arange(0, 16)
    rows = i_t * 16 + o_i
    b_A = tl.load(A + rows[:, None] * 16 + o_i[None, :], mask=rows[:, None] < T, other=0.0)
    b_A = -tl.where(o_i[:, None] > o_i[None, :], b_A, 0)
    for i in range(1, tl.minimum(16, T - i_t * 16)):
        b_a = -tl.load(A + (i_t * 16 + i) * 16 + o_i)
        b_a = b_a + tl.sum(b_a[:, None] * b_A, 0)
        b_A = tl.where((o_i == i)[:, None], b_a, b_A)
    b_A += o_i[:, None] == o_i[None, :]
    tl.store(A_inv + rows[:, None] * 16 + o_i[None, :], b_A, mask=rows[:, None] < T)
