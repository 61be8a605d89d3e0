"""tessera.kernels.attention_fp8 (kernels/attention.py attn_fwd_fp8_kernel): the FP8 attention
forward through the host interpreter (numpy arrays of ml_dtypes.float8_e4m3fn) against a
float64 reference of the dequantised inputs, its argument errors, and its sm_90a PTX (fp8
wgmma for both dots, K and V^T through TMA, no spills under ptxas -v, HGMMA ... E4M3 in the
SASS). The GPU test against torch is tests/gpu/test_attention_fp8.py.

Error measure: max |O - ref| / max |ref| (ref: float64 attention of q * q_descale, k *
k_descale, v * v_descale). P is rounded to e4m3 (3 mantissa bits) for P V, O to bf16;
measured here ~1e-2 (docs/attention.md records it), bounded by FP8_TOL."""
import math
import re
import subprocess

import numpy as np
import pytest

import tessera
import tessera.kernels as tk
from conftest import PTXAS, ROOT

ml_dtypes = pytest.importorskip("ml_dtypes")
pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")

E4M3 = ml_dtypes.float8_e4m3fn
FP8_TOL = 3e-2
# Small blocks keep the interpreter quick and cover several key blocks, ragged ones too.
SMALL = dict(BLOCK_M=32, BLOCK_N=16)


def quantise(x):
    """(x8, descale): x / descale in e4m3 with its largest magnitude at 448 (e4m3's largest)."""
    descale = np.float32(np.abs(x).max() / 448.0)
    return (x / descale).astype(E4M3), descale


def reference(q, k, v, causal, scale):
    """(O, LSE) in float64 of (B, H, N, D) q, (B, H_KV, N_KV, D) k and v (dequantised)."""
    H, Hk = q.shape[1], k.shape[1]
    kr, vr = np.repeat(k, H // Hk, axis=1), np.repeat(v, H // Hk, axis=1)
    s = q @ kr.transpose(0, 1, 3, 2) * scale
    if causal:
        n, nk = s.shape[-2:]
        s = np.where(np.arange(n)[:, None] >= np.arange(nk)[None, :], s, -np.inf)
    m = s.max(-1, keepdims=True)
    p = np.exp(s - m)
    l = p.sum(-1, keepdims=True)
    return (p / l) @ vr, (m + np.log(l))[..., 0]


def make_case(B, H, Hk, N, Nk, D, seed=0, spread=1.0):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((B, H, N, D)) * spread
    k = rng.standard_normal((B, Hk, Nk, D))
    v = rng.standard_normal((B, Hk, Nk, D))
    return [quantise(x) for x in (q, k, v)]


def dequantised(x8, d):
    return x8.astype(np.float64) * np.float64(d)


def run_case(B, H, Hk, N, Nk, D, causal, v_layout="vt", config=SMALL, seed=0, spread=1.0, sm_scale=None):
    (q8, qd), (k8, kd), (v8, vd) = make_case(B, H, Hk, N, Nk, D, seed, spread)
    v_in = np.ascontiguousarray(v8.transpose(0, 1, 3, 2)) if v_layout == "vt" else v8
    o, lse = tk.attention_fp8(q8, k8, v_in, qd, kd, vd, causal=causal, sm_scale=sm_scale, v_layout=v_layout,
                              return_lse=True, config=config)
    assert o.shape == (B, H, N, D) and o.dtype == ml_dtypes.bfloat16
    assert lse.shape == (B, H, N) and lse.dtype == np.float32
    scale = 1 / math.sqrt(D) if sm_scale is None else sm_scale
    ro, rlse = reference(dequantised(q8, qd), dequantised(k8, kd), dequantised(v8, vd), causal, scale)
    out = o.astype(np.float64)
    assert not np.isnan(out).any()
    err = float(np.abs(out - ro).max() / np.abs(ro).max())
    assert err <= FP8_TOL, f"relative error {err:.3e}"
    # LSE sees no fp8 rounding of P (l is summed in fp32): only fp32's.
    assert np.abs(lse - rlse).max() <= 1e-3 * max(1.0, np.abs(rlse).max())
    return err


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("Hk", [2, 1], ids=["mha", "gqa"])
@pytest.mark.parametrize("N", [40, 64])
def test_matches_float64_of_the_dequantised_inputs(N, Hk, causal):
    run_case(B=2, H=2, Hk=Hk, N=N, Nk=N, D=64, causal=causal)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_head_dim_128_and_different_lengths(causal):
    run_case(B=1, H=2, Hk=1, N=24, Nk=56, D=128, causal=causal, seed=1)


def test_pingpong_schedule_computes_the_same():
    """PINGPONG only orders the warpgroups' dots (a no-op in the interpreter): same result."""
    run_case(B=1, H=2, Hk=1, N=40, Nk=40, D=64, causal=True, config=dict(SMALL, PINGPONG=True), seed=8)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_v_not_transposed(causal):
    """v_layout='bhnd': V itself, transposed on its way to the dot."""
    run_case(B=1, H=2, Hk=2, N=40, Nk=40, D=64, causal=causal, v_layout="bhnd", seed=2)


def test_peaked_softmax_and_explicit_scale():
    """Large scores (a peaked softmax: most of P far below 1, where the 2^8 shift of P keeps
    e4m3's mantissa) and an explicit sm_scale."""
    run_case(B=1, H=2, Hk=1, N=48, Nk=48, D=64, causal=False, spread=4.0, sm_scale=0.2, seed=3)


def test_p_shift_keeps_small_probabilities():
    """A row whose probabilities are all ~1/64 (uniform scores over 64 keys): unshifted, e4m3
    holds 1/64 = 2^-6 exactly but the values around it with 2 fewer bits of headroom; the
    shift makes the rounding of P relative (3 mantissa bits) for P down to 2^-14. Here one
    key is 2^-10 less likely than the rest: without the shift it rounds to 0 (e4m3's
    smallest subnormal is 2^-9), which biases O."""
    B, H, N, D = 1, 1, 16, 64
    q = np.zeros((B, H, N, D))
    q[..., 0] = 1.0
    k = np.zeros((B, H, 64, D))
    k[0, 0, 0, 0] = -math.log(2 ** 10) * math.sqrt(D)  # key 0: e^-6.9 = 2^-10 of the others
    v = np.zeros((B, H, 64, D))
    v[0, 0, 0, :] = 448.0
    q8, k8, v8 = (x.astype(E4M3) for x in (q, k, v))
    o = tk.attention_fp8(q8, k8, np.ascontiguousarray(v8.transpose(0, 1, 3, 2)), 1.0, 1.0, 1.0, config=SMALL)
    ro, _ = reference(q8.astype(np.float64), k8.astype(np.float64), v8.astype(np.float64), False, 1 / 8)
    np.testing.assert_allclose(o.astype(np.float64), ro, rtol=0.1)
    assert (o.astype(np.float64) > 0).all()


def test_descales_as_arrays_and_gpu_defaults():
    (q8, qd), (k8, kd), (v8, vd) = make_case(1, 2, 2, 32, 32, 64, seed=4)
    vt = np.ascontiguousarray(v8.transpose(0, 1, 3, 2))
    a = tk.attention_fp8(q8, k8, vt, qd, kd, vd, config=SMALL)
    b = tk.attention_fp8(q8, k8, vt, np.array([qd], np.float32), np.array(kd, np.float32),
                         np.array([[vd]], np.float32), config=SMALL)
    np.testing.assert_array_equal(a.astype(np.float32), b.astype(np.float32))
    c = tk.attention_fp8_config(128, wgmma=True)
    assert (c["BLOCK_M"], c["BLOCK_N"], c["TMA"], c["WARP_SPECIALIZE"]) == (128, 128, True, True)


def test_errors():
    (q8, qd), (k8, kd), (v8, vd) = make_case(1, 2, 2, 32, 32, 64, seed=5)
    vt = np.ascontiguousarray(v8.transpose(0, 1, 3, 2))
    with pytest.raises(TypeError, match="q has dtype float8_e5m2; attention_fp8 takes float8_e4m3fn only"):
        tk.attention_fp8(q8.astype(ml_dtypes.float8_e5m2), k8, vt)
    with pytest.raises(TypeError, match="k has dtype float8_e4m3fnuz; attention_fp8 takes float8_e4m3fn only"):
        tk.attention_fp8(q8, k8.astype(ml_dtypes.float8_e4m3fnuz), vt)
    with pytest.raises(TypeError, match="v has dtype bfloat16; attention_fp8 takes float8_e4m3fn"):
        tk.attention_fp8(q8, k8, vt.astype(ml_dtypes.bfloat16))
    with pytest.raises(ValueError, match=r"v of shape \(1, 2, 32, 64\) does not match k .* v is \(B, H_KV, D, N_KV\)"):
        tk.attention_fp8(q8, k8, v8)
    with pytest.raises(ValueError, match="v_layout must be one of"):
        tk.attention_fp8(q8, k8, vt, v_layout="bnhd")
    with pytest.raises(ValueError, match="k_descale must be a positive finite number, got -1.0"):
        tk.attention_fp8(q8, k8, vt, 1.0, -1.0, 1.0)
    with pytest.raises(ValueError, match="v_descale must be positive and finite, got 0.0"):
        tk.attention_fp8(q8, k8, vt, 1.0, 1.0, np.zeros(1, np.float32))
    with pytest.raises(ValueError, match="q_descale must be one float32 element"):
        tk.attention_fp8(q8, k8, vt, np.ones(2, np.float32))
    with pytest.raises(ValueError, match="q's 2 heads are not a multiple of k/v's 3"):
        tk.attention_fp8(q8, np.concatenate([k8, k8[:, :1]], 1), np.concatenate([vt, vt[:, :1]], 1))
    with pytest.raises(ValueError, match=r"head dim 32 is not supported \(one of \(64, 128\)\)"):
        tk.attention_fp8(q8[..., :32], k8[..., :32], vt[:, :, :32])
    with pytest.raises(ValueError, match="BLOCK_N must be a power of two"):
        tk.attention_fp8(q8, k8, vt, config={"BLOCK_N": 176})



@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("D, BLOCK_M, BLOCK_N", [(64, 128, 128), (128, 128, 128), (128, 128, 64)])
def test_after_all_passes_with_the_gpu_tiles(monkeypatch, D, BLOCK_M, BLOCK_N, causal):
    """The IR after the pass pipeline (TESSERA_INTERPRET_PASSES=1; the interpreter's target
    runs the dots in the tensor-core layouts), with the sm_90a blocks and warps, ragged N."""
    from tessera.kernels import _files
    monkeypatch.setenv("TESSERA_INTERPRET_PASSES", "1")
    monkeypatch.setitem(_files.load("attention").__dict__, "_interpreted", {})
    run_case(B=1, H=2, Hk=1, N=150, Nk=200, D=D, causal=causal,
             config=dict(BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, num_warps=8, num_stages=3), seed=6)
    ir = _files.load("attention").__dict__["_interpreted"]["attn_fwd_fp8_kernel"]._interpreter.ir()
    assert "#mma<version=3" in ir  # wgmma, as on sm_90a

# ------------------------------------------------------------------ sm_90a PTX, ptxas, SASS

KERNEL_FILE = ROOT / "kernels" / "attention.py"


def signature(tma, D, BLOCK_N):
    """What a launch of attention_fp8 on packed CUDA tensors specialises to (V^T: stride_vn 1)."""
    import inspect
    from tessera.kernels import _files
    out = []
    for name, p in inspect.signature(_files.load("attention").attn_fwd_fp8_kernel.fn).parameters.items():
        if "constexpr" in str(p.annotation):
            continue
        if name in ("stride_qd", "stride_kd", "stride_od", "stride_vn"):
            out.append("i32:1")
        elif name.startswith("stride_"):
            out.append("i32:16")
        elif name in ("H", "H_KV", "N_Q", "N_KV"):
            out.append("i32")
        elif name == "sm_scale":
            out.append("fp32")
        elif name == "K" and tma:
            out.append(f"tensordesc<fp8e4nv[{BLOCK_N},{D}]>")
        elif name == "V" and tma:
            out.append(f"tensordesc<fp8e4nv[{D},{BLOCK_N}]>")
        else:
            out.append({"Q": "*fp8e4nv", "K": "*fp8e4nv", "V": "*fp8e4nv", "O": "*bf16"}.get(name, "*fp32") + ":16")
    return ",".join(out)


def compile_default(D, causal, tma=True):
    c = tk.attention_fp8_config(D, causal, wgmma=True)
    return tessera.compile(str(KERNEL_FILE), kernel="attn_fwd_fp8_kernel", signature=signature(tma, D, c["BLOCK_N"]),
                           constexprs={"HEAD_DIM": D, "BLOCK_M": c["BLOCK_M"], "BLOCK_N": c["BLOCK_N"],
                                       "CAUSAL": causal, "TMA": tma, "WARP_SPECIALIZE": tma and c["WARP_SPECIALIZE"]},
                           num_warps=c["num_warps"], num_stages=c["num_stages"], maxnreg=c["maxnreg"],
                           target="sm_90a")


@pytest.mark.parametrize("tma", [True, False], ids=["tma", "pointers"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("D", [64, 128])
def test_sm90a_fp8_wgmma_without_spills(D, causal, tma, tmp_path):
    """Both dots on fp8 wgmma (e4m3 x e4m3, k = 32: QGMMA ... E4M3 in the SASS), P rounded with
    cvt.rn.satfinite two elements at a time, no spills under ptxas -v; TMA: K and V^T copied by the TMA unit from a
    producer warpgroup (setmaxnreg)."""
    from test_vectorized_access import sass
    k = compile_default(D, causal, tma)
    ptx = k.asm["ptx"]
    assert k.metadata.shared <= 227 * 1024
    assert "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3" in ptx
    assert "f16" not in re.sub(r"bf16", "", "".join(re.findall(r"wgmma\.mma_async[\w.]*", ptx)))
    # P: one cvt.rn.satfinite per two elements (a 128 x 128 tile over 256 threads: 32 a sweep).
    assert ptx.count("cvt.rn.satfinite.e4m3x2.f32") == 2 * 32
    if tma:
        assert "cp.async.bulk.tensor.2d" in ptx and "setmaxnreg" in ptx
    # P V takes P from registers (its 8-bit A fragments exchanged across each quad of lanes:
    # two shfl and two prmt per 16 k-columns), not through shared memory.
    pv = re.findall(r"k32\.f32\.e4m3\.e4m3 \{[^}]*\}, \{%r\d+,%r\d+,%r\d+,%r\d+\}", ptx)
    assert len(pv) == 2 * (128 // 32), len(pv)  # two sweeps, BLOCK_N / 32 wgmmas each
    assert ptx.count("prmt.b32") == 2 * 2 * (128 // 16)
    # The exchanged words are built from the cvt pairs' 16 bits, not byte by byte.
    assert "shr.u16" not in ptx and "and.b16" not in ptx
    path = tmp_path / "fwd.ptx"
    path.write_text(ptx)
    proc = subprocess.run([str(PTXAS), "-arch=sm_90a", "-v", str(path), "-o", str(tmp_path / "fwd.cubin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "0 bytes spill stores" in proc.stderr and "0 bytes spill loads" in proc.stderr, proc.stderr
    assert "C7514" not in proc.stderr and "C7519" not in proc.stderr, proc.stderr
    text = sass(tmp_path, path)
    assert re.search(r"QGMMA\.64x128x32\.F32\.E4M3\.E4M3", text), "no fp8 wgmma in the SASS"
    assert re.search(r"QGMMA\.64x\d+x32\.F32\.E4M3\.E4M3 R\d+, R\d+, gdesc", text), "P V's A not from registers"
    assert not re.search(r"\b(LDL|STL)\b", text)
    assert not re.search(r"\bHGMMA\b", text)


def test_fp8_register_a_can_be_switched_off(monkeypatch, tmp_path):
    """TESSERA_WGMMA_FP8_REGISTER_A=0 (an A/B switch for the benchmark): P V's A is staged
    through shared memory again (a descriptor operand). The switch is part of the kernel-cache
    key when off: the same kernel compiled both ways into one cache gives both."""
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))

    def ptx():
        return tessera.compile(str(ROOT / "tests/python/lang_kernels/dot_fp8.py"), kernel="chain_dot_fp8_p_kernel",
                               signature="*u8:16,*u8:16,*u8:16,*fp32:16,*fp32:16",
                               constexprs={"E5": 0, "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, num_warps=4,
                               target="sm_90a").asm["ptx"]
    register_a = r"k32\.f32\.e4m3\.e4m3 \{[^}]*\}, \{%r"
    on = ptx()
    monkeypatch.setenv("TESSERA_WGMMA_FP8_REGISTER_A", "0")
    off = ptx()
    assert re.search(register_a, on) and "prmt.b32" in on
    assert not re.search(register_a, off) and "prmt.b32" not in off
