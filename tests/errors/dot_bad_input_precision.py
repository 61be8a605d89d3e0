# RUN: --kernel k --signature "*fp32"
import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr):
    offs = tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :]
    a = tl.load(x_ptr + offs)
    tl.store(x_ptr + offs, tl.dot(a, a, input_precision="bf16x4"))
