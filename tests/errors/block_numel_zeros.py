# RUN: --kernel k --signature "*fp32"
import tessera
import tessera.language as tl

# Triton refuses blocks of more than 2^20 elements (TRITON_MAX_TENSOR_NUMEL);
# codegen would unroll 2^32 registers a thread.
@tessera.jit
def k(x_ptr):
    z = tl.zeros((65536, 65536), dtype=tl.float32)
    tl.store(x_ptr, tl.sum(z))
