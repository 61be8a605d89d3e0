# RUN: --kernel k --signature "*i32"
import tessera
import tessera.language as tl

@tessera.jit
def k(ptr):
    desc = tl.make_tensor_descriptor(ptr, [128, 128], [128, 1], [1, 2])
    desc.load([0, 0])
