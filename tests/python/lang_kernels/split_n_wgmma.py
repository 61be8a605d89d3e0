import tessera
import tessera.language as tl


@tessera.jit
def split_n_matmul(a_ptr, b_ptr, c_ptr, M, N, K, B_ROWS_ARE_N: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                   BK: tl.constexpr):
    # B_ROWS_ARE_N: b is [N, K] and the dot is a @ b.T (Unsloth's MoE grouped GEMM: weights with
    # rows of K, a K-major B tile); else b is [K, N] (an N-major tile).
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        rk = k + offs_k
        a = tl.load(a_ptr + offs_m[:, None] * K + rk[None, :], mask=(offs_m[:, None] < M) & (rk[None, :] < K),
                    other=0.0)
        if B_ROWS_ARE_N:
            w = tl.load(b_ptr + offs_n[:, None] * K + rk[None, :], mask=(offs_n[:, None] < N) & (rk[None, :] < K),
                        other=0.0)
            acc += tl.dot(a, w.T)
        else:
            b = tl.load(b_ptr + rk[:, None] * N + offs_n[None, :], mask=(rk[:, None] < K) & (offs_n[None, :] < N),
                        other=0.0)
            acc += tl.dot(a, b)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@tessera.jit
def split_n_matmul_unpipelined(a_ptr, b_ptr, c_ptr, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # one k-step, no loop: the dot stages B itself (MmaDot.cpp's dotOperandTiles)
    offs_m = tl.arange(0, BM)
    offs_n = tl.program_id(0) * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a = tl.load(a_ptr + offs_m[:, None] * K + offs_k[None, :])
    w = tl.load(b_ptr + offs_n[:, None] * K + offs_k[None, :])
    acc = tl.dot(a, w.T)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc)


@tessera.jit
def split_n_descriptor_b(a_ptr, b_desc, c_ptr, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # B through the TMA unit: its boxes keep their column order, so no warpgroup split of N
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + offs_m[:, None] * K + (k + offs_k)[None, :])
        b = b_desc.load([k, 0])
        acc += tl.dot(a, b)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc)
