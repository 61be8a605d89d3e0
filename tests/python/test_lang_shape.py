"""tl.* shape ops (trans/permute/.T, reshape/view/ravel, expand_dims, broadcast_to,
join, split, cat, flip) compile and assemble; their IR has the ops we expect."""
import pytest

from lang_support import ARCHS, compile_and_assemble, compile_kernel, compile_error

SIG = "*fp32,*fp32"


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("m, n", [(32, 64), (16, 8), (64, 16), (2, 2)])
def test_shape_ops(tmp_path, arch, m, n):
    compile_and_assemble(tmp_path, "shape_ops.py", "shape_kernel", SIG, {"M": m, "N": n}, arch)


def test_shape_ops_ir():
    ir = compile_kernel("shape_ops.py", "shape_kernel", SIG, {"M": 32, "N": 64}, emit="ir")
    assert "= trans %" in ir and "order = [1, 0]" in ir
    for op in ["= join %", "= split %", "= cat %", "= flip %", "= reshape %", "= broadcast %", "= expand_dims %"]:
        assert op in ir, op
    assert "axis = 0" in ir  # flip(x, 0)


def test_shape_ops_use_shared_memory_once_each():
    ptx = compile_kernel("shape_ops.py", "shape_kernel", SIG, {"M": 32, "N": 64})
    assert "global_smem" in ptx and "bar.sync" in ptx


@pytest.mark.parametrize("warps", [1, 2, 8])
def test_shape_ops_with_other_warp_counts(tmp_path, warps):
    compile_and_assemble(tmp_path, "shape_ops.py", "shape_kernel", SIG, {"M": 16, "N": 32}, "sm_90a",
                         extra=["--num-warps", str(warps)])
