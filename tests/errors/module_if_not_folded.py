# RUN: --kernel k --signature "*fp32"
import torch
import tessera
import tessera.language as tl

if torch.cuda.is_available():
    ACC = tl.float32
else:
    ACC = tl.float64


@tessera.jit
def k(x_ptr):
    tl.store(x_ptr, tl.zeros([1], dtype=ACC).sum())
