# RUN: --kernel k --signature "*fp16,*i16" --arch sm_90a
import tessera
import tessera.language as tl

@tessera.jit
def k(h_ptr, i_ptr):
    offs = tl.arange(0, 64)
    tl.atomic_add(h_ptr + offs, 1.0)
    tl.atomic_cas(i_ptr + offs, 0, 1)
    tl.atomic_xchg(h_ptr + offs, 2.0)
