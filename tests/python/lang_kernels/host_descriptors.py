"""Kernels taking tensor descriptor arguments (tessera.TensorDescriptor, or Triton's
triton.tools.tensor_descriptor.TensorDescriptor): desc.shape / desc.strides at run time,
load, store (with a downcast), the atomics, padding, and a descriptor matmul
(tests/python/test_host_tensor_descriptor.py, tests/gpu/test_host_tensor_descriptor.py)."""
import tessera
import tessera.language as tl


@tessera.jit
def host_desc_block(out_ptr, desc, M, N, M_BLOCK: tl.constexpr, N_BLOCK: tl.constexpr):
    # The fields the launch passes are the tensor's: checked against the ints passed beside it.
    tl.device_assert(desc.shape[0] == M)
    tl.device_assert(desc.shape[1] == N)
    tl.device_assert(desc.strides[0] == N)
    tl.device_assert(desc.strides[1] == 1)
    tl.static_assert(desc.block_shape == [M_BLOCK, N_BLOCK])
    block = desc.load([M_BLOCK, 2 * N_BLOCK])
    idx = tl.arange(0, M_BLOCK)[:, None] * N_BLOCK + tl.arange(0, N_BLOCK)[None, :]
    tl.store(out_ptr + idx, block)


@tessera.jit
def host_desc_shape_out(desc, out_ptr):
    # desc.shape and desc.strides as values: written out for the host to compare.
    tl.store(out_ptr + 0, desc.shape[0].to(tl.int64))
    tl.store(out_ptr + 1, desc.shape[1].to(tl.int64))
    tl.store(out_ptr + 2, desc.strides[0].to(tl.int64))
    tl.store(out_ptr + 3, desc.strides[1])


@tessera.jit
def host_desc_tile_copy(in_desc, out_ptr, YN, M_BLOCK: tl.constexpr, N_BLOCK: tl.constexpr):
    # Every block of the output grid, also those past the input's edge (its padding).
    moffset = tl.program_id(0) * M_BLOCK
    noffset = tl.program_id(1) * N_BLOCK
    value = in_desc.load([moffset, noffset])
    offs_m = moffset + tl.arange(0, M_BLOCK)
    offs_n = noffset + tl.arange(0, N_BLOCK)
    tl.store(out_ptr + offs_m[:, None] * YN + offs_n[None, :], value)


@tessera.jit
def host_desc_store_downcast(desc, M, N, M_BLOCK: tl.constexpr, N_BLOCK: tl.constexpr):
    moffset = tl.program_id(axis=0) * M_BLOCK
    noffset = tl.program_id(axis=1) * N_BLOCK
    midx = moffset + tl.arange(0, M_BLOCK)[:, None]
    nidx = noffset + tl.arange(0, N_BLOCK)[None, :]
    desc.store([moffset, noffset], (midx * N + nidx).to(tl.float32))  # converted to the descriptor's dtype


@tessera.jit
def host_desc_reduce(out_desc, a_ptr, M, N, M_BLOCK: tl.constexpr, N_BLOCK: tl.constexpr, KIND: tl.constexpr):
    moffset = tl.program_id(0) * M_BLOCK
    noffset = tl.program_id(1) * N_BLOCK
    midx = moffset + tl.arange(0, M_BLOCK)[:, None]
    nidx = noffset + tl.arange(0, N_BLOCK)[None, :]
    val = tl.load(a_ptr + midx * N + nidx)
    if KIND == "add":
        out_desc.atomic_add([moffset, noffset], val)
    elif KIND == "min":
        out_desc.atomic_min([moffset, noffset], val)
    elif KIND == "max":
        out_desc.atomic_max([moffset, noffset], val)
    elif KIND == "and":
        out_desc.atomic_and([moffset, noffset], val)
    elif KIND == "or":
        out_desc.atomic_or([moffset, noffset], val)
    else:
        tl.static_assert(KIND == "xor")
        out_desc.atomic_xor([moffset, noffset], val)


@tessera.jit
def host_desc_functional(in_desc, out_desc):
    # tl.load_tensor_descriptor / tl.store_tensor_descriptor on descriptor arguments.
    BM: tl.constexpr = in_desc.block_shape[0]
    BN: tl.constexpr = in_desc.block_shape[1]
    off = tl.program_id(0) * BM
    x = tl.load_tensor_descriptor(in_desc, [off, 0])
    tl.store_tensor_descriptor(out_desc, [off, 0], x * 2)


@tessera.jit
def host_desc_matmul(a_desc, b_desc, c_desc):
    K = a_desc.shape[1]
    BLOCK_M: tl.constexpr = a_desc.block_shape[0]
    BLOCK_K: tl.constexpr = a_desc.block_shape[1]
    BLOCK_N: tl.constexpr = b_desc.block_shape[1]
    offs_am = tl.program_id(axis=0) * BLOCK_M
    offs_bn = tl.program_id(axis=1) * BLOCK_N
    offs_k = 0
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = a_desc.load([offs_am, offs_k])
        b = b_desc.load([offs_k, offs_bn])
        acc = tl.dot(a, b, acc=acc)
        offs_k += BLOCK_K
    c_desc.store([offs_am, offs_bn], acc.to(a_desc.dtype))


@tessera.jit
def host_desc_wrong_offsets(desc, out_ptr):
    x = desc.load([0])  # a 2-D descriptor: two offsets
    tl.store(out_ptr + tl.arange(0, 16), tl.reshape(x, [16]))
