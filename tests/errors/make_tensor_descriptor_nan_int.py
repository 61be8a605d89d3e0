# RUN: --kernel k --signature "*i32"
import tessera
import tessera.language as tl

@tessera.jit
def k(ptr):
    desc = tl.make_tensor_descriptor(ptr, [64, 64], [64, 1], [16, 16], padding_option="nan")
    desc.load([0, 0])
