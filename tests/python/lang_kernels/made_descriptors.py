"""Kernels that make their tensor descriptors (tl.make_tensor_descriptor, Triton 3.x):
a 4-D block permuted and stored through a 1-D descriptor (test_core.py's test_trans_4d),
a ragged 2-D copy through two descriptors, a padded load, and a descriptor carried
through a loop and passed to a helper."""
import tessera
import tessera.language as tl


@tessera.jit
def trans_4d_kernel(In, Out,  #
                    in_shape1: tl.constexpr, in_shape2: tl.constexpr, in_shape3: tl.constexpr, in_shape4: tl.constexpr,
                    ou_shape1: tl.constexpr, ou_shape2: tl.constexpr, ou_shape3: tl.constexpr, ou_shape4: tl.constexpr,
                    trans1: tl.constexpr, trans2: tl.constexpr, trans3: tl.constexpr, trans4: tl.constexpr):
    in_desc = tl.make_tensor_descriptor(
        base=In,
        shape=[in_shape1, in_shape2, in_shape3, in_shape4],
        strides=[in_shape4 * in_shape3 * in_shape2, in_shape4 * in_shape3, in_shape4, 1],
        block_shape=[in_shape1, in_shape2, in_shape3, in_shape4],
    )
    out_desc = tl.make_tensor_descriptor(
        base=Out,
        shape=[ou_shape1 * ou_shape2 * ou_shape3 * ou_shape4],
        strides=[1],
        block_shape=[ou_shape1 * ou_shape2 * ou_shape3 * ou_shape4],
    )
    val = in_desc.load([0, 0, 0, 0]).permute((trans1, trans2, trans3, trans4))
    out_desc.store([0], val.reshape(out_desc.block_shape))


@tessera.jit
def made_desc_copy(in_ptr, out_ptr, M, N, stride_m, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # Triton's docstring example: blocks in and out through descriptors made here; the
    # ragged edge blocks read zeros outside the tensor and write nothing there.
    src = tl.make_tensor_descriptor(in_ptr, shape=[M, N], strides=[stride_m, 1], block_shape=[BLOCK_M, BLOCK_N])
    dst = tl.make_tensor_descriptor(out_ptr, shape=[M, N], strides=[stride_m, 1], block_shape=[BLOCK_M, BLOCK_N])
    m = tl.program_id(0) * BLOCK_M
    n = tl.program_id(1) * BLOCK_N
    dst.store([m, n], tl.abs(src.load([m, n])) + 1)


@tessera.jit
def made_desc_padded_load(in_ptr, out_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                          PADDING: tl.constexpr):
    # The block at (M - BLOCK_M // 2, 0) hangs off the tensor's end: its rows past M read
    # as the padding; out_ptr is a dense BLOCK_M x BLOCK_N buffer.
    src = tl.make_tensor_descriptor(in_ptr, [M, N], [N, 1], [BLOCK_M, BLOCK_N], padding_option=PADDING)
    x = src.load([M - BLOCK_M // 2, 0])
    rm = tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    tl.store(out_ptr + rm[:, None] * BLOCK_N + rn[None, :], x)


@tessera.jit
def _row_block_sum(desc, row, BLOCK_N: tl.constexpr):
    return tl.sum(desc.load([row, 0]).to(tl.float32), axis=0)


@tessera.jit
def made_desc_in_loop(in_ptr, out_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # Column sums of a M x N tensor (N <= BLOCK_N) read BLOCK_M rows at a time: the loop
    # carries the descriptor, remade each step over the rows left (its base and shape
    # change), and a helper reads it.
    desc = tl.make_tensor_descriptor(in_ptr, [M, N], [N, 1], [BLOCK_M, BLOCK_N])
    rows_left = M
    acc = tl.zeros((BLOCK_N, ), dtype=tl.float32)
    for row in range(0, M, BLOCK_M):
        acc += _row_block_sum(desc, 0, BLOCK_N)
        rows_left -= BLOCK_M
        desc = tl.make_tensor_descriptor(desc.base + BLOCK_M * N, [rows_left, N], desc.strides, desc.block_shape)
    rn = tl.arange(0, BLOCK_N)
    tl.store(out_ptr + rn, acc, mask=rn < N)


@tessera.jit
def made_desc_functions_and_atomics(in_ptr, acc_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # tl.load_tensor_descriptor / tl.store_tensor_descriptor, and desc.atomic_add / atomic_max
    # (every program adds its block into acc and keeps the maximum in the row after it):
    # acc_ptr is 2 x BLOCK_N, the blocks outside the tensor change nothing.
    src = tl.make_tensor_descriptor(in_ptr, [M, N], [N, 1], [BLOCK_M, BLOCK_N])
    acc = tl.make_tensor_descriptor(acc_ptr, [2, N], [N, 1], [1, BLOCK_N])
    x = tl.load_tensor_descriptor(src, [tl.program_id(0) * BLOCK_M, 0])
    acc.atomic_add([0, 0], tl.sum(x, axis=0)[None, :])
    acc.atomic_max([1, 0], tl.max(x, axis=0)[None, :])
    tl.store_tensor_descriptor(src, [tl.program_id(0) * BLOCK_M, 0], x * 2)


@tessera.jit
def host_desc_attributes(in_desc, out_ptr):
    # A descriptor argument has block_shape and dtype too; tl.load_tensor_descriptor reads it.
    BM: tl.constexpr = in_desc.block_shape[0]
    BN: tl.constexpr = in_desc.block_shape[1]
    x = tl.load_tensor_descriptor(in_desc, [0, 0]).to(in_desc.dtype)
    tl.store(out_ptr + tl.arange(0, BM * BN), x.reshape([BM * BN]))
