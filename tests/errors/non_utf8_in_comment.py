# RUN: --kernel k --signature "*fp32" --constexpr BLOCK=128
import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)  # décalage
    x = tl.load(x_ptr + offsets)
    tl.store(x_ptr + offsets, x)
