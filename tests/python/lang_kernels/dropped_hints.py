import tessera
import tessera.language as tl


@tessera.jit
def hinted_matmul(a_ptr, b_ptr, c_ptr, K, lda, ldb, HINT: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                  BK: tl.constexpr):
    # The Triton tutorial grouped GEMM's form: row strides and bases the compiler cannot see are
    # 16-byte aligned, said by hints whose results are dropped (Triton sets them on the value).
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + offs_m[:, None] * lda + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * ldb + offs_n[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kk in range(0, tl.cdiv(K, BK)):
        if HINT:
            tl.multiple_of(a_ptrs, [16, 16])
            tl.multiple_of(b_ptrs, [16, 16])
        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
        acc += tl.dot(a, b)
        a_ptrs += BK
        b_ptrs += BK * ldb
    tl.store(c_ptr + offs_m[:, None] * BN + offs_n[None, :], acc.to(tl.float16))


@tessera.jit
def hinted_copy(x_ptr, y_ptr, start, HINT: tl.constexpr, BLOCK: tl.constexpr):
    offs = start + tl.arange(0, BLOCK)
    alias = offs
    if HINT:
        tl.multiple_of(offs, 8)  # holds for every name of the value
    tl.store(y_ptr + tl.arange(0, BLOCK), tl.load(x_ptr + alias))


@tessera.jit
def hinted_passthrough_matmul(a_ptr, b_ptr, c_ptr, K, MOVE: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                              BK: tl.constexpr):
    # offs_n is carried (assigned under a constexpr `if` the specialisation drops) and hinted in the
    # body: the loop yields the hinted value, which is still the iter arg unchanged
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        if MOVE:
            offs_n = offs_n + 0
        tl.max_contiguous(offs_n, BN)
        a = tl.load(a_ptr + offs_m[:, None] * K + (k + offs_k)[None, :])
        b = tl.load(b_ptr + (k + offs_k)[:, None] * BN + offs_n[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + offs_m[:, None] * BN + offs_n[None, :], acc.to(tl.float16))
