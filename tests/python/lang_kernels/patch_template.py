"""A kernel template that test_unsafe_update_src.py patches, as Triton's test_core patch_kernel does."""
import tessera
import tessera.language as tl

SCALE = 3


@tessera.jit
def template_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = GENERATE_TEST_HERE
    tl.store(out_ptr + offs, y)
