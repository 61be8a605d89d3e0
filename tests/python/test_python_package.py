"""The tessera package imports without a GPU, and every bundled kernel file
is valid Python that imports under it."""
import importlib.util

import pytest

from conftest import ROOT

import tessera
import tessera.language as tl


@pytest.mark.parametrize("path", sorted((ROOT / "kernels").glob("*.py")), ids=lambda p: p.stem)
def test_kernel_file_imports(path):
    spec = importlib.util.spec_from_file_location(f"kernel_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kernels = [v for v in vars(module).values() if isinstance(v, tessera.JITFunction)]
    if path.name != "__init__.py":
        assert kernels, f"{path} defines no @tessera.jit function"
        for k in kernels:
            assert "def " + k.__name__ in k.src


def test_language_names():
    assert tl.float16 == tl.float16 and tl.float16 != tl.bfloat16
    assert tl.constexpr(3).value == 3
    # A constexpr of a constexpr is the same constexpr (test_core.py::test_constexpr_flattens).
    assert tl.constexpr(tl.constexpr(5)) == tl.constexpr(5) == 5 and tl.constexpr(5) != tl.constexpr(6)
    assert len({tl.constexpr(5), tl.constexpr(tl.constexpr(5))}) == 1
    assert tessera.cdiv(10, 4) == 3
    with pytest.raises(RuntimeError, match="only be called inside a @tessera.jit kernel"):
        tl.arange(0, 4)


def test_calling_a_kernel_directly_explains_how_to_launch():
    @tessera.jit
    def k(x):
        pass

    with pytest.raises(RuntimeError, match=r"launch it with k\[grid\]"):
        k(1)
