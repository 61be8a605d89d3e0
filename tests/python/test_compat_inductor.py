"""Constructs of the kernels PyTorch Inductor generates (and of its runtime's triton_helpers), in
kernels written here in their form: libdevice.ilogb / ldexp (Inductor's frexp), checked against
numpy on zeros, subnormals, infinities and NaN, interpreted and compiled to PTX."""
import subprocess

import numpy as np
import pytest

from conftest import PTXAS

import tessera
import tessera.language as tl
from tessera.language.extra import libdevice

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")


@tessera.jit(interpret=True)
def frexp_like_kernel(x_ptr, mant_ptr, exp_ptr, ilogb_ptr, scaled_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    e = libdevice.ilogb(x)
    tl.store(ilogb_ptr + offs, e)
    y = e + 1
    tl.store(exp_ptr + offs, tl.where(x == 0, 0, y))
    tl.store(mant_ptr + offs, tl.where(x == 0, 0.0, libdevice.ldexp(x, -y)))
    tl.store(scaled_ptr + offs, libdevice.scalbn(x, 3))


X = np.array([0.0, -0.0, 1.0, -3.5, 1e-40, -2e-45, 3e38, 0.1, 1e-38, np.inf, -np.inf, np.nan, 6.0, -1e-30,
              2.5e-39, 65504.0], np.float32)


def test_ilogb_and_ldexp_match_numpy_frexp():
    mant, ex, ilogb, scaled = (np.zeros(16, np.float32), np.zeros(16, np.int32), np.zeros(16, np.int32),
                               np.zeros(16, np.float32))
    frexp_like_kernel[(1,)](X, mant, ex, ilogb, scaled, BLOCK=16)
    finite = np.isfinite(X)
    want_m, want_e = np.frexp(X[finite])
    np.testing.assert_array_equal(mant[finite], want_m)
    np.testing.assert_array_equal(ex[finite], want_e)
    nonzero = finite & (X != 0)
    np.testing.assert_array_equal(ilogb[nonzero], want_e[X[finite] != 0] - 1)
    assert list(ilogb[[0, 1, 11]]) == [-2**31] * 3 and list(ilogb[[9, 10]]) == [2**31 - 1] * 2
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(scaled, np.ldexp(X, 3))  # 3e38 * 8 overflows to inf; subnormals exact


def test_ilogb_and_ldexp_compile_for_the_gpu(tmp_path):
    k = tessera.compile(frexp_like_kernel, signature="*fp32,*fp32,*i32,*i32,*fp32", constexprs={"BLOCK": 256},
                        target="sm_90a")
    ptx = tmp_path / "k.ptx"
    ptx.write_text(k.asm["ptx"])
    subprocess.run([str(PTXAS), "-arch=sm_90a", str(ptx), "-o", str(tmp_path / "k.cubin")], check=True)
    assert "cvt.rn.f32.f64" in k.asm["ptx"]


@tessera.jit(interpret=True)
def ldexp_f64_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, libdevice.ldexp(tl.load(x_ptr + offs), 2))


def test_ldexp_of_float64_is_one_clear_error():
    with pytest.raises(tessera.CompilationError, match="ldexp of float64 operands is not supported yet"):
        ldexp_f64_kernel[(1,)](np.zeros(4, np.float64), BLOCK=4)
