# RUN: --kernel k --signature "*fp32"
import tessera
import tessera.language as tl

@tessera.jit
def k(out_ptr):
    offs = tl.arange(0, 16)
    tl.store(out_ptr + offs, tl.randn(1.5, offs))
