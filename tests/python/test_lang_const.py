"""`tl.const` pointer parameters (Triton's read-only pointers): reads compile and run;
stores and atomics through them, and paths that mix them with plain pointers, are
compile errors with Triton's words (test_core.py::test_const matches them)."""
import sys

import numpy as np
import pytest

import tessera
from conftest import ROOT
from lang_support import ARCHS, compile_and_assemble, compile_error, compile_kernel

sys.path.insert(0, str(ROOT / "tests" / "python" / "lang_kernels"))


@pytest.mark.parametrize("arch", ARCHS)
def test_reading_through_a_const_pointer_compiles(tmp_path, arch):
    compile_and_assemble(tmp_path, "const_pointers.py", "copy_kernel", "*fp32,*fp32,i32", {"BLOCK": 64}, arch)


@pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")
def test_reading_through_a_const_pointer_runs_in_the_interpreter():
    import const_pointers
    src = np.arange(64, dtype=np.float32)
    out = np.zeros(64, dtype=np.float32)
    const_pointers.copy_kernel.interpret = True
    const_pointers.copy_kernel[(1,)](src, out, 50, BLOCK=64)
    assert (out[:50] == src[:50]).all() and (out[50:] == 0).all()


@pytest.mark.parametrize("kernel, line", [("store_kernel", 25), ("atomic_kernel", 30)])
def test_storing_through_a_const_pointer_is_an_error(kernel, line):
    err = compile_error("const_pointers.py", kernel, "*fp32,*fp32,i32", {"BLOCK": 64})
    assert f"const_pointers.py:{line}:" in err
    assert "Cannot store to a constant pointer" in err


def test_a_constexpr_choice_keeps_constness():
    assert "Cannot store to a constant pointer" in compile_error(
        "const_pointers.py", "constexpr_choice_kernel", "*fp32,*fp32,*fp32", {"CHOOSE_CONST": 1})
    compile_kernel("const_pointers.py", "constexpr_choice_kernel", "*fp32,*fp32,*fp32", {"CHOOSE_CONST": 0})


@pytest.mark.parametrize("kernel, message", [
    ("ternary_kernel", "Ternary expression with dynamic condition has inconsistent types ptr<const f32> and ptr<f32>"),
    ("if_kernel", "Mismatched type for final_out between the then branch (ptr<const f32>) and the else branch "
                  "(ptr<f32>) of the if"),
    ("call_kernel", "Inconsistent return types: ptr<const f32> on one path and ptr<f32> on another"),
])
def test_a_runtime_choice_between_const_and_plain_pointers_is_an_error(kernel, message):
    assert message in compile_error("const_pointers.py", kernel, "*fp32,*fp32,*fp32,i32")


@pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")
def test_the_python_error_carries_triton_s_error_message_attribute():
    import const_pointers

    class DeviceArray:
        __cuda_array_interface__ = {"data": (1 << 20, False), "typestr": "<f4", "shape": (64,), "version": 3}

    with pytest.raises(tessera.CompilationError) as info:
        const_pointers.store_kernel.warmup(DeviceArray(), DeviceArray(), 64, BLOCK=64, grid=(1,))
    assert info.value.error_message == "Cannot store to a constant pointer (a tl.const parameter)"
    assert str(info.value).startswith(str(info.value.path))
