"""tf32 (fp32 inputs, mma m16n8k8) and int8 (-> int32, mma m16n8k32) GEMMs on
the GPU against torch in float64 / int64: square, ragged and transposed B,
pipelined (num_stages 2-4). The kernel is tests/python/mma_kernels.py."""
import pathlib
import sys

import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))
from mma_kernels import gemm  # noqa: E402

import tessera  # noqa: E402

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

SHAPES = [(128, 128, 128), (256, 512, 128), (1000, 3000, 700), (77, 45, 300)]


def launch(a, b, c, BM, BN, BK, warps, stages, int_acc):
    M, K = a.shape
    N = b.shape[1]
    gemm[(tessera.cdiv(M, BM), tessera.cdiv(N, BN))](
        a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BM=BM, BN=BN, BK=BK, INT_ACC=int_acc, num_warps=warps, num_stages=stages)


@pytest.mark.parametrize("M, N, K", SHAPES)
@pytest.mark.parametrize("transposed_b", [False, True])
def test_tf32_gemm(M, N, K, transposed_b):
    a = torch.randn((M, K), device="cuda")
    b = torch.randn((N, K), device="cuda").t() if transposed_b else torch.randn((K, N), device="cuda")
    c = torch.full((M, N), float("nan"), device="cuda")
    launch(a, b, c, 128, 128, 32, 8, 3, False)
    ref = a.double() @ b.double()
    assert ((c.double() - ref).norm() / ref.norm()).item() <= 1e-3


@pytest.mark.parametrize("M, N, K", SHAPES)
@pytest.mark.parametrize("stages", [2, 3, 4])
def test_int8_gemm_is_exact(M, N, K, stages):
    a = torch.randint(-128, 128, (M, K), device="cuda", dtype=torch.int8)
    b = torch.randint(-128, 128, (K, N), device="cuda", dtype=torch.int8)
    c = torch.full((M, N), -7, device="cuda", dtype=torch.int32)
    launch(a, b, c, 128, 128, 64, 8, stages, True)
    ref = a.cpu().long() @ b.cpu().long()
    assert torch.equal(c.cpu().long(), ref)


@pytest.mark.parametrize("dtype, out, instruction", [
    ("fp32", "fp32", "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"),
    ("i8", "i32", "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32")])
def test_the_gpu_target_gets_tensor_cores(dtype, out, instruction):
    sig = f"*{dtype}:16,*{dtype}:16,*{out}:16,i32:16,i32:16,i32:16,i32:16,i32:1,i32:16,i32:1,i32:16,i32:1"
    k = tessera.compile(gemm, sig, {"BM": 128, "BN": 128, "BK": 32, "INT_ACC": int(dtype == "i8")}, num_warps=8,
                        num_stages=3, target="")
    assert instruction in k.asm["ptx"] and "cp.async.cg.shared.global" in k.asm["ptx"]
