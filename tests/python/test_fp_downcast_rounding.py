"""x.to(dtype, fp_downcast_rounding=...) and tl.cast(..., fp_downcast_rounding=...) as Triton 3.6's
semantic.cast: "rtne" (the default) or "rtz" for a narrowing float conversion; any other mode, or a mode
on a conversion that does not narrow a float, is an error. ("rtz" used to be accepted and ignored:
Triton's test_conversions.py test_typeconvert_downcast ... rtz.)"""
import subprocess

import ml_dtypes
import numpy as np
import pytest

from conftest import PTXAS

import tessera
import tessera.language as tl

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")

NUMPY = {"fp16": np.float16, "bf16": ml_dtypes.bfloat16, "fp8e5": ml_dtypes.float8_e5m2}
TL = {"fp16": tl.float16, "bf16": tl.bfloat16, "fp8e5": tl.float8e5}


@tessera.jit(interpret=True)
def downcast_kernel(x_ptr, out_ptr, DST: tl.constexpr, ROUNDING: tl.constexpr, FORM: tl.constexpr,
                    BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if FORM == "method":
        y = x.to(DST, fp_downcast_rounding=ROUNDING)
    else:
        y = tl.cast(x, DST, fp_downcast_rounding=ROUNDING)
    tl.store(out_ptr + offs, y)


def toward_zero(x, np_dtype):
    """x (float64) rounded toward zero to np_dtype, from the sorted list of its finite values."""
    bits = np.arange(2 ** (8 * np.dtype(np_dtype).itemsize), dtype=np.uint64)
    with np.errstate(invalid="ignore"):
        every = bits.astype({1: np.uint8, 2: np.uint16}[np.dtype(np_dtype).itemsize]).view(np_dtype).astype(np.float64)
    finite = np.unique(np.abs(every[np.isfinite(every)]))
    mag = finite[np.searchsorted(finite, np.abs(x), side="right") - 1]
    return np.where(np.isnan(x), np.nan, np.copysign(mag, x))


def inputs(src, dst):
    rng = np.random.default_rng(7)
    top = float(ml_dtypes.finfo(NUMPY[dst]).max)
    tiny = float(ml_dtypes.finfo(NUMPY[dst]).smallest_subnormal)
    x = np.concatenate([rng.standard_normal(200) * 10.0 ** rng.integers(-3, 4, 200),
                        rng.uniform(0.1, 3.0, 24) * tiny, -rng.uniform(0.1, 3.0, 16) * tiny,
                        rng.uniform(0.5, 1.0, 12) * top, [0.0, -0.0, np.nan, 1.0]])
    return x.astype(np.float32 if src == "fp32" else NUMPY[src])


@pytest.mark.parametrize("form", ["method", "cast"])
@pytest.mark.parametrize("src, dst", [("fp32", "fp16"), ("fp32", "bf16"), ("fp32", "fp8e5"), ("fp16", "fp8e5"),
                                      ("bf16", "fp8e5")])
def test_rtz_rounds_toward_zero(src, dst, form):
    x = inputs(src, dst)
    out = np.zeros(x.shape, NUMPY[dst])
    downcast_kernel[(1,)](x, out, TL[dst], "rtz", form, BLOCK=x.size)
    want = toward_zero(x.astype(np.float64), NUMPY[dst])
    got = out.astype(np.float64)
    np.testing.assert_array_equal(got, want)
    assert (np.signbit(got) == np.signbit(want))[~np.isnan(want)].all()


@pytest.mark.parametrize("rounding", [None, "rtne"])
def test_rtne_is_the_default_rounding(rounding):
    x = inputs("fp32", "fp16")
    out = np.zeros(x.shape, np.float16)
    downcast_kernel[(1,)](x, out, tl.float16, rounding, "method", BLOCK=x.size)
    np.testing.assert_array_equal(out, x.astype(np.float16))


def test_rtz_compiles_for_the_gpu(tmp_path):
    for dst in ("fp16", "bf16", "fp8e5"):
        k = tessera.compile(downcast_kernel, signature=f"*fp32,*{dst}",
                            constexprs={"DST": TL[dst], "ROUNDING": "rtz", "FORM": "method", "BLOCK": 256},
                            target="sm_90a")
        (tmp_path / "k.ptx").write_text(k.asm["ptx"])
        subprocess.run([str(PTXAS), "-arch=sm_90a", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")],
                       check=True)


@pytest.mark.parametrize("dst, rounding, message", [
    (tl.float16, "rtn", "Invalid rounding mode: rtn. Supported rounding modes are 'rtne' and 'rtz'."),
    (tl.float64, "rtz", "fp_downcast_rounding should be set only for truncating fp conversions"),
    (tl.int32, "rtne", "fp_downcast_rounding should be set only for truncating fp conversions"),
])
def test_bad_rounding_is_an_error(dst, rounding, message):
    x = np.zeros(16, np.float32)
    out = np.zeros(16, np.float64 if dst == tl.float64 else np.float16 if dst == tl.float16 else np.int32)
    with pytest.raises(tessera.CompilationError, match=message.replace("(", r"\(").replace(".", r"\.")):
        downcast_kernel[(1,)](x, out, dst, rounding, "method", BLOCK=16)
