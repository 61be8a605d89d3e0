# RUN: --kernel k --signature "*fp32"
import tessera
import tessera.language as tl

@tessera.jit
def k(ptr):
    desc = tl.make_tensor_descriptor(ptr, [2, 2, 2, 2, 2, 16], [512, 256, 128, 64, 16, 1], [2, 2, 2, 2, 2, 16])
    desc.load([0, 0, 0, 0, 0, 0])
