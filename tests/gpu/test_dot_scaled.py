"""tl.dot_scaled on the GPU against torch, cases shaped like Triton's test_scaled_dot: an mxfp
operand (e2m1 packed two a byte along K, e4m3, e5m2; uint8 storage) with e8m0 scales [rows, K // 32]
times a "normal" operand (e4m3, e5m2, bf16, fp16) without, row- or column-major, either side scaled;
the result stored as bf16 into the compute dtype (fp16 when the normal type is fp16, else bf16).
The reference upcasts in torch (float64: e2m1 from its table, fp8 through torch's float8 dtypes, the
scale as 2^(s - 127) rounded to the compute dtype, s = 0 as 0, each product rounded to the compute
dtype), then a float64 matmul; tolerance as test_scaled_dot's (atol 1e-5, rtol 1e-2), and its PTX
checks (the bf16/fp16 tensor-core dot, vector loads and stores). Then the general forms (acc,
k_pack=False, fast_math, a NaN scale, 3-D) with an f32 result, and sm_80 code on the same GPU.
The CPU tests (PTX, the interpreter against numpy) are tests/python/test_dot_scaled.py."""
import re

import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402
import tessera.language as tl  # noqa: E402

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@tessera.jit
def scaled_dot_tile(a_ptr, stride_a0, stride_a1, a_scale, b_ptr, stride_b0, stride_b1, b_scale, out_ptr,
                    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, TYPE_A: tl.constexpr,
                    TYPE_B: tl.constexpr):
    A_K: tl.constexpr = BK // 2 if TYPE_A == "e2m1" else BK
    B_K: tl.constexpr = BK // 2 if TYPE_B == "e2m1" else BK
    a = tl.load(a_ptr + tl.arange(0, BM)[:, None] * stride_a0 + tl.arange(0, A_K)[None, :] * stride_a1)
    b = tl.load(b_ptr + tl.arange(0, B_K)[:, None] * stride_b0 + tl.arange(0, BN)[None, :] * stride_b1)
    G: tl.constexpr = BK // 32
    if a_scale is not None:
        a_scale = tl.load(a_scale + tl.arange(0, BM)[:, None] * G + tl.arange(0, G)[None, :])
    if b_scale is not None:
        b_scale = tl.load(b_scale + tl.arange(0, BN)[:, None] * G + tl.arange(0, G)[None, :])
    c = tl.dot_scaled(a, a_scale, TYPE_A, b, b_scale, TYPE_B)
    tl.store(out_ptr + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], c.to(tl.bfloat16))


@tessera.jit
def scaled_dot_general(a_ptr, a_scale, b_ptr, b_scale, out_ptr, B: tl.constexpr, AM: tl.constexpr,
                       AK: tl.constexpr, BK_: tl.constexpr, BN_: tl.constexpr, M: tl.constexpr, N: tl.constexpr,
                       G: tl.constexpr, TYPE_A: tl.constexpr, TYPE_B: tl.constexpr, A_K_PACK: tl.constexpr,
                       B_K_PACK: tl.constexpr, ACC: tl.constexpr, FAST_MATH: tl.constexpr):
    # Contiguous operands: a [B?, AM, AK], b [B?, BK_, BN_] as stored; scales [B?, M, G] / [B?, N, G].
    if B == 0:
        a = tl.load(a_ptr + tl.arange(0, AM)[:, None] * AK + tl.arange(0, AK)[None, :])
        b = tl.load(b_ptr + tl.arange(0, BK_)[:, None] * BN_ + tl.arange(0, BN_)[None, :])
        if a_scale is not None:
            a_scale = tl.load(a_scale + tl.arange(0, M)[:, None] * G + tl.arange(0, G)[None, :])
        if b_scale is not None:
            b_scale = tl.load(b_scale + tl.arange(0, N)[:, None] * G + tl.arange(0, G)[None, :])
        out = out_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    else:
        i = tl.arange(0, B)[:, None, None]
        a = tl.load(a_ptr + i * (AM * AK) + tl.arange(0, AM)[None, :, None] * AK + tl.arange(0, AK)[None, None, :])
        b = tl.load(b_ptr + i * (BK_ * BN_) + tl.arange(0, BK_)[None, :, None] * BN_ + tl.arange(0, BN_)[None, None, :])
        if a_scale is not None:
            a_scale = tl.load(a_scale + i * (M * G) + tl.arange(0, M)[None, :, None] * G + tl.arange(0, G)[None, None, :])
        if b_scale is not None:
            b_scale = tl.load(b_scale + i * (N * G) + tl.arange(0, N)[None, :, None] * G + tl.arange(0, G)[None, None, :])
        out = out_ptr + i * (M * N) + tl.arange(0, M)[None, :, None] * N + tl.arange(0, N)[None, None, :]
    if ACC:
        c = tl.dot_scaled(a, a_scale, TYPE_A, b, b_scale, TYPE_B, tl.load(out), fast_math=FAST_MATH,
                          lhs_k_pack=A_K_PACK, rhs_k_pack=B_K_PACK)
    else:
        c = tl.dot_scaled(a, a_scale, TYPE_A, b, b_scale, TYPE_B, fast_math=FAST_MATH, lhs_k_pack=A_K_PACK,
                          rhs_k_pack=B_K_PACK)
    tl.store(out, c)


# ------------------------------------------------------------------ the torch model

E2M1 = [0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6]


def values_of(x, fmt, pack_axis):
    if fmt == "e2m1":
        table = torch.tensor(E2M1, dtype=torch.float64, device=x.device)
        lo, hi = table[(x & 0xF).long()], table[(x >> 4).long()]
        both = torch.stack([lo, hi], dim=pack_axis + 1)
        shape = list(x.shape)
        shape[pack_axis] *= 2
        return both.reshape(shape)
    if fmt in ("e4m3", "e5m2"):
        return x.view(torch.float8_e4m3fn if fmt == "e4m3" else torch.float8_e5m2).double()
    return x.double()  # bf16 / fp16 tensors


def upcast(x, scale, fmt, compute, k_axis, pack_axis, fast_math=False):
    v = values_of(x, fmt, pack_axis).to(compute).double()
    if scale is None:
        return v
    s = scale.long()
    f = torch.where(s == 0, torch.zeros_like(s, dtype=torch.float64), torch.exp2(s.double() - 127))
    f = f.to(compute).double()  # fp16: 2^(s - 127) rounded (through fp32, as Triton)
    f = torch.where(s == 255, torch.full_like(f, float("inf") if fast_math else float("nan")), f)
    f = f.repeat_interleave(32, dim=-1)
    if k_axis == x.dim() - 2:
        f = f.transpose(-1, -2)
    scaled = (v * f).to(compute).double()
    return torch.where(f.isnan(), f, scaled)


def reference(a, sa, fa, b, sb, fb, a_k_pack=True, b_k_pack=True, fast_math=False):
    compute = torch.float16 if "fp16" in (fa, fb) else torch.bfloat16
    r = a.dim()
    x = upcast(a, sa, fa, compute, r - 1, r - 1 if a_k_pack else r - 2, fast_math)
    y = upcast(b, sb, fb, compute, r - 2, r - 2 if b_k_pack else r - 1, fast_math)
    return x @ y, x.abs() @ y.abs()


def operand(shape, fmt, comp_dtype, g, col_major=False):
    """test_scaled_dot's make_arg and make_finite, in our words."""
    if col_major:
        shape = shape[:-2] + (shape[-1], shape[-2])
    if fmt in ("bf16", "fp16"):
        limit = 2.0 ** (6 if comp_dtype == torch.float16 else 15)
        x = torch.randn(shape, device="cuda", generator=g).clamp(-limit, limit - 1).to(comp_dtype)
    else:
        x = torch.randint(0, 256, shape, device="cuda", generator=g, dtype=torch.int32).to(torch.uint8)
        if fmt == "e2m1":
            x.view(-1)[:16] = torch.arange(16, device="cuda", dtype=torch.uint8) * 0x11  # every code
        else:
            if fmt == "e5m2" and comp_dtype == torch.float16:
                x &= 0xB
            mask = 0x7C if fmt == "e5m2" else 0x7F
            filler = (torch.arange(x.numel(), device="cuda") % mask).to(torch.uint8).reshape(x.shape)
            x = torch.where(x & mask == mask, filler | (x & 0x80), x)
    return x.mT if col_major else x


def scales(shape, comp_dtype, g):
    lo, hi = (0, 142) if comp_dtype == torch.bfloat16 else (124, 131)
    return torch.randint(lo, hi + 1, shape, device="cuda", generator=g, dtype=torch.int32).to(torch.uint8)


SIG = {torch.uint8: "u8", torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}
MMA = re.compile(r"(mma|wgmma.mma_async).sync.aligned.m\d+n\d+k16(?:.row.col)?.f32.(f|bf)16.(f|bf)16")
CASES = [(M, N, K, col_a, col_b, rhs_scale, mxfp, normal)
         for M, N, K in [(32, 32, 64), (64, 128, 128), (128, 64, 64)]
         for col_a, col_b in [(False, False), (True, True), (True, False)]
         for rhs_scale in [False, True]
         for mxfp in ["e2m1", "e4m3", "e5m2"]
         for normal in ["e4m3", "e5m2", "bf16", "fp16"]]


@pytest.mark.parametrize("M,N,K,col_a,col_b,rhs_scale,mxfp_type,normal_type", CASES)
def test_scaled_dot_against_torch(M, N, K, col_a, col_b, rhs_scale, mxfp_type, normal_type):
    if torch.cuda.get_device_capability() < (8, 9):
        pytest.skip("test_scaled_dot needs sm_89+")
    comp_dtype = torch.float16 if normal_type == "fp16" else torch.bfloat16
    g = torch.Generator(device="cuda").manual_seed(M * 7 + N + K)
    type_a, type_b = (normal_type, mxfp_type) if rhs_scale else (mxfp_type, normal_type)
    a = operand((M, K // 2 if type_a == "e2m1" else K), type_a, comp_dtype, g, col_a)
    b = operand((K // 2 if type_b == "e2m1" else K, N), type_b, comp_dtype, g, col_b)
    sa = None if rhs_scale else scales((M, K // 32), comp_dtype, g)
    sb = scales((N, K // 32), comp_dtype, g) if rhs_scale else None
    z = torch.full((M, N), float("nan"), device="cuda", dtype=comp_dtype)
    args = (a, *a.stride(), sa, b, *b.stride(), sb, z, M, N, K, type_a, type_b)
    scaled_dot_tile[(1,)](*args, num_warps=4)
    torch.cuda.synchronize()
    ref, magnitude = reference(a, sa, type_a, b, sb, type_b)
    # rounded as the kernel rounds: f32 sum, .to(bf16), stored into the compute dtype (fp16 may overflow)
    want = ref.float().to(torch.bfloat16).to(comp_dtype).double()
    # test_scaled_dot's tolerance, plus what an f32 sum in another order may differ by where the products
    # cancel (|products| up to 2^34 here: a result near 250 can be 2 bf16 steps off in f32 already).
    bound = 1e-5 + 1e-2 * want.abs() + magnitude * K * 2.0 ** -23
    err = (z.double() - want).abs()
    finite = want.isfinite()
    assert bool((err[finite] <= bound[finite]).all()), f"max error over bound {(err - bound)[finite].max().item()}"
    assert torch.equal(z.double()[~finite], want[~finite])
    ptx = scaled_dot_tile.warmup(*args, num_warps=4, grid=(1,)).asm["ptx"]  # the kernel just launched
    assert MMA.search(ptx)
    assert "ld.global.v4" in ptx and "st.global.v4" in ptx


GENERAL = {  # name: (type_a, type_b, B, M, N, K, options)
    "both-scales": ("e2m1", "e2m1", 0, 128, 128, 128, {}),
    "no-scales": ("e4m3", "e5m2", 0, 64, 64, 64, {"a_scale": False, "b_scale": False}),
    "acc-fast-math": ("e5m2", "e2m1", 0, 64, 128, 128, {"acc": True, "fast_math": True}),
    "m-n-packed": ("e2m1", "e2m1", 0, 64, 64, 64, {"a_k_pack": False, "b_k_pack": False}),
    "m-packed-fp16": ("e2m1", "fp16", 0, 128, 64, 64, {"a_k_pack": False, "b_scale": False}),
    "3d": ("e2m1", "fp16", 2, 32, 32, 64, {"b_scale": False, "acc": True}),
    "3d-both-scales": ("e4m3", "e2m1", 4, 16, 16, 64, {}),
    "nan-scale": ("e4m3", "e2m1", 0, 64, 64, 64, {"nan": True}),
    "nan-scale-fast-math": ("e4m3", "e2m1", 0, 64, 64, 64, {"nan": True, "fast_math": True}),
}


@pytest.mark.parametrize("target", ["", "sm_80"], ids=["native", "sm_80"])
@pytest.mark.parametrize("case", list(GENERAL))
def test_scaled_dot_forms_against_torch(case, target):
    fa, fb, B, M, N, K, o = GENERAL[case]
    a_k_pack, b_k_pack = o.get("a_k_pack", True), o.get("b_k_pack", True)
    comp_dtype = torch.float16 if "fp16" in (fa, fb) else torch.bfloat16
    g = torch.Generator(device="cuda").manual_seed(len(case))
    batch = (B,) if B else ()
    pa, pb = (2 if fa == "e2m1" else 1), (2 if fb == "e2m1" else 1)
    a_shape = (M, K // pa) if a_k_pack else (M // pa, K)
    b_shape = (K // pb, N) if b_k_pack else (K, N // pb)
    a = operand(batch + a_shape, fa, comp_dtype, g)
    b = operand(batch + b_shape, fb, comp_dtype, g)
    sa = scales(batch + (M, K // 32), comp_dtype, g) if o.get("a_scale", True) else None
    sb = scales(batch + (N, K // 32), comp_dtype, g) if o.get("b_scale", True) else None
    if o.get("nan"):
        sa[3, 1] = 255
        sb[5, 0] = 255
    c0 = torch.randn(batch + (M, N), device="cuda", generator=g)
    c = c0.clone() if o.get("acc") else torch.full(batch + (M, N), float("nan"), device="cuda")
    args = (a, sa, b, sb, c)
    constexprs = dict(B=B, AM=a_shape[0], AK=a_shape[1], BK_=b_shape[0], BN_=b_shape[1], M=M, N=N, G=K // 32,
                      TYPE_A=fa, TYPE_B=fb, A_K_PACK=int(a_k_pack), B_K_PACK=int(b_k_pack),
                      ACC=int(o.get("acc", False)), FAST_MATH=int(o.get("fast_math", False)))
    sig = ",".join(f"*{SIG[t.dtype]}:16" for t in args if t is not None)
    for name, t in [("a_scale", sa), ("b_scale", sb)]:
        if t is None:
            constexprs[name] = None
    k = tessera.compile(scaled_dot_general, signature=sig, constexprs=constexprs, num_warps=4, target=target)
    k[(1,)](*[t for t in args if t is not None])
    torch.cuda.synchronize()
    ref, magnitude = reference(a, sa, fa, b, sb, fb, a_k_pack, b_k_pack, o.get("fast_math", False))
    if o.get("acc"):
        ref, magnitude = ref + c0.double(), magnitude + c0.double().abs()
    got = c.double()
    assert torch.equal(got.isnan(), ref.isnan()) and torch.equal(got.isinf(), ref.isinf())
    if o.get("nan") and not o.get("fast_math"):
        assert got[3].isnan().all() and got[:, 5].isnan().all()
    ok = ref.isfinite()
    # exact upcast products summed in f32: within K ulps of the sum of magnitudes
    assert ((got - ref).abs()[ok] <= (magnitude * (K * 2.0 ** -22) + 1e-30)[ok]).all()
    if B == 0 and target == "sm_80":
        assert "mma.sync.aligned.m16n8k16.row.col.f32" in k.asm["ptx"]
