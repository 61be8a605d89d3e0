# RUN: --kernel k --signature "*i32"
import tessera
import tessera.language as tl

# Triton's test_scalar_overflow: a Python int next to a block takes the
# block's type and must be one of its values.
@tessera.jit
def k(out_ptr):
    huge_int: tl.constexpr = 0xFFFFFFFFFFFFFF
    x = tl.full((), 32, dtype=tl.int32)
    tl.store(out_ptr, x + huge_int)
