# RUN: --kernel k --signature "tensordesc<fp16[32,64]>,*fp16:16"
import tessera
import tessera.language as tl


@tessera.jit
def k(desc, out_ptr):
    x = desc.load([0, 0, 0])
    tl.store(out_ptr + tl.arange(0, 32)[:, None] * 64 + tl.arange(0, 64)[None, :], x)
