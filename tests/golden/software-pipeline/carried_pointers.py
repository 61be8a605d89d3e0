"""A GEMM that advances pointer blocks every K step (the pipeline pass
computes them num_stages - 1 steps ahead); also run by
tests/python/test_pipeline_interpreter.py."""
import tessera
import tessera.language as tl


@tessera.jit
def carried_pointer_matmul(a_ptr, b_ptr, c_ptr, M, N, K, s_am, s_ak, s_bk, s_bn, s_cm, s_cn,
                           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # Pointer blocks advanced every step, as users often write a GEMM.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = pid_m * BM + tl.arange(0, BM)
    cols = pid_n * BN + tl.arange(0, BN)
    ks = tl.arange(0, BK)
    a_blk = a_ptr + rows[:, None] * s_am + ks[None, :] * s_ak
    b_blk = b_ptr + ks[:, None] * s_bk + cols[None, :] * s_bn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(a_blk, mask=(rows[:, None] < M) & (ks[None, :] + k0 < K), other=0.0)
        b = tl.load(b_blk, mask=(ks[:, None] + k0 < K) & (cols[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_blk += BK * s_ak
        b_blk += BK * s_bk
    tl.store(c_ptr + rows[:, None] * s_cm + cols[None, :] * s_cn, acc, mask=(rows[:, None] < M) & (cols[None, :] < N))
