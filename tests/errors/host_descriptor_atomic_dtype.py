# RUN: --kernel k --signature "tensordesc<fp16[16,16]>" --arch sm_80
import tessera
import tessera.language as tl

@tessera.jit
def k(desc):
    desc.atomic_max([0, 0], tl.zeros([16, 16], tl.float16))
