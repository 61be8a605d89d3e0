# RUN: --kernel k --signature "*fp32"
import tessera
import tessera.language as tl


@tessera.jit(noinline=True)
def scale(v, i):
    return v * i


@tessera.jit
def k(x_ptr):
    offs = tl.arange(0, 16)
    tl.store(x_ptr + offs, scale(tl.load(x_ptr + offs), 2))
    tl.store(x_ptr, scale(tl.load(x_ptr), 3))  # scalars are fine
