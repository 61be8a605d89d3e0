# RUN: --kernel k --signature "*fp32" --constexpr N=32
import tessera
import tessera.language as tl

@tessera.jit
def k(dummy, N: tl.constexpr):
    offset1 = tl.arange(0, N)
    t = tl.expand_dims(offset1, (0, -3))
