import tessera
import tessera.language as tl


@tessera.jit
def debug_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.static_print("x is", x, BLOCK)
    tl.device_print("x", x)
    tl.device_print("n", n, hex=True)
    print("pid", tl.program_id(0))
    tl.device_assert(x >= 0, "x must be non-negative")
    assert n > 0, "n must be positive"
    tl.assume(n > 0)
    tl.debug_barrier()
    tl.store(x_ptr + offs, x + 1)
