# RUN: --kernel k --signature "*fp16,*bf16"
import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr, out_ptr):
    offs = tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :]
    a = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.dot(a, a, out_dtype=tl.bfloat16))
