# RUN: --kernel k --signature "*fp16,i32"
import tessera
import tessera.language as tl

@tessera.jit
def k(ptr, stride):
    desc = tl.make_tensor_descriptor(ptr, [64, 64], [64, stride], [16, 16])
    desc.load([0, 0])
