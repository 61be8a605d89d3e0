# RUN: --kernel k --signature "*fp32" --constexpr BLOCK=48
import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK % 32 == 0, "BLOCK must be a multiple of 32")
    tl.store(x_ptr, 1.0)
