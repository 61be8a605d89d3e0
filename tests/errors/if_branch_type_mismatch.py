# RUN: --kernel k --signature "*fp32,*fp16,i32"
import tessera
import tessera.language as tl

@tessera.jit
def k(a_ptr, b_ptr, flag):
    if flag > 0:
        v = tl.load(a_ptr)
    else:
        v = tl.load(b_ptr)
    tl.store(a_ptr, v)
