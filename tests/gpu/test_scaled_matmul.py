"""tessera.kernels.scaled_matmul on the GPU at real sizes against float64 of the dequantised
inputs: per-tensor, per-row / per-column and 1 x 128 / 128 x 128 block scales; the TMA kernel
(row-major A, column-major B), the cp.async kernel (any other strides, ragged shapes), the
persistent kernel; bias and epilogue; e4m3 / e5m2 pairs; bf16 / fp16 / fp32 outputs.

Bounds: the products are exact; sums are f32 (K ulps of 2^-22 with room), and on Hopper's fp8
wgmma the products summed in reduced precision before a promotion to f32 (all K for outer
scales, as Triton's default; BLOCK_K for block scales) may carry 2^-13 of their magnitude each;
then the output's rounding. The same kernel (kernels/matmul.py's scaled_matmul_kernel) compiled
by the real Triton runs on the same data where Triton is installed: it must meet the bound too,
and tessera's error must be within twice Triton's. torch._scaled_mm's error is printed beside."""
import importlib
import pathlib

import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402
import tessera.language as tl  # noqa: E402
import tessera.kernels as tk  # noqa: E402
import gpu_helpers  # noqa: E402

skm = importlib.import_module("tessera.kernels.scaled_matmul")
ROOT = pathlib.Path(__file__).resolve().parents[2]
TORCH = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
OUT = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
OUT_ULP = {"bf16": 2.0 ** -8, "fp16": 2.0 ** -11, "fp32": 2.0 ** -24}


def native_fp8():
    return torch.cuda.get_device_capability() == (9, 0)


def reduced_span(scaling, K, block_k):
    """Products summed in the fp8 tensor cores' reduced precision before an f32 promotion."""
    if not native_fp8() and torch.cuda.get_device_capability() != (8, 9):
        return 0  # sm_80: widened to f16, f32 sums
    return min(block_k, K) if scaling == "block" else K


def make_scales(granularity, M, N, K, g):
    kb, nb = -(-K // 128), -(-N // 128)

    def uniform(*shape):  # powers of two and not: 0.5 .. 2
        return torch.rand(shape, device="cuda", generator=g) * 1.5 + 0.5
    sa, sb = {"tensor": (torch.tensor(0.75, device="cuda"), torch.tensor([1.25], device="cuda")),
              "row": (uniform(M, 1), uniform(1, N)),
              "block": (uniform(M, kb), uniform(kb, nb))}[granularity]
    return sa.float(), sb.float()


def dequantised(a, b, sa, sb, granularity):
    M, K = a.shape
    N = b.shape[1]
    if granularity == "block":
        da = sa.double().repeat_interleave(128, 1)[:, :K]
        db = sb.double().repeat_interleave(128, 0).repeat_interleave(128, 1)[:K, :N]
    else:
        da, db = sa.double().reshape(-1, 1), sb.double().reshape(1, -1)
    return a.double() * da, b.double() * db


def bound(A, B, ref, K, span, out):
    magnitude = A.abs() @ B.abs()
    return magnitude * (K * 2.0 ** -22 + span * 2.0 ** -13) + OUT_ULP[out] * ref.abs() * 1.01 + 1e-30


@pytest.fixture(scope="module")
def triton_matmul(tmp_path_factory):
    module = gpu_helpers.kernels_through_triton(ROOT / "kernels/matmul.py", tmp_path_factory.mktemp("triton"))
    if module is None:
        pytest.skip("the real Triton is not installed (the comparison needs it)")
    return module


def run_triton(module, a, b, sa, sb, granularity, c, config, bias=None):
    """kernels/matmul.py's scaled_matmul_kernel through Triton, strides and scales as the wrapper gives them."""
    M, K = a.shape
    N = b.shape[1]
    A = skm._Operand(a, "a")
    scaling, sam, sak, sbk, sbn, _, _ = skm._check_scales(sa, sb, A, M, N, K)
    kw = config.kwargs
    grid = (-(-M // kw["BLOCK_M"]) * -(-N // kw["BLOCK_N"]),)
    module.scaled_matmul_kernel[grid](
        a, b, c, sa, sb, bias if bias is not None else c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
        c.stride(0), c.stride(1), sam, sak, sbk, sbn, 1, *([0] * 12), SCALING=scaling, SCALE_K=128, SCALE_N=128,
        HAS_BIAS=bias is not None, **config.all_kwargs())


SHAPES = [(2048, 3072, 4096), (4096, 4096, 4096), (1000, 1500, 704)]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("granularity", ["tensor", "row", "block"])
@pytest.mark.parametrize("pair", [("e4m3", "e4m3"), ("e5m2", "e4m3")], ids="x".join)
def test_scaled_matmul_against_float64_and_triton(pair, granularity, shape, triton_matmul):
    M, N, K = shape
    g = torch.Generator(device="cuda").manual_seed(M + N + K)
    a = (torch.randn((M, K), device="cuda", generator=g) * 3).to(TORCH[pair[0]])
    w = (torch.randn((N, K), device="cuda", generator=g) * 3).to(TORCH[pair[1]])
    b = w.t()  # column-major: the TMA kernel on Hopper
    sa, sb = make_scales(granularity, M, N, K, g)
    A, B = dequantised(a, b, sa, sb, granularity)
    ref = A @ B
    c = gpu_helpers.poisoned((M, N), torch.float32)
    tk.scaled_matmul(a, b, sa, sb, torch.float32, out=c, autotune=False)
    config = skm.scaled_matmul_configs("block" if granularity == "block" else "outer")[0]
    span = reduced_span(granularity, K, config.kwargs["BLOCK_K"])
    limit = bound(A, B, ref, K, span, "fp32")
    theirs = gpu_helpers.poisoned((M, N), torch.float32)
    # Triton at a tile that surely fits it (the same BLOCK_K: the same sums along K).
    triton_config = next(c for c in skm.scaled_matmul_configs("block" if granularity == "block" else "outer")
                         if c.kwargs["BLOCK_M"] * c.kwargs["BLOCK_N"] <= 128 * 128 and c.num_stages == 3)
    run_triton(triton_matmul, a, b, sa, sb, granularity, theirs, triton_config)
    torch.cuda.synchronize()
    assert ((theirs.double() - ref).abs() <= limit).all(), "Triton exceeds the bound: the bound is wrong"
    assert ((c.double() - ref).abs() <= limit).all(), f"max error {(c.double() - ref).abs().max().item():.3g}"
    gpu_helpers.assert_error_as_triton(f"scaled_matmul {pair} {granularity} {shape}", c, theirs, ref,
                                       floor=2.0 ** -22 * ref.abs().max().item())
    if granularity != "block" and pair[1] == "e4m3":  # torch._scaled_mm takes these
        try:
            cublas = torch._scaled_mm(a, b, scale_a=sa.reshape(-1, 1) if sa.numel() > 1 else sa.reshape(()),
                                      scale_b=sb.reshape(1, -1) if sb.numel() > 1 else sb.reshape(()),
                                      out_dtype=torch.float32)
        except (RuntimeError, TypeError) as e:  # older torch: no row-wise scales
            print("torch._scaled_mm:", e)
        else:
            m, avg = gpu_helpers.error_against(cublas, ref)
            print(f"  torch._scaled_mm: max / mean error {m:.3g} / {avg:.3g}")


@pytest.mark.parametrize("kernel", ["tma", "cpasync", "persistent", "row_major_b"])
@pytest.mark.parametrize("granularity", ["tensor", "row", "block"])
@pytest.mark.parametrize("out", ["bf16", "fp16", "fp32"])
def test_scaled_matmul_kernels_and_outputs(out, granularity, kernel):
    M, N, K = 1536, 2304, 2048
    g = torch.Generator(device="cuda").manual_seed(3)
    a = (torch.randn((M, K), device="cuda", generator=g) * 2).to(torch.float8_e4m3fn)
    b = (torch.randn((N, K), device="cuda", generator=g) * 2).to(torch.float8_e4m3fn).t()
    if kernel == "row_major_b":
        b = b.contiguous()  # N contiguous: staged transposed by the dot
    sa, sb = make_scales(granularity, M, N, K, g)
    bias = torch.randn(N, device="cuda", generator=g).to(OUT[out] if out != "fp32" else torch.bfloat16)
    c = gpu_helpers.poisoned((M, N), OUT[out])
    tk.scaled_matmul(a, b, sa, sb, OUT[out], bias=bias, out=c, autotune=False, tma=kernel != "cpasync",
                     persistent=kernel == "persistent")
    torch.cuda.synchronize()
    A, B = dequantised(a, b, sa, sb, granularity)
    ref = A @ B + bias.double()
    config = skm.scaled_matmul_configs("block" if granularity == "block" else "outer", bias=True)[0]
    limit = bound(A, B, ref, K, reduced_span(granularity, K, config.kwargs["BLOCK_K"]), out)
    err = (c.double() - ref).abs()
    assert (err <= limit + 2.0 ** -24).all(), f"max error {err.max().item():.3g}"


@pytest.mark.parametrize("granularity", ["tensor", "block"])
def test_persistent_fp32_without_bias_fits_shared_memory(granularity):
    # With no bias the outer table starts at 128 x 256, whose fp32 C tile leaves no room for two
    # stages in the persistent kernel: the default moves on to a config that fits.
    M, N, K = 1024, 2048, 1024
    g = torch.Generator(device="cuda").manual_seed(11)
    a = torch.randn((M, K), device="cuda", generator=g).to(torch.float8_e4m3fn)
    b = torch.randn((N, K), device="cuda", generator=g).to(torch.float8_e4m3fn).t()
    sa, sb = make_scales(granularity, M, N, K, g)
    c = gpu_helpers.poisoned((M, N), torch.float32)
    tk.scaled_matmul(a, b, sa, sb, torch.float32, out=c, autotune=False, persistent=True)
    torch.cuda.synchronize()
    A, B = dequantised(a, b, sa, sb, granularity)
    ref = A @ B
    limit = bound(A, B, ref, K, reduced_span(granularity, K, 128), "fp32")
    err = (c.double() - ref).abs()
    assert (err <= limit + 2.0 ** -24).all(), f"max error {err.max().item():.3g}"


def test_scaled_matmul_epilogue_and_autotune():
    @tessera.jit
    def silu_times(acc, gate):
        return acc * tl.sigmoid(acc) * gate

    M, N, K = 1024, 1024, 1024
    g = torch.Generator(device="cuda").manual_seed(9)
    a = torch.randn((M, K), device="cuda", generator=g).to(torch.float8_e4m3fn)
    b = torch.randn((N, K), device="cuda", generator=g).to(torch.float8_e4m3fn).t()
    sa, sb = make_scales("row", M, N, K, g)
    gate = torch.randn((M, N), device="cuda", generator=g)
    c = tk.scaled_matmul(a, b, sa, sb, torch.float32, epilogue=silu_times, epilogue_args=(gate,))
    torch.cuda.synchronize()
    A, B = dequantised(a, b, sa, sb, "row")
    x = A @ B
    ref = x * torch.sigmoid(x) * gate.double()
    scale = (A.abs() @ B.abs()) * (K * 2.0 ** -22 + reduced_span("row", K, 128) * 2.0 ** -13)
    assert ((c.double() - ref).abs() <= 1.2 * scale * gate.double().abs() + 1e-5 * ref.abs() + 1e-6).all()
    assert skm.scaled_matmul_last_autotuner().best_config is not None



@pytest.mark.parametrize("K", [640, 2176, 4096], ids=lambda k: f"K{k}")
@pytest.mark.parametrize("kernel", ["tma", "tma_ws", "persistent", "cpasync"])
def test_paired_block_steps_match_single_steps(kernel, K):
    # PAIR_K (two K blocks a step, the Hopper block table's first): the same partial products,
    # scaled and added in the same order as one block a step, so the same bits; an odd count of
    # K blocks (640, 2176) ends on a pair whose second block lies past K (zeros, scale 0).
    M, N = 1000, 1408
    g = torch.Generator(device="cuda").manual_seed(K)
    a = (torch.randn((M, K), device="cuda", generator=g) * 3).to(torch.float8_e4m3fn)
    b = (torch.randn((N, K), device="cuda", generator=g) * 3).to(torch.float8_e4m3fn).t()
    sa, sb = make_scales("block", M, N, K, g)
    paired = next(c for c in skm.HOPPER_BLOCK_SCALED_MATMUL_CONFIGS if c.kwargs.get("PAIR_K"))
    single = tessera.Config({k: v for k, v in paired.kwargs.items() if k != "PAIR_K"}, num_warps=paired.num_warps,
                            num_stages=paired.num_stages)
    if kernel == "tma_ws":  # a producer warpgroup, not persistent (bench/matmul.py tessera_scaled_block_ws)
        paired, single = (tessera.Config(dict(c.kwargs, WARP_SPECIALIZE=True), num_warps=c.num_warps,
                                         num_stages=c.num_stages) for c in (paired, single))
    outs = []
    for config in (paired, single):
        c = gpu_helpers.poisoned((M, N), torch.float32)
        tk.scaled_matmul(a, b, sa, sb, torch.float32, out=c, config=config, tma=kernel != "cpasync",
                         persistent=kernel == "persistent")
        outs.append(c)
    torch.cuda.synchronize()
    A, B = dequantised(a, b, sa, sb, "block")
    ref = A @ B
    limit = bound(A, B, ref, K, reduced_span("block", K, 128), "fp32")
    err = (outs[0].double() - ref).abs()
    assert (err <= limit).all(), f"max error {err.max().item():.3g}"
    assert torch.equal(outs[0], outs[1]), (outs[0] - outs[1]).abs().max().item()
