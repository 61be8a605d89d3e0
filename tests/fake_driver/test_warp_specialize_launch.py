"""A warp-specialised kernel (tl.range(..., warp_specialize=True), docs/tma.md) launches with
num_warps + 4 warps: the consumers its layouts were assigned for, then the producer warpgroup.
Compiled for real (kernels/matmul.py's matmul_tma_kernel), launched on the fake driver."""
import torch

import tessera
from tessera.kernels import _files

matmul_tma_kernel = _files.load("matmul").matmul_tma_kernel

P = 0x7F0000001000


def desc(shape, block):
    return tessera.TensorDescriptor(torch.Tensor(P, torch.bfloat16, device="cuda"), list(shape), [shape[1], 1],
                                    list(block))


def test_the_producer_warpgroup_is_launched_after_the_consumers(fake):
    c = torch.Tensor(P, torch.bfloat16, device="cuda")
    for ws, warps in ((False, 8), (True, 8), (True, 4)):
        bn = 256 if warps == 8 else 128
        matmul_tma_kernel[(4,)](desc((256, 64), (128, 64)), desc((64, 512), (64, bn)), c, 256, 512, 64, 512, 1,
                                BLOCK_M=128, BLOCK_N=bn, BLOCK_K=64, GROUP_M=8, WARP_SPECIALIZE=ws,
                                num_warps=warps, num_stages=3)
        assert fake.last()["block"] == (32 * (warps + 4 * ws), 1, 1), (ws, warps)
