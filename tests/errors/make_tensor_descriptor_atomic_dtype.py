# RUN: --kernel k --signature "*fp32"
import tessera
import tessera.language as tl

@tessera.jit
def k(ptr):
    desc = tl.make_tensor_descriptor(ptr, [64, 64], [64, 1], [16, 16])
    desc.atomic_max([0, 0], tl.zeros([16, 16], dtype=tl.float32))
