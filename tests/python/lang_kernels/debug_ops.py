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


@tessera.jit
def pingpong_kernel(x_ptr, n, BLOCK: tl.constexpr):
    # two warpgroups take turns around their stores (tl.pingpong_*)
    offs = tl.arange(0, BLOCK)
    tl.pingpong_start()
    for i in range(n):
        tl.pingpong_wait()
        x = tl.load(x_ptr + offs)
        tl.store(x_ptr + offs, x + 1)
        tl.pingpong_pass()
    tl.pingpong_end()


@tessera.jit
def pingpong_with_argument(x_ptr, n, BLOCK: tl.constexpr):
    tl.pingpong_wait(1)
