import tessera
import tessera.language as tl


@tessera.jit
def dot_multidim_kernel(X, Y, A, Z, RANK: tl.constexpr, TRANS_A: tl.constexpr, TRANS_B: tl.constexpr,
                        IN: tl.constexpr, USE_ACC: tl.constexpr, OUT: tl.constexpr, PRECISION: tl.constexpr):
    # Triton's test_dot_multidim: blocks of shape [2] * (RANK - 2) + [32, 32] (X, Y, A and Z hold
    # 256 << RANK f32 values), x and y read as IN, optionally transposed on their last two dims;
    # with USE_ACC, A (as OUT) is the accumulator. Z gets the dot as f32.
    n: tl.constexpr = 256 << RANK
    shape = [2] * (RANK - 2) + [32, 32]
    x = tl.load(X + tl.arange(0, n)).to(IN).reshape(shape)
    y = tl.load(Y + tl.arange(0, n)).to(IN).reshape(shape)
    if TRANS_A:
        x = tl.trans(x)
    if TRANS_B:
        y = y.trans()
    if USE_ACC:
        acc = tl.load(A + tl.arange(0, n)).to(OUT).reshape(shape)
        z = tl.dot(x, y, acc, input_precision=PRECISION, out_dtype=OUT)
    else:
        z = tl.dot(x, y, input_precision=PRECISION, out_dtype=OUT)
    tl.store(Z + tl.arange(0, n), z.to(tl.float32).reshape([n]))


@tessera.jit
def dot_precision_kernel(X, Y, A, Z, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                         PRECISION: tl.constexpr, USE_ACC: tl.constexpr, CHAIN: tl.constexpr):
    # An f32 dot (M x K @ K x N, row-major) with the given input_precision; with USE_ACC, A (M x N)
    # is the accumulator; with CHAIN, the result is dotted again with Y[:N, :N] (test_dot's chain-dot).
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    x = tl.load(X + rm[:, None] * K + rk[None, :])
    y = tl.load(Y + rk[:, None] * N + rn[None, :])
    if USE_ACC:
        z = tl.dot(x, y, tl.load(A + rm[:, None] * N + rn[None, :]), input_precision=PRECISION)
    else:
        z = tl.dot(x, y, input_precision=PRECISION)
    if CHAIN:
        w = tl.load(Y + rn[:, None] * N + rn[None, :])
        z = tl.dot(z, w, input_precision=PRECISION)
    tl.store(Z + rm[:, None] * N + rn[None, :], z)


@tessera.jit
def permute_kernel(In, Out, S0: tl.constexpr, S1: tl.constexpr, S2: tl.constexpr, S3: tl.constexpr,
                   P0: tl.constexpr, P1: tl.constexpr, P2: tl.constexpr, P3: tl.constexpr, FORM: tl.constexpr):
    # A 4-D block permuted by (P0, P1, P2, P3), written spelled FORM: 0 x.permute((...)),
    # 1 tl.permute(x, ...), 2 tl.trans(x, (...)), 3 x.trans(...).
    n: tl.constexpr = S0 * S1 * S2 * S3
    x = tl.load(In + tl.arange(0, n)).reshape(S0, S1, S2, S3)
    if FORM == 0:
        y = x.permute((P0, P1, P2, P3))
    elif FORM == 1:
        y = tl.permute(x, P0, P1, P2, P3)
    elif FORM == 2:
        y = tl.trans(x, (P0, P1, P2, P3))
    else:
        y = x.trans(P0, P1, P2, P3)
    tl.store(Out + tl.arange(0, n), y.reshape(n))


@tessera.jit
def trans3_kernel(In, Out, P0: tl.constexpr, P1: tl.constexpr, P2: tl.constexpr, DEFAULT: tl.constexpr):
    # A 2x4x8 block: tl.trans(x) (DEFAULT: the last two dims swapped) or tl.trans(x, P0, P1, P2).
    x = tl.load(In + tl.arange(0, 64)).reshape(2, 4, 8)
    if DEFAULT:
        y = tl.trans(x)
    else:
        y = tl.trans(x, P0, P1, P2)
    tl.store(Out + tl.arange(0, 64), y.reshape(64))


@tessera.jit
def transpose_attr_kernel(In, Out, RANK: tl.constexpr):
    # x.T: Triton's permute(x, (1, 0)), for a 2-D block only.
    if RANK == 2:
        x = tl.load(In + tl.arange(0, 64)).reshape(8, 8)
    else:
        x = tl.load(In + tl.arange(0, 64)).reshape(2, 4, 8)
    tl.store(Out + tl.arange(0, 64), x.T.reshape(64))


@tessera.jit
def matmul_precision_kernel(X, Y, Z, M, N, K, PRECISION: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                            BK: tl.constexpr):
    # Row-major f32 Z = X @ Y over a K loop, the accumulator carried through input_precision's dot.
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        x = tl.load(X + rm[:, None] * K + (k0 + rk[None, :]), mask=(rm[:, None] < M) & (k0 + rk[None, :] < K),
                    other=0.0)
        y = tl.load(Y + (k0 + rk[:, None]) * N + rn[None, :], mask=(k0 + rk[:, None] < K) & (rn[None, :] < N),
                    other=0.0)
        acc = tl.dot(x, y, acc, input_precision=PRECISION)
    tl.store(Z + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))
