"""A K-loop GEMM whose accumulator type is a parameter, for the tensor-core
shapes other than fp16/bf16: tf32 (fp32 inputs) and int8 -> int32."""
import tessera
import tessera.language as tl


@tessera.jit
def gemm(a_ptr, b_ptr, c_ptr, M, N, K, s_am, s_ak, s_bk, s_bn, s_cm, s_cn,
         BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, INT_ACC: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    ks = tl.arange(0, BK)
    if INT_ACC:
        acc = tl.zeros((BM, BN), dtype=tl.int32)
    else:
        acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + ks
        a = tl.load(a_ptr + rows[:, None] * s_am + kk[None, :] * s_ak, mask=(rows[:, None] < M) & (kk[None, :] < K), other=0)
        b = tl.load(b_ptr + kk[:, None] * s_bk + cols[None, :] * s_bn, mask=(kk[:, None] < K) & (cols[None, :] < N), other=0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rows[:, None] * s_cm + cols[None, :] * s_cn, acc, mask=(rows[:, None] < M) & (cols[None, :] < N))
