"""tessera.kernels.softmax and tessera.kernels.layer_norm against torch in
float64, on the benchmark shapes (bench/softmax.py, bench/layernorm.py),
ragged rows (N = 1000, 3000: no 16-element alignment, so scalar accesses),
rows longer than a register block (the online / looped kernels; 16-bit rows of
16385..32768 with the last block kept in registers), and both
kernels forced on every shape. ||out - ref|| / ||ref||: fp32 <= 1e-5,
bf16/fp16 <= 1e-2 (outputs rounded to 8/11 bits)."""
import pytest

torch = pytest.importorskip("torch")

import tessera.kernels as tk  # noqa: E402
from gpu_helpers import assert_rel_err  # noqa: E402

BENCH_SHAPES = [(16384, 1024), (8192, 4096), (4096, 16384), (2048, 32768)]
RAGGED_SHAPES = [(4096, 1000), (1031, 3000), (7, 1)]
LONG_SHAPES = [(64, 50000), (5, 131072 + 3)]
# 16-bit rows of 16385..32768: the online kernel keeps its last (here ragged) block in registers
KEEP_LAST_SHAPES = [(33, 16385), (64, 20000), (16, 32767)]
DTYPES = [torch.float32, torch.bfloat16, torch.float16]
TOLERANCE = {torch.float32: 1e-5, torch.bfloat16: 1e-2, torch.float16: 1e-2}


def ids(shape):
    return f"{shape[0]}x{shape[1]}"


def dtype_id(d):
    return str(d).replace("torch.", "")


def random_input(shape, dtype, scale=4.0):
    return (torch.randn(shape, device="cuda", dtype=torch.float32) * scale).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("shape", BENCH_SHAPES + RAGGED_SHAPES + LONG_SHAPES + KEEP_LAST_SHAPES, ids=ids)
def test_softmax(shape, dtype):
    x = random_input(shape, dtype)
    out = tk.softmax(x)
    assert out.dtype == dtype and out.shape == x.shape
    assert_rel_err(out, torch.softmax(x.double(), dim=-1), TOLERANCE[dtype], f"softmax {shape} {dtype}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=dtype_id)
@pytest.mark.parametrize("shape", BENCH_SHAPES + RAGGED_SHAPES, ids=ids)
def test_softmax_online_kernel(shape, dtype):
    x = random_input(shape, dtype)
    out = tk.softmax(x, online=True, block_size=1024)
    assert_rel_err(out, torch.softmax(x.double(), dim=-1), TOLERANCE[dtype], f"online softmax {shape} {dtype}")


@pytest.mark.parametrize("programs", [1, 7, None])
def test_softmax_grid_sizes(programs):
    x = random_input((300, 781), torch.float32)
    out = tk.softmax(x, programs=programs)
    assert_rel_err(out, torch.softmax(x.double(), dim=-1), 1e-5, f"softmax with {programs} programs")


def test_softmax_of_extreme_values_and_leading_dims():
    x = torch.tensor([[1e4, 0.0, -1e4, 3.0], [-1e30, -1e30, -1e30, -1e30]], device="cuda")
    assert_rel_err(tk.softmax(x), torch.softmax(x.double(), dim=-1), 1e-5, "extreme softmax")
    y = random_input((3, 5, 2048), torch.bfloat16)
    assert_rel_err(tk.softmax(y), torch.softmax(y.double(), dim=-1), 1e-2, "3-D softmax")
    z = random_input((100, 2000), torch.float32)[:, 7:1031]  # unaligned, strided rows
    assert_rel_err(tk.softmax(z), torch.softmax(z.double(), dim=-1), 1e-5, "strided softmax")


def layer_norm_reference(x, w, b, eps):
    x64 = x.double()
    mean = x64.mean(dim=-1)
    var = x64.var(dim=-1, unbiased=False)
    rstd = 1.0 / torch.sqrt(var + eps)
    y = torch.nn.functional.layer_norm(x64, (x.shape[-1],), w.double(), b.double(), eps)
    return y, mean, rstd


def check_layer_norm(shape, dtype, **kwargs):
    n = shape[-1]
    x = random_input(shape, dtype, scale=2.0) + 0.5
    w = random_input((n,), dtype, scale=1.0)
    b = random_input((n,), dtype, scale=1.0)
    eps = 1e-5
    y, mean, rstd = tk.layer_norm(x, w, b, eps, return_stats=True, **kwargs)
    ref_y, ref_mean, ref_rstd = layer_norm_reference(x, w, b, eps)
    assert y.dtype == dtype and y.shape == x.shape
    tol = TOLERANCE[dtype]
    assert_rel_err(y, ref_y, tol, f"layer_norm y {shape} {dtype}")
    assert_rel_err(mean, ref_mean.float().reshape(-1), 1e-5, f"layer_norm mean {shape} {dtype}")
    assert_rel_err(rstd, ref_rstd.float().reshape(-1), 1e-4, f"layer_norm rstd {shape} {dtype}")


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("shape", BENCH_SHAPES + RAGGED_SHAPES + LONG_SHAPES, ids=ids)
def test_layer_norm(shape, dtype):
    check_layer_norm(shape, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=dtype_id)
@pytest.mark.parametrize("shape", [(512, 1024), (300, 3000), (64, 32768)], ids=ids)
def test_layer_norm_looped_kernel(shape, dtype):
    check_layer_norm(shape, dtype, looped=True, block_size=1024)


def test_layer_norm_matches_torch_module():
    x = random_input((8, 16, 768), torch.float32)
    ln = torch.nn.LayerNorm(768, device="cuda")
    with torch.no_grad():
        ln.weight.normal_()
        ln.bias.normal_()
        ref = ln(x.double().float())
    assert_rel_err(tk.layer_norm(x, ln.weight.detach(), ln.bias.detach(), ln.eps), ref.double(), 1e-5, "LayerNorm")
