"""Atomics (every tl.atomic_* with mask, sem, scope; scalar and block pointers) and
block pointers (make_block_ptr / advance / boundary_check / padding_option)."""
import pytest

from lang_support import ARCHS, compile_and_assemble, compile_kernel

ATOMIC_SIG = "*fp32,*i32,*fp16,*fp32,i32"


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("block", [64, 256, 1024])
def test_atomics_assemble(tmp_path, arch, block):
    compile_and_assemble(tmp_path, "atomics.py", "atomic_kernel", ATOMIC_SIG, {"BLOCK": block}, arch)


def test_atomic_instructions():
    ptx = compile_kernel("atomics.py", "atomic_kernel", ATOMIC_SIG, {"BLOCK": 128})
    for text in ["atom.acq_rel.gpu.global.add.f32", "atom.relaxed.cta.global.max.s32",
                 "atom.relaxed.cta.global.min.u32", "atom.acq_rel.gpu.global.and.b32",
                 "atom.release.gpu.global.xor.b32", "atom.acq_rel.sys.global.exch.b32",
                 "atom.acq_rel.gpu.global.cas.b32", "atom.acquire.gpu.global.max.s32",
                 "atom.acq_rel.gpu.global.add.noftz.f16"]:
        assert text in ptx, text


def test_atomics_are_not_removed_or_merged():
    ir = compile_kernel("atomics.py", "atomic_kernel", ATOMIC_SIG, {"BLOCK": 128}, emit="ir-opt")
    # 7 rmw calls, float max/min are two each (Triton's sign trick), plus scalar and f16 adds
    assert ir.count("atomic_rmw") == 13 and ir.count("atomic_cas") == 1


@pytest.mark.parametrize("arch", ARCHS)
def test_block_pointers(tmp_path, arch):
    compile_and_assemble(tmp_path, "block_pointers.py", "row_sums_and_copy", "*fp32,*fp32,*fp32,i32,i32,i32,i32",
                         {"BM": 32, "BN": 64}, arch)
    compile_and_assemble(tmp_path, "block_pointers.py", "padded_nan", "*fp32,*fp32,i32,i32",
                         {"BM": 16, "BN": 16}, arch)


def test_block_pointers_become_pointer_blocks_and_masks():
    ir = compile_kernel("block_pointers.py", "row_sums_and_copy", "*fp32,*fp32,*fp32,i32,i32,i32,i32",
                        {"BM": 32, "BN": 64}, emit="ir")
    assert "has_mask = 1, has_other = 1" in ir  # boundary_check + padding_option="zero"
    assert "for " in ir  # advanced offsets are carried by the loop
    ir = compile_kernel("block_pointers.py", "padded_nan", "*fp32,*fp32,i32,i32", {"BM": 16, "BN": 16}, emit="ir")
    assert "value = nan" in ir
