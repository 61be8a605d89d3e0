import tessera
import tessera.language as tl


@tessera.jit
def matmul_epilogue(a_ptr, b_ptr, c_ptr, K, SUB: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                    BK: tl.constexpr):
    # Triton tutorial 09's subtiled epilogue: the accumulator's two column halves
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + offs_m[:, None] * K + (k + offs_k)[None, :])
        b = tl.load(b_ptr + (k + offs_k)[:, None] * BN + offs_n[None, :])
        acc = tl.dot(a, b, acc)
    if SUB == 1:
        acc0, acc1 = tl.split(tl.permute(tl.reshape(acc, (BM, 2, BN // 2)), (0, 2, 1)))
        o = tl.arange(0, BN // 2)
        tl.store(c_ptr + offs_m[:, None] * BN + o[None, :], acc0.to(tl.float16))
        tl.store(c_ptr + offs_m[:, None] * BN + BN // 2 + o[None, :], acc1.to(tl.float16))
    else:
        tl.store(c_ptr + offs_m[:, None] * BN + offs_n[None, :], acc.to(tl.float16))


@tessera.jit
def rescaled_halves(q_ptr, k_ptr, v_ptr, s_ptr, o_ptr, SPLIT: tl.constexpr, BM: tl.constexpr, D: tl.constexpr):
    # The attention tutorial's rescale of the accumulator by halves (its Blackwell path):
    # split, scale, join, permute and reshape back, then the next dot accumulates into it.
    offs_m = tl.arange(0, BM)
    offs_d = tl.arange(0, D)
    q = tl.load(q_ptr + offs_m[:, None] * D + offs_d[None, :])
    k = tl.load(k_ptr + offs_d[:, None] * D + offs_d[None, :])
    v = tl.load(v_ptr + offs_d[:, None] * D + offs_d[None, :])
    alpha = tl.load(s_ptr + offs_m)
    acc = tl.dot(q, k)
    if SPLIT == 1:
        acc0, acc1 = acc.reshape([BM, 2, D // 2]).permute(0, 2, 1).split()
        acc0 = acc0 * alpha[:, None]
        acc1 = acc1 * alpha[:, None]
        acc = tl.join(acc0, acc1).permute(0, 2, 1).reshape([BM, D])
    else:
        acc = acc * alpha[:, None]
    acc = tl.dot(q, v, acc)
    tl.store(o_ptr + offs_m[:, None] * D + offs_d[None, :], acc)


@tessera.jit
def shape_chain(x_ptr, out_ptr, OP: tl.constexpr, M: tl.constexpr, N: tl.constexpr):
    # reshape / permute / split / join of a loaded (blocked) tile, each stored row-major
    rows = tl.arange(0, M)
    cols = tl.arange(0, N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :])
    if OP == 0:  # the column halves, combined: out[M, N // 2] = x[:, :N/2] + 2 * x[:, N/2:]
        a0, a1 = tl.split(tl.permute(tl.reshape(x, (M, 2, N // 2)), (0, 2, 1)))
        h = tl.arange(0, N // 2)
        tl.store(out_ptr + rows[:, None] * (N // 2) + h[None, :], a0 + 2 * a1)
    elif OP == 1:  # interleaved with twice itself: out[M, 2N]
        y = tl.reshape(tl.join(x, x * 2), (M, 2 * N))
        c2 = tl.arange(0, 2 * N)
        tl.store(out_ptr + rows[:, None] * (2 * N) + c2[None, :], y)
    elif OP == 2:  # transposed: out[N, M]
        tl.store(out_ptr + cols[:, None] * M + rows[None, :], tl.trans(x))
    else:  # flattened
        tl.store(out_ptr + tl.arange(0, M * N), tl.reshape(x, (M * N,)) + 1)


@tessera.jit
def reshaped_index_sums(x_ptr, out_ptr, D0: tl.constexpr, D1: tl.constexpr, D2: tl.constexpr, D3: tl.constexpr,
                        D4: tl.constexpr):
    # A 5-D block of pointers built from tl.arange(0, N).reshape(...), permuted and reduced three
    # times (Triton's test_chained_reductions): out[D3, D4] = x summed over D0, D1, D2
    idx = tl.arange(0, D0 * D1 * D2 * D3 * D4).reshape(D0, D1, D2, D3, D4)
    vals = tl.permute(tl.load(x_ptr + idx), [2, 1, 0, 3, 4])
    r = tl.sum(tl.sum(tl.sum(vals, 0), 0), 0)
    tl.store(out_ptr + tl.arange(0, D3 * D4).reshape(D3, D4), r)
