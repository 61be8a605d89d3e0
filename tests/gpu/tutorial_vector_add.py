"""A vector add written the way a Triton user writes one (Triton's APIs:
`triton.runtime.driver.active`, `@triton.jit`, a grid callable of the
meta-parameters, `triton.cdiv`), with only the import naming tessera instead
of triton. Our own code; test_triton_tutorials.py checks add() against torch."""
import torch

import tessera as triton
import tessera.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def add_kernel(a_ptr, b_ptr, c_ptr, count, BLOCK_SIZE: tl.constexpr):
    start = tl.program_id(axis=0) * BLOCK_SIZE
    idx = start + tl.arange(0, BLOCK_SIZE)
    inside = idx < count
    a = tl.load(a_ptr + idx, mask=inside)
    b = tl.load(b_ptr + idx, mask=inside)
    tl.store(c_ptr + idx, a + b, mask=inside)


def add(a: torch.Tensor, b: torch.Tensor):
    c = torch.empty_like(a)
    assert a.device == DEVICE and b.device == DEVICE
    count = c.numel()
    add_kernel[lambda meta: (triton.cdiv(count, meta["BLOCK_SIZE"]), )](a, b, c, count, BLOCK_SIZE=1024)
    return c


if __name__ == "__main__":
    a = torch.rand(98432, device=DEVICE)
    b = torch.rand(98432, device=DEVICE)
    print("max difference from torch:", torch.max(torch.abs(add(a, b) - (a + b))).item())
