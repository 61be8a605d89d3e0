# RUN: --kernel k --signature "*fp32"
import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr):
    idtype = tl.core.get_int_dtype(bitwidth=24, signed=True)
    tl.store(x_ptr, tl.load(x_ptr).to(idtype).to(tl.float32))
