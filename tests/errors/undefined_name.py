# RUN: --kernel k --signature "*fp32,i32" --constexpr BLOCK=128
import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsetz)
