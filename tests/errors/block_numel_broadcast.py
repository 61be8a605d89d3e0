# RUN: --kernel k --signature "*fp32"
import tessera
import tessera.language as tl

# Each operand is small; the broadcast sum is 2048 x 2048 = 2^22 elements.
@tessera.jit
def k(x_ptr):
    r = tl.arange(0, 2048)
    t = x_ptr + r[:, None] * 2048 + r[None, :]
    tl.store(t, 1.0)
