# RUN: --kernel k --signature "*fp32"
import tessera
import tessera.language as tl

@tessera.jit
def k(dst):
    x = tl.arange(0, 8)
    y = x[None, None:4]
