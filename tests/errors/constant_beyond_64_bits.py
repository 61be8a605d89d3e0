# RUN: --kernel k --signature "*i64"
import tessera
import tessera.language as tl

# Folding is exact (2**64 + 5 is kept), but no 64-bit type holds the result.
@tessera.jit
def k(out_ptr):
    tl.store(out_ptr, 2**64 + 5)
