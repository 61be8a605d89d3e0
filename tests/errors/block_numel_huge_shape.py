# RUN: --kernel k --signature "*fp32"
import tessera
import tessera.language as tl

# A shape whose element count does not fit in 64 bits.
@tessera.jit
def k(x_ptr):
    z = tl.full((2**32, 2**32, 2**32), 1.0, tl.float32)
    tl.store(x_ptr, tl.sum(tl.sum(tl.sum(z, 2), 1), 0))
