import tessera
import tessera.language as tl

@tessera.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * stride_am + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * stride_bk + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    c = acc.to(c_ptr.dtype.element_ty)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], c, mask=(rm[:, None] < M) & (rn[None, :] < N))

@tessera.jit
def dot_int8(a_ptr, b_ptr, c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    a = tl.load(a_ptr + tl.arange(0, BM)[:, None] * BK + tl.arange(0, BK)[None, :])
    b = tl.load(b_ptr + tl.arange(0, BK)[:, None] * BN + tl.arange(0, BN)[None, :])
    c = tl.dot(a, b)
    tl.store(c_ptr + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], c)


@tessera.jit
def batched_dot(a_ptr, b_ptr, c_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    # tl.dot on 3-D blocks: one [M, K] @ [K, N] product per batch entry.
    bs = tl.arange(0, B)[:, None, None]
    ms = tl.arange(0, M)[None, :, None]
    ns = tl.arange(0, N)[None, None, :]
    ks_row = tl.arange(0, K)[None, None, :]
    ks_col = tl.arange(0, K)[None, :, None]
    a = tl.load(a_ptr + bs * M * K + ms * K + ks_row)
    b = tl.load(b_ptr + bs * K * N + ks_col * N + ns)
    acc = tl.full((B, M, N), 1, c_ptr.dtype.element_ty)  # f32, or i32 for int8 inputs
    c = tl.dot(a, b, acc)
    tl.store(c_ptr + bs * M * N + ms * N + ns, c)
