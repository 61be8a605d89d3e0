# RUN: --kernel k --signature "*i32,*i32"
import tessera
import tessera.language as tl

@tessera.jit
def widen(x):
    return tl.sum(tl.full((4,), x, tl.int32))

@tessera.jit
def k(X, Y):
    x = tl.load(X + tl.arange(0, 16))
    tl.store(Y + tl.arange(0, 16), tl.map_elementwise(widen, x))
