import tessera
import tessera.language as tl


@tessera.jit
def gated_matmul(a_ptr, b_ptr, c_ptr, out_ptr, K, USE_G: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                 BK: tl.constexpr):
    # fla's recurrences assign o_k1 under `if USE_GK:` inside the loop: with USE_G off the loop
    # still carries offs_k, unchanged.
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        if USE_G:
            offs_k = (offs_k + BK) % BK  # the same values, but carried
        a = tl.load(a_ptr + offs_m[:, None] * K + (k + offs_k)[None, :])
        b = tl.load(b_ptr + (k + offs_k)[:, None] * BN + offs_n[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + offs_m[:, None] * BN + offs_n[None, :], acc)
    tl.store(out_ptr + offs_k, offs_k * 2)  # the loop's result: the initial value


@tessera.jit
def m_major_a_matmul(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # A read down its columns (fla's k tile: [K, T] with K contiguous)
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + offs_m[:, None] + (k + offs_k)[None, :] * BM)
        b = tl.load(b_ptr + (k + offs_k)[:, None] * BN + offs_n[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + offs_m[:, None] * BN + offs_n[None, :], acc)
