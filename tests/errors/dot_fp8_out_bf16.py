# RUN: --kernel k --signature "*fp8e4nv,*fp8e4nv,*bf16"
import tessera
import tessera.language as tl

@tessera.jit
def k(a_ptr, b_ptr, c_ptr):
    offs = tl.arange(0, 32)[:, None] * 32 + tl.arange(0, 32)[None, :]
    acc = tl.dot(tl.load(a_ptr + offs), tl.load(b_ptr + offs), out_dtype=tl.bfloat16)
    tl.store(c_ptr + offs, acc)
