"""A GEMM whose B block is loaded [BN x BK] (rows of K, as weights are stored) and
transposed in the dot, dot(a, w.T) (Unsloth's MoE grouped GEMM): the pipeline pass
copies the block into a transposed tile (async_copy transpose = 1), so no trans runs
through shared memory in the loop; also run by tests/python/test_pipeline_interpreter.py
and tests/python/test_trans_dot_ptx.py."""
import tessera
import tessera.language as tl


@tessera.jit
def trans_b_matmul(a_ptr, w_ptr, c_ptr, M, N, K, s_am, s_wn, s_cm,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = pid_m * BM + tl.arange(0, BM)
    cols = pid_n * BN + tl.arange(0, BN)
    ks = tl.arange(0, BK)
    a_blk = a_ptr + rows[:, None] * s_am + ks[None, :]
    w_blk = w_ptr + cols[:, None] * s_wn + ks[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(a_blk, mask=(rows[:, None] < M) & (ks[None, :] + k0 < K), other=0.0)
        w = tl.load(w_blk, mask=(cols[:, None] < N) & (ks[None, :] + k0 < K), other=0.0)
        acc += tl.dot(a, w.T)
        a_blk += BK
        w_blk += BK
    tl.store(c_ptr + rows[:, None] * s_cm + cols[None, :], acc, mask=(rows[:, None] < M) & (cols[None, :] < N))
