"""Constructs found by driving flash-linear-attention (modules and ops), SGLang's extend attention and fused MoE,
lightllm, attorch and kernl through the compatibility mode (their kernels are not copied here: each test is a
kernel written in the style of the construct), interpreted against numpy and compiled to PTX."""
import numpy as np
import pytest

import tessera
import tessera.language as tl

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")


# ------------------------------------------------------------------ tl.core.CONSTEXPR_0

def test_constexpr_0_exists_on_the_host():
    # fla's argsort helper and Triton's own sort take `descending: tl.constexpr = tl.core.CONSTEXPR_0`:
    # the default is evaluated when the module is imported
    assert tl.core.CONSTEXPR_0 == 0 and isinstance(tl.core.CONSTEXPR_0, tl.constexpr)
    assert tl.CONSTEXPR_0 == 0


@tessera.jit
def _order(x, descending: tl.constexpr = tl.core.CONSTEXPR_0):
    if descending:
        return tl.sort(x, descending=True)
    return tl.sort(x)


@tessera.jit(interpret=True)
def sort_rows_kernel(x_ptr, out_ptr, DESC: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    if DESC:
        y = _order(x, tl.core.CONSTEXPR_0 + 1)
    else:
        y = _order(x)
    tl.store(out_ptr + offs, y)


@pytest.mark.parametrize("desc", [False, True])
def test_constexpr_0_as_a_helper_default_in_kernels(desc):
    x = np.random.default_rng(0).permutation(16).astype(np.float32)
    out = np.zeros_like(x)
    sort_rows_kernel[(1,)](x, out, DESC=desc, N=16)
    np.testing.assert_array_equal(out, np.sort(x)[::-1] if desc else np.sort(x))
    ptx = tessera.compile(sort_rows_kernel, signature="*fp32,*fp32", constexprs={"DESC": desc, "N": 16},
                          target="sm_90a").asm["ptx"]
    assert ".visible .entry sort_rows_kernel" in ptx


# ------------------------------------------------------------------ helpers imported by relative imports

RELATIVE_HELPERS = '''
import triton
import triton.language as tl


@triton.jit
def scale_where_positive(x, factor):
    return tl.where(x > 0, x * factor, 0.0)
'''

# attorch's layout: act_kernels.py does `from .dropout_kernels import apply_dropout` and a @jit helper of
# the kernel's own file calls it; linear_kernels.py does `from .act_kernels import apply_act_func`
RELATIVE_KERNELS = '''
import triton
import triton.language as tl

from .helpers import scale_where_positive
from . import helpers as h


@triton.jit
def apply(x, factor, TWICE: tl.constexpr):
    y = scale_where_positive(x, factor)
    if TWICE:
        y = h.scale_where_positive(y, factor)
    return y


@triton.jit
def relative_kernel(x_ptr, out_ptr, n, factor, TWICE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + offs, apply(x, factor, TWICE), mask=offs < n)
'''


@pytest.fixture
def relpkg(tmp_path, monkeypatch):
    import importlib
    import sys
    import tessera.compat
    (tmp_path / "relpkg").mkdir()
    (tmp_path / "relpkg" / "__init__.py").write_text("")
    (tmp_path / "relpkg" / "helpers.py").write_text(RELATIVE_HELPERS)
    (tmp_path / "relpkg" / "kernels.py").write_text(RELATIVE_KERNELS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TESSERA_INTERPRET", "1")
    tessera.compat.install()
    try:
        yield importlib.import_module("relpkg.kernels")
    finally:
        tessera.compat.uninstall()
        for name in ["relpkg.kernels", "relpkg.helpers", "relpkg"]:
            sys.modules.pop(name, None)


@pytest.mark.parametrize("twice", [False, True])
def test_helpers_imported_by_a_relative_import(relpkg, twice):
    x = np.linspace(-2, 2, 20).astype(np.float32)
    out = np.zeros_like(x)
    relpkg.relative_kernel[(1,)](x, out, 20, 3.0, TWICE=twice, BLOCK=32)
    ref = np.where(x > 0, x * 3.0, 0.0)
    np.testing.assert_allclose(out, np.where(ref > 0, ref * 3.0, 0.0) if twice else ref, rtol=1e-6)
    ptx = tessera.compile(relpkg.relative_kernel, signature="*fp32,*fp32,i32,fp32",
                          constexprs={"TWICE": twice, "BLOCK": 128}, target="sm_90a").asm["ptx"]
    assert ".visible .entry relative_kernel" in ptx


# ------------------------------------------------------------------ a scalar indexed with [:, None]

@tessera.jit(interpret=True)
def scale_rows_kernel(x_ptr, s_ptr, out_ptr, SCALAR: tl.constexpr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)
    cols = tl.arange(0, N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :])
    if SCALAR:
        s = tl.load(s_ptr)             # one scale for every row (SGLang: a block-wise scale whose offset is a scalar)
    else:
        s = tl.load(s_ptr + rows)
    t = s[:, None]                     # Triton: a scalar indexed so is a <1> block (the 1 inserted where Python's
    u = s[None, :]                     # list.insert puts it), which broadcasts like the scalar
    tl.store(out_ptr + rows[:, None] * N + cols[None, :], x * t + u * 0)


@pytest.mark.parametrize("scalar", [True, False])
def test_a_scalar_indexed_with_none_is_a_block_of_one(scalar):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    s = rng.standard_normal(4).astype(np.float32)
    out = np.zeros_like(x)
    if scalar:
        scale_rows_kernel[(1,)](x, s, out, SCALAR=True, M=4, N=8)
        np.testing.assert_allclose(out, x * s[0], rtol=1e-6)
        ptx = tessera.compile(scale_rows_kernel, signature="*fp32,*fp32,*fp32",
                              constexprs={"SCALAR": True, "M": 64, "N": 64}, target="sm_90a").asm["ptx"]
        assert ".visible .entry scale_rows_kernel" in ptx
    else:  # a 1-D block: [:, None] is a column, [None, :] a row, as before
        with pytest.raises(tessera.CompilationError, match="broadcast|shape"):
            scale_rows_kernel[(1,)](x, s, out, SCALAR=False, M=4, N=8)


@tessera.jit(interpret=True)
def too_many_indices_kernel(x_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    y = x[:, :, None]
    tl.store(x_ptr + tl.arange(0, N), tl.sum(y, 1)[:, 0])


def test_too_many_indices_of_a_block_is_still_an_error():
    with pytest.raises(tessera.CompilationError, match="too many indices"):
        too_many_indices_kernel[(1,)](np.zeros(8, np.float32), N=8)
