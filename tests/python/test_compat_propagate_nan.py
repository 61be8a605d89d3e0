"""tl.PropagateNan and propagate_nan= of tl.maximum / tl.minimum / tl.clamp, as vLLM's sampling kernels
use them (a NaN-propagating maximum as a tl.reduce combine function): ALL gives NaN when an operand
is NaN, NONE (the default) the other operand, as Triton's maximumf / maxnumf."""
import subprocess

import numpy as np
import pytest

from conftest import PTXAS

import tessera
import tessera.language as tl

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")


@tessera.jit
def _max_nan(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@tessera.jit(interpret=True)
def nan_kernel(x_ptr, y_ptr, out_ptr, red_ptr, BLOCK: tl.constexpr, MODE: tl.constexpr = tl.PropagateNan.ALL):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(out_ptr + 0 * BLOCK + offs, tl.maximum(x, y, propagate_nan=MODE))
    tl.store(out_ptr + 1 * BLOCK + offs, tl.minimum(x, y, propagate_nan=tl.PropagateNan.ALL))
    tl.store(out_ptr + 2 * BLOCK + offs, tl.maximum(x, y))  # NONE
    tl.store(out_ptr + 3 * BLOCK + offs, tl.clamp(x, -1.0, 1.0, propagate_nan=tl.PropagateNan.ALL))
    tl.store(red_ptr, tl.reduce(x, 0, _max_nan))
    tl.store(red_ptr + 1, tl.max(y, 0))


def test_propagate_nan_all_and_none():
    x = np.array([1.0, np.nan, -3.0, 0.5, np.nan, 2.0, -0.5, 4.0], np.float32)
    y = np.array([0.0, 2.0, np.nan, 0.25, np.nan, 3.0, -1.5, -4.0], np.float32)
    out = np.zeros(32, np.float32)
    red = np.zeros(2, np.float32)
    nan_kernel[(1,)](x, y, out, red, BLOCK=8)
    out = out.reshape(4, 8)
    np.testing.assert_array_equal(out[0], np.maximum(x, y))        # numpy's maximum propagates NaN
    np.testing.assert_array_equal(out[1], np.minimum(x, y))
    np.testing.assert_array_equal(out[2], np.fmax(x, y))           # maxnum: the other operand
    np.testing.assert_array_equal(out[3], np.clip(x, -1.0, 1.0))   # a NaN x stays NaN
    assert np.isnan(red[0])
    none = np.zeros(32, np.float32)
    nan_kernel[(1,)](x, y, none, red, BLOCK=8, MODE=tl.PropagateNan.NONE)
    np.testing.assert_array_equal(none.reshape(4, 8)[0], np.fmax(x, y))


def test_propagate_nan_compiles_for_the_gpu(tmp_path):
    k = tessera.compile(nan_kernel, signature="*fp32,*fp32,*fp32,*fp32", constexprs={"BLOCK": 256}, target="sm_90a")
    (tmp_path / "k.ptx").write_text(k.asm["ptx"])
    subprocess.run([str(PTXAS), "-arch=sm_90a", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")], check=True)


@tessera.jit(interpret=True)
def bad_mode_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(x_ptr + offs, tl.maximum(x, x, propagate_nan=3))


def test_a_propagate_nan_that_is_no_mode_is_one_clear_error():
    with pytest.raises(tessera.CompilationError, match="propagate_nan must be tl.PropagateNan.NONE or "
                                                       "tl.PropagateNan.ALL, got"):
        bad_mode_kernel[(1,)](np.zeros(4, np.float32), BLOCK=4)


def test_propagate_nan_on_the_host_in_compatibility_mode():
    import tessera.compat
    tessera.compat.install()
    try:
        scope = {"__name__": "user_module"}
        exec("import triton.language as tl\nmodes = (tl.PropagateNan.NONE, tl.PropagateNan.ALL)", scope)
        assert [m.value for m in scope["modes"]] == [0, 0xFFFF]  # a plain Enum, as Triton's
    finally:
        tessera.compat.uninstall()
