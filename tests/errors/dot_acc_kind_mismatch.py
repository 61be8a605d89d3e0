# RUN: --kernel k --signature "*i8,*bf16,*i32"
import tessera
import tessera.language as tl

@tessera.jit
def k(a_ptr, b_ptr, c_ptr):
    offs = tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :]
    acc = tl.zeros((16, 16), dtype=tl.int32)
    acc = tl.dot(tl.load(a_ptr + offs), tl.load(b_ptr + offs), acc)
    tl.store(c_ptr + offs, acc)
