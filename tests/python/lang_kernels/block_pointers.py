import tessera
import tessera.language as tl


@tessera.jit
def row_sums_and_copy(a_ptr, out_ptr, sums_ptr, M, N, stride_m, stride_n,
                      BM: tl.constexpr, BN: tl.constexpr):
    """out = 2 * a through block pointers (advanced along N in a loop); sums = a.sum(1)."""
    pid = tl.program_id(0)
    a = tl.make_block_ptr(a_ptr, shape=(M, N), strides=(stride_m, stride_n), offsets=(pid * BM, 0),
                          block_shape=(BM, BN), order=(1, 0))
    o = tl.make_block_ptr(base=out_ptr, shape=(M, N), strides=(stride_m, stride_n),
                          offsets=(pid * BM, 0), block_shape=(BM, BN), order=(1, 0))
    acc = tl.zeros((BM, ), dtype=tl.float32)
    for k in range(0, N, BN):
        x = tl.load(a, boundary_check=(0, 1), padding_option="zero")
        acc += tl.sum(x, axis=1)
        tl.store(o, x * 2, boundary_check=(0, 1))
        a = tl.advance(a, (0, BN))
        o = tl.advance(o, [0, BN])
    s = tl.make_block_ptr(sums_ptr, shape=(M, ), strides=(1, ), offsets=(pid * BM, ), block_shape=(BM, ),
                          order=(0, ))
    tl.store(s, acc, boundary_check=(0, ))


@tessera.jit
def padded_nan(a_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    a = tl.make_block_ptr(a_ptr, (M, N), (N, 1), (0, 0), (BM, BN), (1, 0))
    x = tl.load(a, boundary_check=(1, ), padding_option="nan")
    o = tl.make_block_ptr(out_ptr, (BM, BN), (BN, 1), (0, 0), (BM, BN), (1, 0))
    tl.store(o, x)
