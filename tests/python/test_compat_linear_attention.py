"""Constructs of flash-linear-attention's kernels (fla/ops) in kernels written here in their style:
an autotune key that lists names the kernel does not have (left out, as Triton does), a grid given
as `kernel[n, m]`, heuristics on None arguments, a boolean block added to a float block, and
fp_downcast_rounding on a block pointer's store."""
import sys
import warnings

import numpy as np
import pytest

import tessera
import tessera.compat

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")


KERNELS = '''
import triton
import triton.language as tl


@triton.heuristics({'USE_SCALE': lambda args: args['scale'] is not None})
@triton.autotune(
    configs=[triton.Config({}, num_warps=w) for w in [1, 2]],
    key=['H', 'K', 'BT'],  # K and BT name no parameter: left out of the key
)
@triton.jit(do_not_specialize=['T'])
def unit_lower_kernel(A, out, scale, T, H: tl.constexpr, USE_SCALE: tl.constexpr):
    i_t, i_h = tl.program_id(0), tl.program_id(1)
    o = tl.arange(0, 16)
    p_A = tl.make_block_ptr(A + i_h * T * 16, (T, 16), (16, 1), (i_t * 16, 0), (16, 16), (1, 0))
    p_o = tl.make_block_ptr(out + i_h * T * 16, (T, 16), (16, 1), (i_t * 16, 0), (16, 16), (1, 0))
    b_A = tl.load(p_A, boundary_check=(0, 1))
    b_A = -tl.where(o[:, None] > o[None, :], b_A, 0)
    if USE_SCALE:
        b_A *= scale
    b_A += o[:, None] == o[None, :]
    tl.store(p_o, b_A.to(p_o.dtype.element_ty, fp_downcast_rounding="rtne"), boundary_check=(0, 1))
'''


@pytest.fixture
def fla_like(tmp_path, monkeypatch):
    (tmp_path / "flalike").mkdir()
    (tmp_path / "flalike" / "__init__.py").write_text("")
    (tmp_path / "flalike" / "kernels.py").write_text(KERNELS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("TESSERA_INTERPRET", "1")
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path / "cache"))
    tessera.compat.install()
    import importlib
    try:
        yield importlib.import_module("flalike.kernels")
    finally:
        tessera.compat.uninstall()
        for name in ["flalike.kernels", "flalike"]:
            sys.modules.pop(name, None)


@pytest.mark.parametrize("scale", [None, 0.5])
def test_stale_autotune_keys_and_subscript_grid(fla_like, scale):
    T, H = 40, 2
    A = np.random.default_rng(0).standard_normal((H, T, 16)).astype(np.float32)
    out = np.zeros((H, T, 16), np.float16)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fla_like.unit_lower_kernel[tessera.cdiv(T, 16), H](A=A, out=out, scale=scale, T=T, H=H)
    assert any("key 'K' is not a parameter of unit_lower_kernel" in str(w.message) for w in caught)
    rows = np.arange(T) % 16
    want = np.where(rows[None, :, None] > np.arange(16)[None, None, :], -A * (scale or 1.0), 0.0)
    want += rows[None, :, None] == np.arange(16)[None, None, :]
    np.testing.assert_array_equal(out, want.astype(np.float16))
