# RUN: --kernel k --signature "*fp8e4nv,*fp8e5,*fp32"
import tessera
import tessera.language as tl

@tessera.jit
def k(a_ptr, b_ptr, c_ptr):
    offs = tl.arange(0, 32)[:, None] * 32 + tl.arange(0, 32)[None, :]
    acc = tl.dot(tl.load(a_ptr + offs), tl.load(b_ptr + offs), max_num_imprecise_acc=64)
    tl.store(c_ptr + offs, acc)
