# RUN: --kernel k --signature "*fp32" --constexpr bias_ptr=None
import tessera
import tessera.language as tl


@tessera.jit
def k(x_ptr, bias_ptr):
    offs = tl.arange(0, 16)
    tl.store(x_ptr + offs, tl.load(bias_ptr + offs))
