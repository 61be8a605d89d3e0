# RUN: --kernel k --signature "*i32,*i32"
import tessera
import tessera.language as tl

@tessera.jit
def store_one(p, x):
    tl.store(p, x + 1)
    return x

@tessera.jit
def k(X, Y):
    x = tl.load(X + tl.arange(0, 16))
    y = tl.map_elementwise(store_one, Y + tl.arange(0, 16), x)
