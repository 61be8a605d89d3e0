# RUN: --kernel k --signature "*fp32"
import tessera
import tessera.language as tl


@tessera.jit
def k(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    tl.store(x_ptr + tl.arange(0, 16), x.to(tl.float8e4b8).to(tl.float32))
