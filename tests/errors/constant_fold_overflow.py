# RUN: --kernel k --signature "*i64"
import tessera
import tessera.language as tl

@tessera.jit
def k(out_ptr):
    BIG: tl.constexpr = 2**100
    tl.store(out_ptr, BIG * BIG // 2**190)
