# RUN: --kernel k --signature "*fp32"
import tessera
import tessera.language as tl

class Config:
    pass


@tessera.jit
def k(x_ptr):
    tl.store(x_ptr, Config())
