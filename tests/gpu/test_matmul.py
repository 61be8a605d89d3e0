"""kernels/matmul.py (tensor cores on sm_80+) against torch.matmul in
float64: fp16/bf16 inputs, fp32 accumulation, ragged M/N/K (not multiples
of the block), 4 and 8 warps. ||out - ref|| / ||ref|| <= 1e-2.
Tensor cores are on by default; this module sets TESSERA_MMA=1 explicitly
(and the disk cache off, so every run compiles what it tests)."""
import os

import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402
from gpu_helpers import assert_rel_err, poisoned  # noqa: E402
from kernels.matmul import matmul_kernel  # noqa: E402

SHAPES = [(128, 128, 32), (256, 256, 256), (512, 384, 640), (1000, 777, 333), (129, 65, 17), (1, 300, 45), (2048, 2048, 512)]
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


@pytest.fixture(autouse=True, scope="module")
def tensor_cores():
    saved = {k: os.environ.get(k) for k in ("TESSERA_MMA", "TESSERA_CACHE")}
    os.environ["TESSERA_MMA"], os.environ["TESSERA_CACHE"] = "1", "0"
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def matmul(a, b, block=(128, 128, 32), num_warps=8, out_dtype=None):
    M, K = a.shape
    _, N = b.shape
    c = poisoned((M, N), out_dtype or a.dtype)
    bm, bn, bk = block
    grid = (tessera.cdiv(M, bm) * tessera.cdiv(N, bn),)
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
                        num_warps=num_warps)
    torch.cuda.synchronize()
    return c


@pytest.mark.parametrize("dtype", list(DTYPES), ids=list(DTYPES))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("config", [((128, 128, 32), 8), ((64, 64, 32), 4), ((128, 64, 64), 4)],
                         ids=["128x128x32w8", "64x64x32w4", "128x64x64w4"])
def test_matmul(shape, dtype, config):
    M, N, K = shape
    torch.manual_seed(0)
    a = torch.randn((M, K), device="cuda").to(DTYPES[dtype])
    b = torch.randn((K, N), device="cuda").to(DTYPES[dtype])
    c = matmul(a, b, *config)
    ref = a.double() @ b.double()
    assert_rel_err(c, ref, 1e-2, f"matmul {shape} {dtype} {config}")


def test_matmul_fp32_output_and_transposed_b():
    a = torch.randn((300, 200), device="cuda").half()
    bt = torch.randn((150, 200), device="cuda").half()
    b = bt.t()  # K-major B: strides (1, 200)
    c = matmul(a, b, out_dtype=torch.float32)
    assert_rel_err(c, a.double() @ b.double(), 1e-2, "fp32 out, transposed b")


def test_matmul_runs_on_tensor_cores():
    a = torch.randn((256, 64), device="cuda").half()
    b = torch.randn((64, 256), device="cuda").half()
    c = torch.empty((256, 256), device="cuda").half()
    k = matmul_kernel.warmup(a, b, c, 256, 256, 64, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                             c.stride(0), c.stride(1), BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8,
                             num_warps=8, grid=(4,))
    ptx = k.asm["ptx"]
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in ptx and "ldmatrix" in ptx
