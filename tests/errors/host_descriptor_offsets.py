# RUN: --kernel k --signature "tensordesc<fp32[16,16]>" --arch sm_90a
import tessera
import tessera.language as tl

@tessera.jit
def k(desc):
    desc.store([0], tl.zeros([16, 16], tl.float32))
