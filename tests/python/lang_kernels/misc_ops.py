import tessera
import tessera.language as tl


@tessera.jit
def misc_kernel(x_ptr, out_ptr, n, seed, BLOCK: tl.constexpr):
    """The older builtins next to the new ones, in one kernel."""
    SCALE: tl.constexpr = tl.constexpr(2)
    tl.static_assert(BLOCK % SCALE == 0, "BLOCK must be even")
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    offs = tl.max_contiguous(tl.multiple_of(offs, BLOCK), BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    y = tl.abs(x) + tl.exp(x) + tl.exp2(x) + tl.log(tl.abs(x) + 1) + tl.log2(tl.abs(x) + 1) + tl.sqrt(tl.abs(x))
    y = tl.minimum(y, 100.0) + tl.maximum(x, 0.0) + tl.zeros_like(x) + tl.cast(offs, tl.float32)
    a, b = tl.broadcast(x[:, None], x[None, :])
    y += tl.sum(tl.view(a + b, (BLOCK * BLOCK, )), axis=0) + tl.max(x, axis=0) + tl.min(x, axis=0)
    y += tl.max_constancy(tl.full((BLOCK, ), 1, tl.int32), 4).to(tl.float32)
    i, j = tl.swizzle2d(pid, offs, tl.cdiv(n, BLOCK), BLOCK, 4)
    c0, c1, c2, c3 = tl.philox(seed, offs, offs * 0, offs * 0, offs * 0)
    k = tl.to_tensor(3) + i + j + (c0 ^ c1 ^ c2 ^ c3).to(tl.int32, bitcast=True)
    bits = (x_ptr + offs).to(tl.pointer_type(tl.int32))
    tl.store(bits, k, mask=m & (offs < tl.num_programs(0)))
    tl.store(out_ptr + offs, tl.where(m, y, 0.0), mask=m)
