"""tl.sort, tl.gather, tl.histogram, tl.inline_asm_elementwise and int <-> pointer casts
(tests/python/lang_kernels/data_ops.py) compile and assemble for sm_80 and sm_90a through both
back-ends (LLVM's NVPTX and CUDA C++ through NVRTC); their IR has the ops we expect.
Interpreter results against numpy: test_interpreter_data.py."""
import pytest

from lang_support import ARCHS, compile_and_assemble, compile_kernel

BACKENDS = ["llvm", "nvrtc"]

CASES = [
    ("sort_kernel", "*fp32,*fp32", {"M": 4, "N": 64, "DESCENDING": 0}),
    ("sort_kernel", "*i32,*i32", {"M": 8, "N": 16, "DESCENDING": 1}),
    ("sort_kernel", "*fp16,*fp16", {"M": 2, "N": 128, "DESCENDING": 0}),
    ("sort_kernel", "*u8,*u8", {"M": 16, "N": 8, "DESCENDING": 1}),
    ("sort_1d_kernel", "*i64,*i64", {"N": 256}),
    ("gather_kernel", "*fp32,*i32,*fp32", {"M": 16, "N": 32, "K": 8, "AXIS": 0}),
    ("gather_kernel", "*fp16,*i64,*fp16", {"M": 32, "N": 16, "K": 64, "AXIS": 1}),
    ("histogram_kernel", "*i32,*i32", {"M": 1024, "N": 8}),
    ("histogram_kernel", "*i32,*i32", {"M": 8, "N": 512}),
    ("histogram_kernel", "*i64,*i32", {"M": 256, "N": 2}),
    ("histogram_mask_kernel", "*i32,*i32", {"M": 32, "N": 128}),
    ("asm_shift_kernel", "*u32,*u32,*u32", {"n": 17, "BLOCK": 128}),
    ("asm_packed_kernel", "*u8,*u8", {"BLOCK": 512}),
    ("asm_pointers_kernel", "*u8,*u8", {"BLOCK": 512}),
    ("asm_two_outputs_kernel", "*u32,*u32,*u32,*u32", {"BLOCK": 512}),
    ("asm_packed_two_outputs_kernel", "*u8,*fp32,*i32,*fp32", {"BLOCK": 512}),
    ("asm_f16_pairs_kernel", "*fp16,*fp16", {"BLOCK": 256}),
    ("pointer_array_kernel", "*i64,*fp16,*fp16", {"N": 64}),
    ("histogram_kernel", "*u8,*i32", {"M": 64, "N": 512}),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("kernel, signature, constexprs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_data_ops_assemble(tmp_path, kernel, signature, constexprs, arch, backend):
    compile_and_assemble(tmp_path, "data_ops.py", kernel, signature, constexprs, arch, extra=["--backend", backend])


@pytest.mark.parametrize("warps", [1, 8])
def test_data_ops_with_other_warp_counts(tmp_path, warps):
    for kernel, signature, constexprs in CASES[:1] + CASES[5:6] + CASES[7:8] + CASES[13:14]:
        compile_and_assemble(tmp_path, "data_ops.py", kernel, signature, constexprs, "sm_90a",
                             extra=["--num-warps", str(warps)])


def test_data_ops_ir():
    def ir(kernel, signature, constexprs):
        return compile_kernel("data_ops.py", kernel, signature, constexprs, emit="ir")
    assert "= sort %" in ir(*CASES[1]) and "descending = 1" in ir(*CASES[1])
    assert "= gather %" in ir(*CASES[6]) and "axis = 1" in ir(*CASES[6])
    assert "= histogram %" in ir(*CASES[10]) and "has_mask = 1" in ir(*CASES[10])
    asm = ir(*CASES[15])
    assert "= inline_asm %" in asm and "pack = 4" in asm and "pure = 1" in asm
    casts = ir(*CASES[17])
    assert "cast %" in casts and "!tt.ptr" not in casts


def test_sort_and_histogram_use_shared_memory():
    for case in (CASES[0], CASES[7]):
        ptx = compile_kernel("data_ops.py", *case)
        assert "global_smem" in ptx and "bar.sync" in ptx
    assert "red.shared.add.u32" in compile_kernel("data_ops.py", *CASES[7])


def test_inline_asm_text_reaches_the_ptx():
    assert "shf.l.wrap.b32" in compile_kernel("data_ops.py", *CASES[11])
    packed = compile_kernel("data_ops.py", *CASES[12])
    assert packed.count("and.b32") >= 1 and "0x1F1F1F1F" in packed


def test_histogram_compares_in_64_bits():
    # 512 bins do not fit a byte: the range check must not truncate num_bins to x's type.
    # (Every byte is in range: the count's predicate is the owner check, never a constant false.)
    llvm = compile_kernel("data_ops.py", "histogram_kernel", "*u8,*i32", {"M": 64, "N": 512}, emit="llvm")
    adds = [line for line in llvm.splitlines() if "red.shared.add.u32" in line]
    assert adds and not any(line.rstrip().endswith("i32 0) #0") for line in adds), adds


def test_impure_asm_is_kept_though_its_result_is_unused():
    ptx = compile_kernel("data_ops.py", *CASES[13])
    assert "st.global.b8" in ptx and "ld.global.b8" in ptx
