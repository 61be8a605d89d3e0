"""Kernels of tests/python/test_broken_neighbour.py: one file, one helper whose body does not parse
(`with` is not part of the kernel language), and kernels that do not use it."""
import tessera
import tessera.language as tl


@tessera.jit
def broken_helper(x):
    with x:
        return x


@tessera.jit
def good_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 2)


@tessera.jit
def uses_broken_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, broken_helper(tl.load(x_ptr + offs)))


@tessera.jit
def broken_kernel(x_ptr):
    y = {1: 2}
    tl.store(x_ptr, y)
