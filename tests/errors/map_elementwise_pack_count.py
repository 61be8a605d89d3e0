# RUN: --kernel k --signature "*i32,*i32"
import tessera
import tessera.language as tl

@tessera.jit
def three(a0, a1):
    return a0, a1, a0 + a1

@tessera.jit
def k(X, Y):
    x = tl.load(X + tl.arange(0, 16))
    tl.store(Y + tl.arange(0, 16), tl.map_elementwise(three, x, pack=2))
