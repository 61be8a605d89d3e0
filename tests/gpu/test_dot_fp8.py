"""tl.dot with fp8 operands (torch.float8_e4m3fn / float8_e5m2 tensors as *fp8e4nv / *fp8e5
arguments, mixed pairs too) against torch's upcast matmul in float64, for the GPU's own
target (sm_90a on Hopper: native fp8 wgmma m64nNk32 where the block fits it) and for sm_80
(the f16 mma.sync, fp8 widened from its bits); and every fp8 code widened to f16 / f32 bit
for bit as torch widens it. The kernels are tests/python/lang_kernels/dot_fp8.py and
kernels/matmul.py (row- and column-major A and B, masked edges, K loops).

Hopper's fp8 wgmma adds its products (exact) in a reduced-precision accumulator (about 14
bits kept, DeepSeek-V3's measurement), so on the native path the bound is wider than the
f32 one: max_num_imprecise_acc products at a time (K without it, 32 for 0) may carry about
2^-13 of their magnitude each before going into the f32 accumulator."""
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
TARGETS = ["", "sm_89", "sm_80"]  # "": the GPU's own; sm_89: fp8 mma.sync (PTX 8.4, JIT-compiled on sm_90)


def native_fp8(target):
    """The dot runs on Hopper's fp8 wgmma (the GPU's own target on an sm_90 card)."""
    return target == "" and torch.cuda.get_device_capability() == (9, 0)


def fp8_mma_sync(target):
    """The dot runs on mma.sync's fp8 form: target sm_89, or the GPU's own on an sm_89 card."""
    return target == "sm_89" or (target == "" and torch.cuda.get_device_capability() == (8, 9))


def fp8_bound(a, b, K, imprecise_span):
    """|error| allowed per element: f32 accumulation of exact products (K ulps of 2^-22 with
    room), plus, on the fp8 wgmma, 2^-13 of the magnitude per product added in reduced precision."""
    magnitude = a.double().abs() @ b.double().abs()
    return magnitude * (K * 2.0 ** -22 + imprecise_span * 2.0 ** -13)


@pytest.mark.parametrize("target", TARGETS, ids=["native", "sm_89", "sm_80"])
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
        # of the sum of magnitudes, with room to spare; on the fp8 wgmma, at most 32 products
        # (max_num_imprecise_acc 0 or 32) in its reduced-precision accumulator at a time.
        # max_num_imprecise_acc=0 keeps the widened f16 dot (exact products, f32 accumulation), as Triton does.
        native = native_fp8(target) and imprecise > 0
        # fp8 mma.sync (sm_89): its accumulation precision is not documented either; bounded as
        # reduced precision over the whole K (the measured error is printed).
        mma_sync = fp8_mma_sync(target)
        span = 32 if native else K if mma_sync else 0
        bound = fp8_bound(a, b, K, span)
        assert ((c.double() - ref).abs() <= bound).all()
        ref32 = (a.float() @ b.float()).double()  # torch's own fp8 path: upcast, f32 matmul
        rel = ((c.double() - ref32).norm() / ref.norm()).item()
        print(f"fp8 dot {pair} target {target or 'native'} imprecise {imprecise}: normwise error {rel:.3g}")
        assert rel <= (2.0 ** -12 if native else 2.0 ** -9 if mma_sync else 1e-5)
        if native:
            assert f"k32.f32.{pair[0]}.{pair[1]} " in k.asm["ptx"]
        if mma_sync:
            assert f"m16n8k32.row.col.f32.{pair[0]}.{pair[1]}.f32 " in k.asm["ptx"]
    else:  # an f16 accumulator rounds every k-step
        assert ((c.double() - ref).norm() / ref.norm()).item() <= 1e-2


@pytest.mark.parametrize("target", TARGETS, ids=["native", "sm_89", "sm_80"])
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


def triton_fp8(rs, shape, kind):
    """Triton's numpy_random for a float8 dtype: bytes 20..39 (small positive values), taken as fp8."""
    import numpy as np
    return torch.from_numpy(rs.randint(20, 40, shape, dtype=np.int8)).cuda().view(TORCH[kind])


def fp8_round(x, kind):
    """float64 values rounded to the nearest fp8 value (torch's own conversion, through f32)."""
    return x.float().to(TORCH[kind]).double()


# Hopper's fp8 wgmma accumulates in reduced precision (Triton's sm_90 default: no promotion), so
# a chain dot's P = fp8(x @ y) may round to the other fp8 neighbour of x @ y where that is near a
# rounding midpoint, and z = P @ w then differs from the f32 reference by an fp8 ulp of P times w.
# On signed randn data that is a few percent of z outside test_dot's tolerance (up to ~5 absolute);
# on Triton's data (small positive values) it stays far inside. So the as-Triton test uses
# Triton's data, and the randn test checks the second dot against the kernel's own P.
@pytest.mark.parametrize("kind", ["e4m3", "e5m2"])
def test_fp8_chain_dot_as_triton(kind):
    # test_dot's fp8 'chain-dot' case (128x128x64, 4 warps): z = x @ y, narrowed to fp8, then z @ w.
    import numpy as np
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("conversions to fp8 need sm_90")
    M, N, K = 128, 128, 64
    rs = np.random.RandomState(17)
    x, y, w = (triton_fp8(rs, shape, kind) for shape in [(M, K), (K, N), (N, N)])
    z = torch.full((M, N), float("nan"), device="cuda")
    kernels.chain_dot_fp8_kernel[(1,)](x, y, w, z, E5=int(kind == "e5m2"), BLOCK_M=M, BLOCK_N=N, BLOCK_K=K,
                                       num_warps=4)
    torch.cuda.synchronize()
    ref = (x.float() @ y.float()).to(TORCH[kind]).float() @ w.float()
    torch.testing.assert_close(z, ref, rtol=0.01, atol=1e-3)  # test_dot's tolerance


@pytest.mark.parametrize("kind", ["e4m3", "e5m2"])
def test_fp8_chain_dot_on_its_own_p(kind):
    # Signed randn data: P (stored by the kernel) is the fp8 rounding of a value within the first
    # dot's bound of x @ y, and z is P @ w within the second dot's bound. A wrongly staged P
    # operand (layout, swizzle, a race on its shared buffer) is off by whole products here.
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("conversions to fp8 need sm_90")
    M, N, K = 128, 128, 64
    g = torch.Generator(device="cuda").manual_seed(17)
    x, y, w = ((torch.randn(shape, device="cuda", generator=g)).to(TORCH[kind]) for shape in [(M, K), (K, N), (N, N)])
    p = torch.full((M, N), float("nan"), device="cuda")
    z = torch.full((M, N), float("nan"), device="cuda")
    kernels.chain_dot_fp8_p_kernel[(1,)](x, y, w, p, z, E5=int(kind == "e5m2"), BLOCK_M=M, BLOCK_N=N, BLOCK_K=K,
                                         num_warps=4)
    torch.cuda.synchronize()
    exact = x.double() @ y.double()
    nearest = fp8_round(exact, kind)
    span = K if native_fp8("") else 0
    first = fp8_bound(x, y, K, span)
    # round(v) with |v - exact| <= first is no farther from exact than the nearest fp8 value plus 2 * first.
    p = p.double()
    assert ((p - exact).abs() <= (nearest - exact).abs() + 2 * first).all()
    assert torch.equal(fp8_round(p, kind), p)  # P holds fp8 values
    flips = (p != nearest).double().mean().item()
    print(f"chain dot {kind}: P rounded to the other fp8 neighbour in {100 * flips:.3f}% of elements")
    assert flips <= 0.05  # ~0.1-1.5 % expected (a model of 11-13 bits kept)
    w64 = w.double()
    err = (z.double() - p @ w64).abs()
    magnitude = p.abs() @ w64.abs()
    second = magnitude * (N * 2.0 ** -22 + (N if native_fp8("") else 0) * 2.0 ** -13)
    assert (err <= second).all(), f"max error {err.max().item():.3g} against the kernel's own P"


def exact_chain_operands(M, N, K, kind, seed):
    """x: two entries of +-1 per row, y: integers in [-2, 2], w: in {-1, 0, 1}. Then x @ y are
    integers in [-4, 4] (exact in e4m3 and e5m2, no rounding to choose), and z = P @ w integers
    below 2^10 whose partial sums need far fewer bits than the wgmma keeps: exact on any path."""
    g = torch.Generator().manual_seed(seed)
    x = torch.zeros((M, K), dtype=torch.float32)
    cols = torch.stack([torch.randperm(K, generator=g)[:2] for _ in range(M)])
    signs = torch.randint(0, 2, (M, 2), generator=g).float() * 2 - 1
    x.scatter_(1, cols, signs)
    y = torch.randint(-2, 3, (K, N), generator=g).float()
    w = torch.randint(-1, 2, (N, N), generator=g).float()
    return (t.cuda().to(TORCH[kind]) for t in (x, y, w))


@pytest.mark.parametrize("kind", ["e4m3", "e5m2"])
def test_fp8_chain_dot_exact(kind):
    # Operands on which every accumulation is exact: z must equal (x @ y) @ w bit for bit. The
    # staged fp8 P (the second dot's A, written to shared memory by the dot) wrong anywhere
    # (layout, swizzle, a race on its buffer) shows here as an error of at least 1.
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("conversions to fp8 need sm_90")
    M, N, K = 128, 128, 64
    x, y, w = exact_chain_operands(M, N, K, kind, 3)
    p = torch.full((M, N), float("nan"), device="cuda")
    z = torch.full((M, N), float("nan"), device="cuda")
    kernels.chain_dot_fp8_p_kernel[(1,)](x, y, w, p, z, E5=int(kind == "e5m2"), BLOCK_M=M, BLOCK_N=N, BLOCK_K=K,
                                         num_warps=4)
    torch.cuda.synchronize()
    want_p = x.double() @ y.double()
    assert torch.equal(p.double(), want_p)
    want = want_p @ w.double()
    bad = (z.double() != want).sum().item()
    assert bad == 0, f"{bad} wrong elements, max error {(z.double() - want).abs().max().item():.3g}"
    z2 = torch.full((M, N), float("nan"), device="cuda")  # the Triton-shaped kernel (P not stored)
    kernels.chain_dot_fp8_kernel[(1,)](x, y, w, z2, E5=int(kind == "e5m2"), BLOCK_M=M, BLOCK_N=N, BLOCK_K=K,
                                       num_warps=4)
    torch.cuda.synchronize()
    assert torch.equal(z2.double(), want)


@pytest.mark.parametrize("low_precision_acc", [0, 32, 64, 128])
@pytest.mark.parametrize("kind", ["e4m3", "e5m2"])
@pytest.mark.parametrize("blocks", [(128, 256, 128), (64, 64, 64)], ids=["128x256x128", "64x64x64"])
def test_dot_max_num_imprecise_acc_as_triton(blocks, kind, low_precision_acc):
    # test_dot_max_num_imprecise_acc: M, N, K = 128, 256, 256, 8 warps, 3 stages, Triton's data
    # (numpy_random with a fresh RandomState(17) for A and for B); the value is passed when it is
    # at most BLOCK_K (else None). Reference: torch's f16 matmul, Triton's tolerance.
    import numpy as np
    M, N, K = 128, 256, 256
    BM, BN, BK = blocks
    a = triton_fp8(np.random.RandomState(17), (M, K), kind)
    b = triton_fp8(np.random.RandomState(17), (K, N), kind)
    c = torch.full((M, N), float("nan"), device="cuda")
    imprecise = low_precision_acc if low_precision_acc <= BK else None
    kernels.dot_fp8_kernel[(tessera.cdiv(M, BM), tessera.cdiv(N, BN))](
        a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0), A_E5=int(kind == "e5m2"), B_E5=int(kind == "e5m2"),
        OUT_F16=0, IMPRECISE=imprecise, BM=BM, BN=BN, BK=BK, num_warps=8, num_stages=3)
    torch.cuda.synchronize()
    ref = (a.to(torch.float16) @ b.to(torch.float16)).to(torch.float32)
    tol = 0.01 if kind == "e4m3" else 1e-3
    torch.testing.assert_close(ref, c, rtol=tol, atol=tol)


@pytest.mark.parametrize("low_precision_acc", [0, 32, 64, 128])
@pytest.mark.parametrize("kind", ["e4m3", "e5m2"])
@pytest.mark.parametrize("blocks", [(128, 256, 128), (64, 64, 64)], ids=["128x256x128", "64x64x64"])
def test_dot_max_num_imprecise_acc_bound(blocks, kind, low_precision_acc):
    # Signed randn data against float64, within the bound of the accumulation used. Triton's
    # f16-matmul reference with a 1e-3 absolute tolerance does not hold here (the kernel's
    # reduced-precision error and the reference's own f16 rounding reach ~1e-2 where z is near
    # 0); both errors are printed. The same data in both block configs: promotion every
    # max(imprecise, 32) products must give the same error in both.
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
    exact = a.double() @ b.double()
    ref16 = (a.to(torch.float16) @ b.to(torch.float16)).double()
    err = (c.double() - exact).abs()
    print(f"imprecise {BM}x{BN}x{BK} {kind} {low_precision_acc}: kernel max error {err.max().item():.3g}, "
          f"torch f16 reference max error {(ref16 - exact).abs().max().item():.3g}")
    span = (K if imprecise is None else max(imprecise, 32)) if native_fp8("") else K if fp8_mma_sync("") else 0
    assert (err <= fp8_bound(a, b, K, span)).all()


# kernels/matmul.py on fp8 operands: every layout of A and B (row- or column-major), ragged
# M, N and K (masked edges and K loop), e4m3 / e5m2 / mixed, against float64 of the
# dequantised inputs. On Hopper: native fp8 wgmma, max_num_imprecise_acc unset (Triton's sm_90
# default: no promotion, K products in the reduced-precision accumulator).
LAYOUT_SHAPES = [(256, 256, 256), (300, 200, 520), (128, 512, 1000)]


@pytest.mark.parametrize("shape", LAYOUT_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("b_major", ["row", "col"])
@pytest.mark.parametrize("a_major", ["row", "col"])
@pytest.mark.parametrize("pair", PAIRS, ids=["x".join(p) for p in PAIRS])
@pytest.mark.parametrize("config", [(128, 256, 64, 8, 4), (128, 128, 64, 4, 3), (64, 64, 64, 4, 3)],
                         ids=["128x256x64w8s4", "128x128x64w4s3", "64x64x64w4s3"])
def test_fp8_matmul_layouts_against_float64(config, pair, a_major, b_major, shape):
    sys_path = str(pathlib.Path(__file__).resolve().parents[2])
    import sys
    if sys_path not in sys.path:
        sys.path.insert(0, sys_path)
    from kernels.matmul import matmul_kernel
    M, N, K = shape
    BM, BN, BK, warps, stages = config
    g = torch.Generator(device="cuda").manual_seed(M + N + K)
    a = (torch.randn((M, K), device="cuda", generator=g) * 2).to(TORCH[pair[0]])
    b = (torch.randn((K, N), device="cuda", generator=g) * 2).to(TORCH[pair[1]])
    if a_major == "col":
        a = a.t().contiguous().t()
    if b_major == "col":
        b = b.t().contiguous().t()
    c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float32)
    grid = (tessera.cdiv(M, BM) * tessera.cdiv(N, BN),)
    args = (a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    meta = dict(BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_M=8, num_warps=warps, num_stages=stages)
    matmul_kernel[grid](*args, **meta)
    torch.cuda.synchronize()
    ref = a.double() @ b.double()
    native = native_fp8("") or fp8_mma_sync("")
    err = (c.double() - ref).abs()
    bound = fp8_bound(a, b, K, K if native else 0)
    assert (err <= bound).all(), f"max error {err.max().item():.3g}"
    rel = ((c.double() - ref).norm() / ref.norm()).item()
    print(f"fp8 matmul {pair} A {a_major} B {b_major} {shape} {config}: normwise relative error {rel:.3g}")
    assert rel <= (2.0 ** -9 if native else 1e-6)
    if native_fp8("") and a_major == "row":
        ptx = matmul_kernel.warmup(*args, grid=grid, **meta).asm["ptx"]  # the kernel just launched
        assert f"k32.f32.{pair[0]}.{pair[1]} " in ptx


def test_fp8_native_and_widened_agree():
    # The same fp8 GEMM on the fp8 wgmma (the GPU's own target) and on sm_80's widened f16
    # mma.sync (exact products, f32 sums): they differ by the accumulation only.
    if not native_fp8(""):
        pytest.skip("native fp8 wgmma needs an sm_90 GPU")
    M, N, K = 256, 256, 512
    g = torch.Generator(device="cuda").manual_seed(3)
    a = torch.randn((M, K), device="cuda", generator=g).to(torch.float8_e4m3fn)
    b = torch.randn((K, N), device="cuda", generator=g).to(torch.float8_e4m3fn)
    outs = []
    for target in ["", "sm_80"]:
        c = torch.full((M, N), float("nan"), device="cuda")
        k = tessera.compile(kernels.dot_fp8_kernel, signature="*fp8e4nv:16,*fp8e4nv:16,*fp32:16,i32,i32,i32,"
                            "i32:16,i32:16,i32:16", num_warps=4, num_stages=3, target=target,
                            constexprs={"A_E5": 0, "B_E5": 0, "OUT_F16": 0, "IMPRECISE": 32,
                                        "BM": 128, "BN": 128, "BK": 64})
        k[(tessera.cdiv(M, 128), tessera.cdiv(N, 128))](a, b, c, M, N, K, K, N, N)
        torch.cuda.synchronize()
        outs.append(c.double())
    assert ((outs[0] - outs[1]).abs() <= fp8_bound(a, b, K, 32)).all()


# ------------------------------------------------------------------ the same kernels through Triton
#
# Tolerances Triton itself meets: the kernels of tests/python/lang_kernels/dot_fp8.py compiled by
# the real Triton (gpu_helpers.kernels_through_triton) run on the same data; each test checks that
# Triton's output is within the bound used (so the bound is one Triton meets: a failure there is
# the bound's, not tessera's), then tessera's, and that tessera's error against float64 of the
# dequantised inputs is at most twice Triton's (max and mean). Triton's sm_90 default is
# max_num_imprecise_acc = 2^30 (no promotion: backends/nvidia/compiler.py), as tessera's.

@pytest.fixture(scope="module")
def triton_kernels(tmp_path_factory):
    import gpu_helpers
    module = gpu_helpers.kernels_through_triton(
        pathlib.Path(__file__).resolve().parents[1] / "python/lang_kernels/dot_fp8.py",
        tmp_path_factory.mktemp("triton"))
    if module is None:
        pytest.skip("the real Triton is not installed (the comparison needs it)")
    return module


@pytest.mark.parametrize("imprecise", [None, 0, 32, 64], ids=lambda v: f"imprecise{v}")
@pytest.mark.parametrize("pair", PAIRS, ids=["x".join(p) for p in PAIRS])
def test_fp8_dot_error_as_triton(triton_kernels, pair, imprecise):
    import gpu_helpers
    M, N, K = 512, 384, 1024
    BM, BN, BK = 128, 128, 64
    g = torch.Generator(device="cuda").manual_seed(11)
    a = (torch.randn((M, K), device="cuda", generator=g) * 4).to(TORCH[pair[0]])
    b = (torch.randn((K, N), device="cuda", generator=g) * 4).to(TORCH[pair[1]])
    outs = []
    for module in (kernels, triton_kernels):
        c = torch.full((M, N), float("nan"), device="cuda")
        module.dot_fp8_kernel[(triton_cdiv(M, BM), triton_cdiv(N, BN))](
            a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0), A_E5=int(pair[0] == "e5m2"),
            B_E5=int(pair[1] == "e5m2"), OUT_F16=0, IMPRECISE=imprecise, BM=BM, BN=BN, BK=BK, num_warps=4, num_stages=3)
        torch.cuda.synchronize()
        outs.append(c)
    ref = a.double() @ b.double()
    span = (K if imprecise is None else max(imprecise, 32)) if native_fp8("") else K if fp8_mma_sync("") else 0
    bound = fp8_bound(a, b, K, span)
    assert ((outs[1].double() - ref).abs() <= bound).all(), "Triton exceeds the bound: the bound is wrong"
    assert ((outs[0].double() - ref).abs() <= bound).all()
    gpu_helpers.assert_error_as_triton(f"dot {pair} imprecise {imprecise}", outs[0], outs[1], ref,
                                       floor=2.0 ** -24 * ref.abs().max().item())


def triton_cdiv(a, b):
    return (a + b - 1) // b


@pytest.mark.parametrize("seed", [17, 5])
@pytest.mark.parametrize("kind", ["e4m3", "e5m2"])
def test_fp8_chain_dot_error_as_triton(triton_kernels, kind, seed):
    # The chain dot on signed randn data (the case a fixed f32-reference tolerance fails for both):
    # z against float64 of round_fp8(x @ y) @ w, within twice Triton's error; and P (the kernel's
    # fp8 rounding of x @ y) off the nearest fp8 value no more often than twice as often as Triton's.
    import gpu_helpers
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("conversions to fp8 need sm_90")
    M, N, K = 128, 128, 64
    g = torch.Generator(device="cuda").manual_seed(seed)
    x, y, w = (torch.randn(shape, device="cuda", generator=g).to(TORCH[kind]) for shape in [(M, K), (K, N), (N, N)])
    meta = dict(E5=int(kind == "e5m2"), BLOCK_M=M, BLOCK_N=N, BLOCK_K=K, num_warps=4)
    zs, ps, zps = [], [], []
    for module in (kernels, triton_kernels):
        z = torch.full((M, N), float("nan"), device="cuda")
        module.chain_dot_fp8_kernel[(1,)](x, y, w, z, **meta)
        p = torch.full((M, N), float("nan"), device="cuda")
        zp = torch.full((M, N), float("nan"), device="cuda")
        module.chain_dot_fp8_p_kernel[(1,)](x, y, w, p, zp, **meta)
        torch.cuda.synchronize()
        zs.append(z)
        ps.append(p.double())
        zps.append(zp)
    nearest = fp8_round(x.double() @ y.double(), kind)
    ref = nearest @ w.double()
    floor = 2.0 ** -20 * (nearest.abs() @ w.double().abs()).max().item()
    gpu_helpers.assert_error_as_triton(f"chain dot {kind} seed {seed}", zs[0], zs[1], ref, floor=floor)
    gpu_helpers.assert_error_as_triton(f"chain dot (P stored) {kind} seed {seed}", zps[0], zps[1], ref, floor=floor)
    flips = [(p != nearest).double().mean().item() for p in ps]
    same = (ps[0] == ps[1]).double().mean().item()
    print(f"chain dot {kind} seed {seed}: P off the nearest fp8 value in {100 * flips[0]:.3f}% (tessera), "
          f"{100 * flips[1]:.3f}% (Triton); tessera's P equals Triton's in {100 * same:.3f}%")
    assert flips[0] <= 2 * flips[1] + 0.002
