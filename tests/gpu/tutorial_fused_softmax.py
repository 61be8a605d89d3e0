"""A persistent fused softmax written the way a Triton user writes one,
against Triton's APIs — `triton.runtime.driver.active.utils.
get_device_properties`, `kernel.warmup(...)`, `_init_handles()`, `n_regs`,
`metadata.shared`, `tl.range(..., num_stages=)`, `triton.next_power_of_2`, a
launch with positional constexprs — with only the import naming tessera
instead of triton. Our own code; test_triton_tutorials.py checks softmax()."""
import torch

import tessera as triton
import tessera.language as tl
from tessera.runtime import driver

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, rows, cols, BLOCK_SIZE: tl.constexpr,
                   num_stages: tl.constexpr):
    # Persistent: each program walks rows first, first + step, ...
    first = tl.program_id(0)
    step = tl.num_programs(0)
    for r in tl.range(first, rows, step, num_stages=num_stages):
        cols_idx = tl.arange(0, BLOCK_SIZE)
        valid = cols_idx < cols
        x = tl.load(in_ptr + r * in_stride + cols_idx, mask=valid, other=-float("inf"))
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(out_ptr + r * out_stride + cols_idx, e / tl.sum(e, axis=0), mask=valid)


props = driver.active.utils.get_device_properties(DEVICE.index)
SMS = props["multiprocessor_count"]
REGS_PER_SM = props["max_num_regs"]
SMEM_PER_SM = props["max_shared_mem"]
WARP = props["warpSize"]


def softmax(x):
    rows, cols = x.shape
    block = triton.next_power_of_2(cols)
    warps = 8
    stages = 4 if SMEM_PER_SM > 200000 else 2
    y = torch.empty_like(x)
    # Compile first to learn the kernel's registers and shared memory, then
    # launch as many programs as can be resident at once.
    compiled = softmax_kernel.warmup(y, x, x.stride(0), y.stride(0), rows, cols, BLOCK_SIZE=block,
                                     num_stages=stages, num_warps=warps, grid=(1, ))
    compiled._init_handles()
    resident = REGS_PER_SM // (compiled.n_regs * WARP * warps)
    if compiled.metadata.shared:
        resident = min(resident, SMEM_PER_SM // compiled.metadata.shared)
    programs = min(SMS * max(resident, 1), rows)
    softmax_kernel[(programs, 1, 1)](y, x, x.stride(0), y.stride(0), rows, cols, block, stages)
    return y


if __name__ == "__main__":
    x = torch.randn(1823, 781, device=DEVICE)
    print("matches torch:", torch.allclose(softmax(x), torch.softmax(x, axis=1)))
