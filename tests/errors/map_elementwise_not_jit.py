# RUN: --kernel k --signature "*i32,*i32"
import tessera
import tessera.language as tl

def plain(x):
    return x + 1

@tessera.jit
def k(X, Y):
    x = tl.load(X + tl.arange(0, 16))
    tl.store(Y + tl.arange(0, 16), tl.map_elementwise(plain, x))
