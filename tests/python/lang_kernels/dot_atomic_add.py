"""Split-K GEMM partial sums added straight from the dot: C += A[:, kblock] @ B[kblock, :]
by an fp32 atomic add whose old values nobody reads (the attention backward's dQ). Used by
tests/python/test_dot_atomic_add.py."""
import tessera
import tessera.language as tl


@tessera.jit
def dot_atomic_add(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
    offs_n = tl.program_id(1) * BN + tl.arange(0, BN)
    offs_k = tl.program_id(2) * BK + tl.arange(0, BK)
    a = tl.load(A + offs_m[:, None] * K + offs_k[None, :], mask=(offs_m < M)[:, None], other=0.0)
    b = tl.load(B + offs_k[:, None] * N + offs_n[None, :], mask=(offs_n < N)[None, :], other=0.0)
    acc = tl.dot(a, b)
    tl.atomic_add(C + offs_m[:, None] * N + offs_n[None, :], acc, mask=(offs_m < M)[:, None] & (offs_n < N)[None, :],
                  sem="relaxed")
