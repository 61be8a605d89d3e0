# RUN: --kernel k --signature "*fp64" --constexpr BLOCK=16
import tessera
import tessera.language as tl

@tessera.jit
def int_type_of(x):
    if tl.constexpr(x.dtype.primitive_bitwidth) == 32:
        t = tl.int32
    else:
        raise ValueError("Unsupported dtype")
    return t

@tessera.jit
def k(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(x_ptr + tl.arange(0, BLOCK), x.to(int_type_of(x), bitcast=True).to(tl.float64))
