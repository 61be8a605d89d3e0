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
'''

KERNELS = '''
import triton
import triton.language as tl
from aliasops.op import gather, sort_rows


@triton.jit
def permute_rows_kernel(x_ptr, idx_ptr, out_ptr, sorted_ptr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)[:, None]
    cols = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rows * N + cols)
    idx = tl.load(idx_ptr + rows * N + cols)
    tl.store(out_ptr + rows * N + cols, gather(x, idx, 1))
    tl.store(sorted_ptr + rows * N + cols, sort_rows(x, 1))
'''


@pytest.fixture
def aliasops(tmp_path, monkeypatch):
    (tmp_path / "aliasops").mkdir()
    (tmp_path / "aliasops" / "__init__.py").write_text("")
    (tmp_path / "aliasops" / "op.py").write_text(OPS)
    (tmp_path / "aliasops" / "kernels.py").write_text(KERNELS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("TESSERA_INTERPRET", "1")
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path / "cache"))
    tessera.compat.install()
    import importlib
    try:
        yield importlib.import_module("aliasops.kernels")
    finally:
        tessera.compat.uninstall()
        for name in ["aliasops.kernels", "aliasops.op", "aliasops"]:
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
