"""Language functions that libraries bind to module-level names outside any kernel (flash-linear-attention's
`gather = tl.gather` in its op module, then `from .op import gather` in kernel files): every name of
triton.language that kernels can call must exist as an attribute of tessera.language, or the library's
module fails to import before any kernel is compiled."""
import sys

import numpy as np
import pytest

import tessera
import tessera.compat
import tessera.language as tl

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")


@pytest.mark.parametrize("name", ["gather", "sort", "histogram", "inline_asm_elementwise"])
def test_language_functions_of_data_movement_are_attributes(name):
    fn = getattr(tl, name)
    with pytest.raises(RuntimeError, match="inside a @tessera.jit kernel"):
        fn()


OPS = '''
import triton
import triton.language as tl

gather = tl.gather
sort_rows = tl.sort
exp = tl.exp

try:
    from triton.language.standard import _log2
except ImportError:
    def _log2(x):
        raise NotImplementedError


@triton.jit
def safe_exp(x):
    # the module's own alias of a language function, inside a helper other modules call
    return exp(tl.where(x <= 0, x, float("-inf")))


@triton.jit
def swap_halves(x, N: tl.constexpr):
    # Inductor's sort helpers: a constexpr from triton.language.standard, an integer dtype from tl.core
    LOG: tl.constexpr = _log2(N)
    idtype = tl.core.get_int_dtype(bitwidth=x.dtype.primitive_bitwidth, signed=True)
    bits = x.to(idtype, bitcast=True)
    halves = tl.reshape(bits, [2, 1 << (LOG - 1)])
    return tl.reshape(tl.flip(halves, 0), [N]).to(x.dtype, bitcast=True)
'''

KERNELS = '''
import triton
import triton.language as tl
from aliasops.op import gather, sort_rows, safe_exp, swap_halves


@triton.jit
def permute_rows_kernel(x_ptr, idx_ptr, out_ptr, sorted_ptr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)[:, None]
    cols = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rows * N + cols)
    idx = tl.load(idx_ptr + rows * N + cols)
    tl.store(out_ptr + rows * N + cols, gather(x, idx, 1))
    tl.store(sorted_ptr + rows * N + cols, sort_rows(x, 1))


@triton.jit
def helpers_kernel(x_ptr, out_ptr, swapped_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, safe_exp(x))
    tl.store(swapped_ptr + offs, swap_halves(x, N))
'''


CLASH = '''
import triton
import triton.language as tl
from aliasops.op import safe_exp

exp = tl.exp2  # not the op module's exp


@triton.jit
def clash_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, safe_exp(x) + exp(x))
'''


@pytest.fixture
def aliasops(tmp_path, monkeypatch):
    (tmp_path / "aliasops").mkdir()
    (tmp_path / "aliasops" / "__init__.py").write_text("")
    (tmp_path / "aliasops" / "op.py").write_text(OPS)
    (tmp_path / "aliasops" / "kernels.py").write_text(KERNELS)
    (tmp_path / "aliasops" / "clash.py").write_text(CLASH)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("TESSERA_INTERPRET", "1")
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path / "cache"))
    tessera.compat.install()
    import importlib
    try:
        yield importlib.import_module("aliasops.kernels")
    finally:
        tessera.compat.uninstall()
        for name in ["aliasops.kernels", "aliasops.clash", "aliasops.op", "aliasops"]:
            sys.modules.pop(name, None)


def test_gather_and_sort_bound_to_module_names_of_another_module(aliasops):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    idx = rng.integers(0, 8, (4, 8)).astype(np.int32)
    out = np.zeros_like(x)
    srt = np.zeros_like(x)
    aliasops.permute_rows_kernel[(1,)](x, idx, out, srt, M=4, N=8)
    np.testing.assert_array_equal(out, np.take_along_axis(x, idx, 1))
    np.testing.assert_array_equal(srt, np.sort(x, 1))
    k = tessera.compile(aliasops.permute_rows_kernel, signature="*fp32,*i32,*fp32,*fp32", constexprs={"M": 16, "N": 32},
                        target="sm_90a")
    assert ".entry permute_rows_kernel" in k.asm["ptx"]


def test_helpers_of_another_module_using_its_language_aliases_and_standard_constexpr_functions(aliasops):
    x = np.linspace(-3, 3, 16).astype(np.float32)
    out = np.zeros_like(x)
    swapped = np.zeros_like(x)
    aliasops.helpers_kernel[(1,)](x, out, swapped, N=16)
    np.testing.assert_allclose(out, np.where(x <= 0, np.exp(x), 0.0), rtol=1e-6)
    np.testing.assert_array_equal(swapped, np.concatenate([x[8:], x[:8]]))
    k = tessera.compile(aliasops.helpers_kernel, signature="*fp16,*fp16,*fp16", constexprs={"N": 256}, target="sm_90a")
    assert ".entry helpers_kernel" in k.asm["ptx"]


def test_standard_constexpr_functions_on_the_host():
    tessera.compat.install()
    try:
        scope = {"__name__": "user_module"}
        exec("from triton.language.standard import _log2, _is_power_of_two", scope)
        assert [scope["_log2"](n) for n in (1, 2, 3, 16, 1000)] == [0, 1, 1, 4, 9]
        assert [scope["_is_power_of_two"](n) for n in (0, 1, 6, 64)] == [False, True, False, True]
    finally:
        tessera.compat.uninstall()


def test_a_kernel_file_that_binds_a_helpers_alias_to_another_function_is_an_error(aliasops):
    import importlib
    clash = importlib.import_module("aliasops.clash")
    with pytest.raises(TypeError, match="the composed functions use 'exp' for tessera.language.exp, but the kernel's "
                                        "file binds 'exp' to something else"):
        clash.clash_kernel[(1,)](np.zeros(4, np.float32), np.zeros(4, np.float32), N=4)
