"""Kernels the fake-driver tests launch (a file of their own: @jit reads its source)."""
import tessera
import tessera.language as tl


@tessera.jit
def noop0():
    pass


@tessera.jit
def noop6(a, b, c, d, n, m):
    pass


@tessera.jit
def noop16(a0, a1, a2, a3, a4, a5, a6, a7, n0, n1, n2, n3, n4, n5, n6, n7):
    pass


@tessera.jit
def scalars(f, flag, big, small):
    pass


@tessera.jit
def noop36(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11,
           p12, p13, p14, p15, p16, p17, p18, p19, p20, p21, p22, p23,
           p24, p25, p26, p27, p28, p29, p30, p31, p32, p33, p34, p35, C: tl.constexpr):
    pass


@tessera.jit
def named_like_options(x_ptr, num_warps: tl.constexpr, BLOCK: tl.constexpr = 32):
    pass


@tessera.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


@tessera.jit
def double(x):
    return x * 2


@tessera.jit
def apply_kernel(x_ptr, out_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, FN(tl.load(x_ptr + offs, mask=mask)), mask=mask)


@tessera.jit
def maybe_apply(x_ptr, out_ptr, n, BLOCK: tl.constexpr, FN: tl.constexpr = None):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if FN is not None:
        x = FN(x)
    tl.store(out_ptr + offs, x, mask=mask)


@tessera.autotune(configs=[tessera.Config({"BLOCK_SIZE": 128}, num_warps=2),
                           tessera.Config({"BLOCK_SIZE": 256}, num_warps=8)],
                  key=["n_elements"], warmup=1, rep=1)
@tessera.jit
def tuned_add(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
             mask=mask)


@tessera.heuristics({"BLOCK_SIZE": lambda args: 256 if args["n_elements"] > 1000 else 64})
@tessera.jit
def heuristic_add(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
             mask=mask)


# Tensor descriptor arguments (tests/fake_driver/test_tensor_descriptor.py). Their PTX comes from a
# planted disk-cache entry, so these launch whether or not the compiler can build them.
@tessera.jit
def desc_kernel(a_desc, n, b_desc):
    pass


@tessera.jit
def int_then_desc(n, desc):
    pass


@tessera.jit
def jit_mode(a, n):
    """Launched only by test_jit_mode (its loads are counted)."""
    pass


@tessera.jit
def made_descriptor_copy(in_ptr, out_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    src = tl.make_tensor_descriptor(in_ptr, [M, N], [N, 1], [BLOCK_M, BLOCK_N])
    dst = tl.make_tensor_descriptor(out_ptr, [M, N], [N, 1], [BLOCK_M, BLOCK_N])
    dst.store([tl.program_id(0) * BLOCK_M, 0], src.load([tl.program_id(0) * BLOCK_M, 0]))


@tessera.jit
def strided_copy_tuple(x_ptr, out_ptr, strides, n, BLOCK: tl.constexpr):
    # `strides` is a tuple argument (Mamba-3's kernels take `q.stride()` so): its ints are passed at run time.
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + pid * strides[0] + offs * strides[1], mask=offs < n)
    tl.store(out_ptr + pid * n + offs, x, mask=offs < n)


@tessera.jit
def tuple_of_pointers_copy(ptrs, extra, n, BLOCK: tl.constexpr):
    # ptrs = (src, (dst, None)), extra = (scale, tl.constexpr(2)): Triton flattens tuple arguments into
    # their leaves; None and constexpr leaves take no slot.
    tl.static_assert(ptrs[1][1] is None)
    offs = tl.arange(0, BLOCK)
    x = tl.load(ptrs[0] + offs, mask=offs < n)
    tl.store(ptrs[1][0] + offs, x * extra[0] + extra[1], mask=offs < n)


@tessera.jit
def store_to_each(first, ptrs, value):
    tl.store(first, value)
    for i in tl.static_range(len(ptrs)):
        tl.store(ptrs[i], value)
