"""GEMM epilogues against torch in float64 (issue 35): every epilogue the fusion benchmark times
(bias + GELU in both forms, a bias alone, a residual with a scale, a row scale), through tk.matmul
on every Hopper config (the TMA epilogue kernel: its residual tile is loaded before the K loop's
last wgmma wait, evict_first, and crosses into the accumulator's layout 16-bit,
tests/python/test_epilogue_loads_ptx.py) and the autotuned default, ragged and aligned shapes,
fp16 and bf16, outputs poisoned with NaN; and the user-written GEMM with a fused residual
(bench/user_matmul.py, the same compiler paths through pointer loads)."""
import pathlib
import sys

import pytest

import tessera
import tessera.language as tl
from gpu_helpers import assert_rel_err, poisoned

torch = pytest.importorskip("torch")
import tessera.kernels as tk  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
from user_matmul import user_matmul_residual  # noqa: E402

DT = {"fp16": torch.float16, "bf16": torch.bfloat16}
SHAPES = [(4096, 4096, 256), (1000, 777, 333), (129, 520, 72), (1, 300, 45), (2048, 1024, 4096)]


@tessera.jit
def ep_bias_gelu(acc, bias):
    y = acc + bias
    return 0.5 * y * (1.0 + tl.erf(y * 0.7071067811865476))


@tessera.jit
def ep_bias_gelu_tanh(acc, bias):
    y = acc + bias
    return 0.5 * y * (1.0 + tl.math.fast_tanhf(y * (0.7978845608028654 + 0.035677408136300125 * y * y)))


@tessera.jit
def ep_bias(acc, bias):
    return acc + bias


@tessera.jit
def ep_residual(acc, residual, alpha):
    return acc * alpha + residual


@tessera.jit
def ep_row_scale(acc, scale):
    return acc * scale


def cases(M, N, K, dtype):
    """name -> (epilogue, its arguments, float64 reference from the float64 product)."""
    t = DT[dtype]
    bias = torch.randn((N,), device="cuda", dtype=t)
    res = torch.randn((M, N), device="cuda", dtype=t)
    scale = torch.rand((M, 1), device="cuda", dtype=torch.float32) + 0.5
    F = torch.nn.functional
    return {
        "bias_gelu": (ep_bias_gelu, (bias,), lambda p: F.gelu(p + bias.double())),
        "bias_gelu_tanh": (ep_bias_gelu_tanh, (bias,), lambda p: F.gelu(p + bias.double(), approximate="tanh")),
        "bias": (ep_bias, (bias,), lambda p: p + bias.double()),
        "residual": (ep_residual, (res, 0.5), lambda p: p * 0.5 + res.double()),
        "row_scale": (ep_row_scale, (scale,), lambda p: p * scale.double()),
    }


def hopper_config_names():
    """Every config the TMA epilogue autotuner times: one tile a program, then the persistent forms
    (one program an SM looping over the tiles, a producer warpgroup)."""
    from tessera.kernels.matmul import _epilogue_tma_configs, matmul_config_name
    return [matmul_config_name(c) for c in _epilogue_tma_configs()]


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("M, N, K", SHAPES)
@pytest.mark.parametrize("epilogue", ["bias_gelu", "bias_gelu_tanh", "bias", "residual", "row_scale"])
def test_tk_matmul_epilogue_every_config(epilogue, M, N, K, dtype):
    torch.manual_seed(M + N + K)
    a = torch.randn((M, K), device="cuda", dtype=DT[dtype])
    b = torch.randn((K, N), device="cuda", dtype=DT[dtype])
    fn, args, ref_of = cases(M, N, K, dtype)[epilogue]
    ref = ref_of(a.double() @ b.double())
    tol = 2e-2 if dtype == "bf16" else 4e-3
    # Every config where the residual's loads move (and the row scale's column stays); two elsewhere.
    configs = hopper_config_names() if epilogue in ("residual", "row_scale") else [
        "128x256x64/w8/s4", "128x128x64/w8/s3", "128x256x64/w8/s3/persistent", "128x128x64/w4/s3/persistent"]
    for config in [None] + configs:
        out = poisoned((M, N), DT[dtype])
        kw = {} if config is None else {"config": config}
        tk.matmul(a, b, out=out, epilogue=fn, epilogue_args=args, **kw)
        assert_rel_err(out, ref, tol, f"{epilogue} {M}x{N}x{K} {dtype} {config or 'autotuned'}")


@pytest.mark.parametrize("M, N, K", [(1000, 777, 333), (512, 384, 256)])
def test_tk_matmul_residual_fp32_and_transposed(M, N, K):
    """An fp32 residual (too many registers to move above the wait) and a column-major one."""
    a = torch.randn((M, K), device="cuda", dtype=torch.float16)
    b = torch.randn((K, N), device="cuda", dtype=torch.float16)
    p = a.double() @ b.double()
    for res in (torch.randn((M, N), device="cuda", dtype=torch.float32),
                torch.randn((N, M), device="cuda", dtype=torch.float16).t()):
        for config in [None] + hopper_config_names():
            out = poisoned((M, N), torch.float16)
            kw = {} if config is None else {"config": config}
            try:
                tk.matmul(a, b, out=out, epilogue=ep_residual, epilogue_args=(res, 0.5), **kw)
            except tessera.OutOfResources as e:
                # A persistent form keeps its ring while the epilogue converts the fp32 tile: forced,
                # it may not fit (the autotuner skips it), and says so.
                assert config and config.endswith(("/persistent", "/pingpong")) and "shared memory" in str(e), (config, e)
                continue
            assert_rel_err(out, p * 0.5 + res.double(), 4e-3, f"residual {res.dtype} {res.stride()} {config}")


USER_CONFIGS = [(128, 256, 64, 8, 3), (128, 128, 64, 4, 3), (64, 64, 64, 4, 3), (128, 128, 32, 4, 4)]


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("M, N, K", SHAPES)
def test_user_gemm_with_a_residual(M, N, K, dtype):
    torch.manual_seed(M * 3 + N + K)
    a = torch.randn((M, K), device="cuda", dtype=DT[dtype])
    b = torch.randn((K, N), device="cuda", dtype=DT[dtype])
    r = torch.randn((M, N), device="cuda", dtype=DT[dtype])
    ref = a.double() @ b.double() + r.double()
    for bm, bn, bk, warps, stages in USER_CONFIGS:
        c = poisoned((M, N), DT[dtype])
        grid = (triton_cdiv(M, bm) * triton_cdiv(N, bn),)
        user_matmul_residual[grid](a, b, c, r, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                   c.stride(0), c.stride(1), r.stride(0), r.stride(1),
                                   BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=warps, num_stages=stages)
        assert_rel_err(c, ref, 2e-2 if dtype == "bf16" else 4e-3, f"user residual {M}x{N}x{K} {bm}x{bn}x{bk}")


def triton_cdiv(a, b):
    return (a + b - 1) // b


# ------------------------------------------------ erf of f16 / bf16 (MathOps.cpp, halfPrecisionErf)

@tessera.jit
def erf_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.erf(tl.load(x_ptr + offs, mask=mask)), mask=mask)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_half_precision_erf_every_input(dtype):
    """Every one of the 65536 bit patterns: the 16-bit erf equals float32 erf rounded to the type
    (torch: erff, then the rounding), NaN where the input is NaN, +-1 at +-inf. Where they differ
    (one ulp), the true erf (float64) must lie within 3e-7 of the midpoint between the two results,
    where float32 (erff's 2 ulps, ex2.approx's) cannot decide: f16 +-0.21436 on the host, a few more
    with the hardware's ex2.approx (tests/python/test_half_precision_erf.py: the same PTX emulated)."""
    t = DT[dtype]
    x = torch.arange(-32768, 32768, device="cuda", dtype=torch.int32).to(torch.int16).view(t)
    y = torch.empty_like(x)
    erf_kernel[(triton_cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
    ref = torch.erf(x.float()).to(t)
    nan = torch.isnan(x)
    assert torch.isnan(y[nan]).all()
    ok = ~nan
    differ = (y[ok] != ref[ok]).nonzero().flatten()
    assert differ.numel() <= 8, (x[ok][differ][:8], y[ok][differ][:8], ref[ok][differ][:8])
    if differ.numel():
        ulps = (y[ok][differ].view(torch.int16).int() - ref[ok][differ].view(torch.int16).int()).abs()
        assert ulps.max().item() <= 1
        xs = x[ok][differ].double()
        midpoint = (y[ok][differ].double() + ref[ok][differ].double()) / 2
        exact = torch.erf(xs)  # float64
        near = ((exact - midpoint).abs() / exact.abs()).max().item()
        assert near < 3e-7, (xs, y[ok][differ], ref[ok][differ], near)
    assert (y[torch.isinf(x)] == torch.sign(x[torch.isinf(x)].float()).to(t)).all()


@tessera.elementwise
def bias_gelu(x, b):
    y = x + b
    return 0.5 * y * (1.0 + tl.erf(y * 0.7071067811865476))


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_elementwise_bias_gelu_matches_torch_in_float64(dtype):
    """The elementwise kernel issue 35 times (bench/fusion.py), ragged shapes included."""
    for M, N in ((16384, 8192), (1000, 777), (3, 5)):
        x = torch.randn((M, N), device="cuda", dtype=DT[dtype])
        b = torch.randn((N,), device="cuda", dtype=DT[dtype])
        y = bias_gelu(x, b)
        ref = torch.nn.functional.gelu(x.double() + b.double())
        assert_rel_err(y, ref, 2e-2 if dtype == "bf16" else 4e-3, f"bias+gelu {M}x{N} {dtype}")
