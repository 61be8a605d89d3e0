# RUN: --kernel k --signature "*fp32"
import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr):
    v: tl.constexpr = tl.load(x_ptr)
    tl.store(x_ptr, v)
