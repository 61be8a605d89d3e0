"""The older builtins together with the new ones (swizzle2d, philox, to_tensor,
view, pointer_type, hints) in one kernel (tests/python/lang_kernels/misc_ops.py)."""
import pytest

from lang_support import ARCHS, compile_and_assemble, compile_kernel


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
def test_misc_ops(tmp_path, arch, dtype):
    compile_and_assemble(tmp_path, "misc_ops.py", "misc_kernel", f"*{dtype},*fp32,i32,i32", {"BLOCK": 64}, arch)


def test_pointer_casts_and_hints_in_ir():
    ir = compile_kernel("misc_ops.py", "misc_kernel", "*fp32,*fp32,i32,i32", {"BLOCK": 64}, emit="ir")
    assert "bitcast" in ir and "ptr<i32>" in ir
    assert "multiple_of = [64]" in ir and "max_contiguous = [64]" in ir and "max_constancy = [4]" in ir
