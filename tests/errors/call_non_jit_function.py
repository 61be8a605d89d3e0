# RUN: --kernel k --signature "*fp32"
import tessera
import tessera.language as tl

def helper(x):
    return x + 1

@tessera.jit
def k(x_ptr):
    tl.store(x_ptr, helper(tl.load(x_ptr)))
