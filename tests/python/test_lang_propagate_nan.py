"""tl.PropagateNan and `propagate_nan=` of tl.minimum / tl.maximum / tl.clamp, as Triton's
(test_core.py's test_propagate_nan): NONE, a NaN operand loses (PTX min/max, llvm.minnum);
ALL, a NaN operand is the result (PTX min.NaN/max.NaN, llvm.minimum). The interpreter against
numpy's fmin/fmax (NONE) and minimum/maximum (ALL); the PTX of both back-ends."""
import numpy as np
import pytest

import tessera
import tessera.language as tl

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")


@tessera.jit(interpret=True)
def named_kernel(A, B, C, propagate_nan: tl.constexpr, func: tl.constexpr):
    # test_core.py's kernel: the mode by name, the function by name
    if func == 'clamp':
        tl.store(C, getattr(tl, func)(tl.load(A), -tl.load(B), tl.load(B),
                                      propagate_nan=getattr(tl.PropagateNan, propagate_nan)))
    else:
        tl.store(C, getattr(tl, func)(tl.load(A), tl.load(B), propagate_nan=getattr(tl.PropagateNan, propagate_nan)))


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize("propagate_nan", ["NONE", "ALL"])
@pytest.mark.parametrize("func", ["minimum", "maximum", "clamp"])
def test_triton_cases(dtype, propagate_nan, func):
    rng = np.random.default_rng(0)
    for mode in ["A", "B", "both"]:
        if func == "clamp" and mode == "B":
            continue  # clamp does not guarantee propagation from its bounds (as in Triton)
        A = rng.standard_normal(1).astype(dtype)
        B = rng.standard_normal(1).astype(dtype)
        if mode in ("A", "both"):
            A[0] = np.nan
        if mode in ("B", "both"):
            B[0] = np.nan
        C = np.zeros_like(A)
        named_kernel[(1,)](A, B, C, propagate_nan, func)
        assert np.isnan(C[0]) == (mode == "both" or propagate_nan == "ALL"), (mode, C)


@tessera.jit(interpret=True)
def block_kernel(X, Y, LO, HI, OUT, P: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    y = tl.load(Y + offs)
    tl.store(OUT + offs, tl.minimum(x, y, propagate_nan=P))
    tl.store(OUT + BLOCK + offs, tl.maximum(x, y, propagate_nan=P))
    tl.store(OUT + 2 * BLOCK + offs, tl.clamp(x, tl.load(LO + offs), tl.load(HI + offs), propagate_nan=P))
    tl.store(OUT + 3 * BLOCK + offs, tl.minimum(x, y))  # the default: NONE


@pytest.mark.parametrize("mode", [tl.PropagateNan.NONE, tl.PropagateNan.ALL])
def test_blocks_against_numpy(mode):
    n = 64
    rng = np.random.default_rng(1)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    x[::5] = np.nan
    y[::3] = np.nan
    lo = np.full(n, -0.5, np.float32)
    hi = np.full(n, 0.5, np.float32)
    out = np.zeros(4 * n, np.float32)
    block_kernel[(1,)](x, y, lo, hi, out, mode, n)  # the enum as a constexpr argument
    if mode == tl.PropagateNan.ALL:
        ref = [np.minimum(x, y), np.maximum(x, y), np.minimum(np.maximum(x, lo), hi)]
    else:
        ref = [np.fmin(x, y), np.fmax(x, y), np.fmin(np.fmax(x, lo), hi)]
    ref.append(np.fmin(x, y))
    np.testing.assert_array_equal(out, np.concatenate(ref))


def compile_block_kernel(mode, backend):
    return tessera.compile(block_kernel, signature="*fp32,*fp32,*fp32,*fp32,*fp32",
                           constexprs={"P": mode, "BLOCK": 64}, target="sm_80", backend=backend)


def test_ptx():
    ptx_all = compile_block_kernel(tl.PropagateNan.ALL, "llvm").asm["ptx"]
    ptx_none = compile_block_kernel(tl.PropagateNan.NONE, "llvm").asm["ptx"]
    assert "max.NaN.f32" in ptx_all and "min.NaN.f32" in ptx_all
    assert "NaN" not in ptx_none


def test_nvrtc_source(tmp_path):
    from lang_support import assemble
    k = compile_block_kernel(tl.PropagateNan.ALL, "nvrtc")
    # a NaN operand is the result, then fminf/fmaxf
    assert k.asm["cuda"].count(" != ") >= 6, k.asm["cuda"]
    assemble(k.asm["ptx"], "sm_80", tmp_path)


def test_ir_attribute():
    ir = tessera.compile(block_kernel, signature="*fp32,*fp32,*fp32,*fp32,*fp32",
                         constexprs={"P": tl.PropagateNan.ALL, "BLOCK": 64}, target="sm_80").asm["ir"]
    assert "propagate_nan = 1" in ir


@tessera.jit(interpret=True)
def enum_kernel(OUT, P: tl.constexpr):
    tl.store(OUT, P == tl.PropagateNan.ALL)
    tl.store(OUT + 1, P.value)
    tl.store(OUT + 2, P == 65535)  # an enum member is not its value (Python's Enum)


@pytest.mark.parametrize("mode", [tl.PropagateNan.NONE, tl.PropagateNan.ALL])
def test_enum_value(mode):
    out = np.zeros(3, np.int32)
    enum_kernel[(1,)](out, mode)
    assert list(out) == [mode == tl.PropagateNan.ALL, mode.value, 0]


@tessera.jit(interpret=True)
def bad_mode_kernel(A, C, P: tl.constexpr):
    tl.store(C, tl.maximum(tl.load(A), tl.load(A), propagate_nan=P))


def test_bad_mode_is_an_error():
    a = np.zeros(1, np.float32)
    with pytest.raises(tessera.CompilationError, match="propagate_nan must be tl.PropagateNan.NONE or"):
        bad_mode_kernel[(1,)](a, a, True)
