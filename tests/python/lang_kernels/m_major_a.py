import tessera
import tessera.language as tl


@tessera.jit
def m_major_a_matmul(a_ptr, b_ptr, c_ptr, M, N, K, USE_G: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                     BK: tl.constexpr):
    # a: [K, M] row-major, i.e. A = a.T is read down its columns. USE_G: the K offsets advance by
    # (offs_k + BK) % BK, the same offsets each step, a loop-carried value the body does not change,
    # read in two layouts (a's and b's)
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        if USE_G:
            offs_k = (offs_k + BK) % BK
        rk = k + offs_k
        a = tl.load(a_ptr + offs_m[:, None] + rk[None, :] * M, mask=(offs_m[:, None] < M) & (rk[None, :] < K),
                    other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + offs_n[None, :], mask=(rk[:, None] < K) & (offs_n[None, :] < N),
                    other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
