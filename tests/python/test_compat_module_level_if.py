"""Kernels defined under a module-level `if` (vLLM's prefix_prefill.py wraps its kernels in
`if triton.__version__ >= "2.1.0":`; others pick a kernel per branch with elif / else): the kernel
of the branch Python took is compiled, interpreted and compiled to PTX."""
import sys

import numpy as np
import pytest

import tessera
import tessera.compat

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")

KERNELS = '''
import triton
import triton.language as tl

MODE = "b"

if triton.__version__ >= "2.1.0":

    @triton.jit
    def _scale(x, F: tl.constexpr):
        return x * F

    @triton.jit
    def versioned_kernel(x_ptr, out_ptr, N: tl.constexpr):
        offs = tl.arange(0, N)
        tl.store(out_ptr + offs, _scale(tl.load(x_ptr + offs), 3.0))
        return

if MODE == "a":
    @triton.jit
    def branch_kernel(x_ptr, out_ptr, N: tl.constexpr):
        offs = tl.arange(0, N)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) + 1.0)
elif MODE == "b":
    @triton.jit
    def branch_kernel(x_ptr, out_ptr, N: tl.constexpr):
        offs = tl.arange(0, N)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) + 2.0)
else:
    @triton.jit
    def branch_kernel(x_ptr, out_ptr, N: tl.constexpr):
        offs = tl.arange(0, N)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) + 3.0)
'''


@pytest.fixture
def library(tmp_path, monkeypatch):
    (tmp_path / "iflib").mkdir()
    (tmp_path / "iflib" / "__init__.py").write_text("")
    (tmp_path / "iflib" / "kernels.py").write_text(KERNELS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("TESSERA_INTERPRET", "1")
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path / "cache"))
    tessera.compat.install()
    import importlib
    try:
        yield importlib.import_module("iflib.kernels")
    finally:
        tessera.compat.uninstall()
        for name in ["iflib.kernels", "iflib"]:
            sys.modules.pop(name, None)


def test_kernel_under_a_version_check(library):
    x = np.arange(8, dtype=np.float32)
    out = np.zeros_like(x)
    library.versioned_kernel[(1,)](x, out, N=8)
    np.testing.assert_array_equal(out, x * 3)
    k = tessera.compile(library.versioned_kernel, signature="*fp32,*fp32", constexprs={"N": 128}, target="sm_90a")
    assert ".entry versioned_kernel" in k.asm["ptx"]


def test_kernel_of_the_elif_branch_python_took(library):
    x = np.arange(8, dtype=np.float32)
    out = np.zeros_like(x)
    library.branch_kernel[(1,)](x, out, N=8)
    np.testing.assert_array_equal(out, x + 2)
