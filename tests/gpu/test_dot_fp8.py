"""tl.dot with fp8 operands (torch.float8_e4m3fn / float8_e5m2 tensors as *fp8e4nv / *fp8e5
arguments, mixed pairs too) against torch's upcast matmul in float64, for the GPU's own
target (sm_90a on Hopper: the f16 wgmma) and for sm_80 (the f16 mma.sync, fp8 widened from
its bits); and every fp8 code widened to f16 / f32 bit for bit as torch widens it.
The kernels are tests/python/lang_kernels/dot_fp8.py."""
import importlib.util
import pathlib

import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

_spec = importlib.util.spec_from_file_location(
    "dot_fp8", pathlib.Path(__file__).resolve().parents[1] / "python/lang_kernels/dot_fp8.py")
kernels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernels)

TORCH = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
SIG = {"e4m3": "fp8e4nv", "e5m2": "fp8e5"}
PAIRS = [("e4m3", "e4m3"), ("e5m2", "e5m2"), ("e4m3", "e5m2"), ("e5m2", "e4m3")]
TARGETS = ["", "sm_80"]  # "": the GPU's own


@pytest.mark.parametrize("target", TARGETS, ids=["native", "sm_80"])
@pytest.mark.parametrize("out", ["fp32", "fp16"])
@pytest.mark.parametrize("pair", PAIRS, ids=["x".join(p) for p in PAIRS])
@pytest.mark.parametrize("imprecise", [0, 32])
def test_fp8_dot_against_torch(pair, out, target, imprecise):
    M, N, K = (1000, 300, 700) if out == "fp32" else (256, 128, 256)
    scale = 4.0 if out == "fp32" else 1.0
    g = torch.Generator(device="cuda").manual_seed(7)
    a = (torch.randn((M, K), device="cuda", generator=g) * scale).to(TORCH[pair[0]])
    b = (torch.randn((K, N), device="cuda", generator=g) * scale).to(TORCH[pair[1]])
    out_t = torch.float32 if out == "fp32" else torch.float16
    c = torch.full((M, N), float("nan"), device="cuda", dtype=out_t)
    sig = f"*{SIG[pair[0]]}:16,*{SIG[pair[1]]}:16,*{out}:16,i32,i32,i32,i32,i32,i32"  # strides 700, 300: no :16
    BM, BN, BK = 128, 128, 64
    k = tessera.compile(kernels.dot_fp8_kernel, signature=sig, num_warps=4, num_stages=3, target=target,
                        constexprs={"A_E5": int(pair[0] == "e5m2"), "B_E5": int(pair[1] == "e5m2"),
                                    "OUT_F16": int(out == "fp16"), "IMPRECISE": imprecise,
                                    "BM": BM, "BN": BN, "BK": BK})
    k[(tessera.cdiv(M, BM), tessera.cdiv(N, BN))](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0))
    torch.cuda.synchronize()
    ref = a.double() @ b.double()  # torch's upcast: exact values, exact products
    if out == "fp32":
        # Exact products accumulated in f32: within K ulps (2^-23, the tensor core may truncate)
        # of the sum of magnitudes, with room to spare.
        bound = (a.double().abs() @ b.double().abs()) * (K * 2.0 ** -22)
        assert ((c.double() - ref).abs() <= bound).all()
        ref32 = (a.float() @ b.float()).double()  # torch's own fp8 path: upcast, f32 matmul
        assert ((c.double() - ref32).norm() / ref.norm()).item() <= 1e-5
    else:  # an f16 accumulator rounds every k-step
        assert ((c.double() - ref).norm() / ref.norm()).item() <= 1e-2


@pytest.mark.parametrize("target", TARGETS, ids=["native", "sm_80"])
@pytest.mark.parametrize("kind", ["e4m3", "e5m2"])
def test_fp8_widening_every_code(kind, target):
    x = torch.arange(256, device="cuda", dtype=torch.int32).to(torch.uint8)
    h = torch.zeros(256, device="cuda", dtype=torch.float16)
    f = torch.zeros(256, device="cuda", dtype=torch.float32)
    k = tessera.compile(kernels.widen_fp8_kernel, signature="*u8:16,*fp16:16,*fp32:16", target=target,
                        constexprs={"E5": int(kind == "e5m2"), "BLOCK": 256})
    k[(1,)](x, h, f)
    torch.cuda.synchronize()
    want = x.view(TORCH[kind])
    nan = want.float().isnan()
    assert torch.equal(h.isnan(), nan) and torch.equal(f.isnan(), nan)
    assert torch.equal(h[~nan].view(torch.int16), want.to(torch.float16)[~nan].view(torch.int16))
    assert torch.equal(f[~nan].view(torch.int32), want.to(torch.float32)[~nan].view(torch.int32))


@pytest.mark.parametrize("kind", ["e4m3", "e5m2"])
def test_fp8_chain_dot_as_triton(kind):
    # test_dot's fp8 'chain-dot' case (128x128x64, 4 warps): z = x @ y, narrowed to fp8, then z @ w.
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("conversions to fp8 need sm_90")
    M, N, K = 128, 128, 64
    g = torch.Generator(device="cuda").manual_seed(17)
    x, y, w = ((torch.randn(shape, device="cuda", generator=g)).to(TORCH[kind]) for shape in [(M, K), (K, N), (N, N)])
    z = torch.full((M, N), float("nan"), device="cuda")
    kernels.chain_dot_fp8_kernel[(1,)](x, y, w, z, E5=int(kind == "e5m2"), BLOCK_M=M, BLOCK_N=N, BLOCK_K=K,
                                       num_warps=4)
    torch.cuda.synchronize()
    ref = (x.float() @ y.float()).to(TORCH[kind]).float() @ w.float()
    torch.testing.assert_close(z, ref, rtol=0.01, atol=1e-3)  # test_dot's tolerance


@pytest.mark.parametrize("low_precision_acc", [0, 32, 64, 128])
@pytest.mark.parametrize("kind", ["e4m3", "e5m2"])
@pytest.mark.parametrize("blocks", [(128, 256, 128), (64, 64, 64)], ids=["128x256x128", "64x64x64"])
def test_dot_max_num_imprecise_acc_as_triton(blocks, kind, low_precision_acc):
    # test_dot_max_num_imprecise_acc: M, N, K = 128, 256, 256, 8 warps, 3 stages; the value is
    # passed when it is at most BLOCK_K (else None), and the result is full precision here.
    M, N, K = 128, 256, 256
    BM, BN, BK = blocks
    g = torch.Generator(device="cuda").manual_seed(low_precision_acc)
    a = torch.randn((M, K), device="cuda", generator=g).to(TORCH[kind])
    b = torch.randn((K, N), device="cuda", generator=g).to(TORCH[kind])
    c = torch.full((M, N), float("nan"), device="cuda")
    imprecise = low_precision_acc if low_precision_acc <= BK else None
    kernels.dot_fp8_kernel[(tessera.cdiv(M, BM), tessera.cdiv(N, BN))](
        a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0), A_E5=int(kind == "e5m2"), B_E5=int(kind == "e5m2"),
        OUT_F16=0, IMPRECISE=imprecise, BM=BM, BN=BN, BK=BK, num_warps=8, num_stages=3)
    torch.cuda.synchronize()
    ref = (a.to(torch.float16) @ b.to(torch.float16)).to(torch.float32)  # Triton's reference and tolerance
    tol = 0.01 if kind == "e4m3" else 1e-3
    torch.testing.assert_close(ref, c, rtol=tol, atol=tol)
    exact = a.double() @ b.double()  # and at least as accurate as full f32 accumulation
    assert ((c.double() - exact).abs() <= (a.double().abs() @ b.double().abs()) * (K * 2.0 ** -22)).all()
