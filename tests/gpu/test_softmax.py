"""kernels/softmax.py against torch in float64: fp32 and bf16 inputs, n_cols
not a power of two, several rows per program (persistent programs), strided
rows. ||out - ref|| / ||ref||: fp32 <= 1e-5, bf16 <= 1e-2."""
import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402
from gpu_helpers import assert_rel_err, poisoned  # noqa: E402
from kernels.softmax import softmax_kernel  # noqa: E402

SHAPES = [(1, 1), (7, 1000), (128, 781), (1823, 781), (300, 129), (64, 4096), (3, 8192), (1000, 97)]
TOLERANCE = {torch.float32: 1e-5, torch.bfloat16: 1e-2}


def num_warps_for(block):
    return 4 if block < 2048 else 8 if block < 4096 else 16


def run_softmax(x, out, programs):
    n_rows, n_cols = x.shape
    block = tessera.next_power_of_2(n_cols)
    softmax_kernel[(programs,)](out, x, x.stride(0), out.stride(0), n_rows, n_cols,
                                BLOCK_SIZE=block, num_warps=num_warps_for(block))
    torch.cuda.synchronize()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("rows_per_program", [1, 3, 64])
def test_softmax(shape, dtype, rows_per_program):
    n_rows, n_cols = shape
    x = (torch.randn(shape, device="cuda", dtype=torch.float32) * 4).to(dtype)
    out = poisoned(shape, dtype)
    run_softmax(x, out, programs=tessera.cdiv(n_rows, rows_per_program))
    ref = torch.softmax(x.double(), dim=1)
    assert_rel_err(out, ref, TOLERANCE[dtype], f"softmax {shape} {dtype}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_softmax_strided_rows(dtype):
    n_rows, n_cols, pitch = 200, 781, 1024
    big_in = torch.randn(n_rows, pitch, device="cuda").to(dtype)
    x = big_in[:, 5:5 + n_cols]  # row stride 1024, rows start unaligned
    big_out = poisoned((n_rows, pitch + 3), dtype)
    out = big_out[:, :n_cols]
    run_softmax(x, out, programs=50)
    assert_rel_err(out, torch.softmax(x.double(), dim=1), TOLERANCE[dtype], "strided softmax")
    assert torch.isnan(big_out[:, n_cols:].float()).all(), "the kernel wrote past n_cols"


def test_softmax_of_extreme_values():
    x = torch.tensor([[1e4, 0.0, -1e4, 3.0], [-1e30, -1e30, -1e30, -1e30]], device="cuda")
    out = poisoned(x.shape, torch.float32)
    run_softmax(x, out, programs=2)
    assert_rel_err(out, torch.softmax(x.double(), dim=1), 1e-5, "extreme softmax")
