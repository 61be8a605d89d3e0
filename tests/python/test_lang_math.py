"""tl.* math (sin ... sigmoid, softmax, libdevice names, integer ops) compiles to
PTX that ptxas accepts for sm_80 and sm_90a, with the instructions we expect."""
import re

import pytest

from lang_support import ARCHS, compile_and_assemble, compile_kernel

FNS = ["sin", "cos", "rsqrt", "erf", "floor", "ceil", "fma", "fdiv", "div_rn", "sqrt_rn", "clamp",
       "sigmoid", "pow"]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16", "fp64"])
def test_all_math_in_one_kernel(tmp_path, arch, dtype):
    compile_and_assemble(tmp_path, "math_ops.py", "float_math", f"*{dtype},*{dtype},*{dtype},i32",
                         {"BLOCK": 256}, arch)


@pytest.mark.parametrize("fn", FNS)
def test_each_function(tmp_path, fn):
    for arch in ARCHS:
        compile_and_assemble(tmp_path, "math_ops.py", "one_op", "*fp32,*fp32,*fp32",
                             {"FN": fn, "BLOCK": 128}, arch)


@pytest.mark.parametrize("fn, instruction", [
    ("rsqrt", "rsqrt.approx.f32"), ("floor", "cvt.rmi.f32.f32"), ("ceil", "cvt.rpi.f32.f32"),
    ("fma", "fma.rn.f32"), ("sqrt_rn", "sqrt.rn.f32"), ("div_rn", "div.rn.f32"),
])
def test_instructions(fn, instruction):
    ptx = compile_kernel("math_ops.py", "one_op", "*fp32,*fp32,*fp32", {"FN": fn, "BLOCK": 128})
    assert instruction in ptx


def test_fast_tanhf_is_one_instruction(tmp_path):
    """CUDA 13's libdevice implements fast_tanhf with an NVVM intrinsic LLVM 19 does not know
    (llvm.nvvm.tanh.approx.f32); it must become the PTX instruction, not an extern call ptxas
    rejects."""
    for arch in ARCHS:
        ptx = compile_and_assemble(tmp_path, "math_ops.py", "one_op", "*fp32,*fp32,*fp32",
                                   {"FN": "fast_tanhf", "BLOCK": 128}, arch)
        assert "tanh.approx.f32" in ptx and ".extern" not in ptx and "llvm.nvvm" not in ptx


def test_libdevice_is_linked_and_internal():
    ptx = compile_kernel("math_ops.py", "one_op", "*fp32,*fp32,*fp32", {"FN": "sin", "BLOCK": 128})
    assert "__nv_sinf" not in ptx.split(".entry")[0] or ".extern" not in ptx  # inlined, no external call
    assert ".extern" not in ptx


def test_libdevice_is_read_lazily():
    """Only the libdevice functions a kernel calls are read from its bitcode (a lazy module the linker
    materialises): parsing all ~500 was most of the compile of a kernel calling one (an Inductor GELU
    kernel's erf: ~55 of its ~75 ms of CPU) and ~8 MB of memory: seen here as the peak memory of a
    CLI compile of erf over that of floor (no libdevice call)."""
    import subprocess
    import sys
    from conftest import CLI, ROOT
    from lang_support import KERNELS

    def peak_kb(fn):
        args = [str(CLI), "compile", f"{KERNELS}/math_ops.py", "--kernel", "one_op", "--signature", "*fp32,*fp32,*fp32",
                "--constexpr", f"FN={fn}", "--constexpr", "BLOCK=128", "-o", "/dev/null"]
        code = ("import resource, subprocess, sys\n"
                f"assert subprocess.run({args!r}).returncode == 0\n"
                "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
        proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return int(proc.stdout)

    without = min(peak_kb("floor") for _ in range(2))  # cvt.rmi: no libdevice
    with_erf = min(peak_kb("erf") for _ in range(2))
    assert with_erf - without < 4096, (with_erf, without)


def test_math_ir_ops():
    ir = compile_kernel("math_ops.py", "float_math", "*fp32,*fp32,*fp32,i32", {"BLOCK": 64}, emit="ir")
    for mnemonic in ["= sin ", "= cos ", "= rsqrt ", "= erf ", "= floor ", "= ceil ", "= fma ",
                     'libdevice %', '{fn = "tanh"}', '{fn = "pow"}', '{fn = "atan2"}']:
        assert mnemonic in ir, mnemonic


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dtype", ["i32", "i64", "u32", "i16", "u8"])
def test_integer_ops(tmp_path, arch, dtype):
    ptx = compile_and_assemble(tmp_path, "math_ops.py", "integer_ops", f"*{dtype},*{dtype},*{dtype},i32",
                               {"BLOCK": 128}, arch)
    if dtype == "i32":
        assert "mul.hi.u32" in ptx and "div.s32" in ptx  # % reuses the quotient


def test_signed_floor_div_and_mod_are_c_style():
    ir = compile_kernel("math_ops.py", "integer_ops", "*i32,*i32,*i32,i32", {"BLOCK": 64}, emit="ir")
    assert "= div %" in ir and "= rem %" in ir  # truncating, like Triton (not Python's floor)


@pytest.mark.parametrize("arch", ARCHS)
def test_softmax_over_the_last_axis(tmp_path, arch):
    compile_and_assemble(tmp_path, "math_ops.py", "softmax_rows", "*fp32,*fp32", {"ROWS": 16, "COLS": 64}, arch)
    ir = compile_kernel("math_ops.py", "softmax_rows", "*fp32,*fp32", {"ROWS": 16, "COLS": 64}, emit="ir")
    assert 'kind = "max"' in ir and 'kind = "sum"' in ir and "axis = 1" in ir


@pytest.mark.parametrize("dtype,bits", [("fp32", "b32"), ("fp64", "b64")])
def test_copysign_is_a_bit_select(tmp_path, dtype, bits):
    """libdevice's erf ends with a copysign per element. LLVM 19's NVPTX back-end expands
    llvm.copysign into abs, neg, a sign test and a select (SHF + ISETP + FSEL in SASS); codegen
    rewrites it as masks after O3 (lowerCopysignToBits): x ^ ((x ^ y) & sign), one LOP3."""
    ptx = compile_and_assemble(tmp_path, "math_ops.py", "one_op", f"*{dtype},*{dtype},*{dtype}",
                               {"FN": "erf", "BLOCK": 128}, "sm_90a", extra=("--backend", "llvm"))
    sign = "-2147483648" if bits == "b32" else "-9223372036854775808"
    assert f"xor.{bits}" in ptx and re.search(rf"and\.{bits}\s+%\w+, %\w+, {sign};", ptx), ptx
    assert "setp.eq.b32" not in ptx  # the sign test of the expansion
    if dtype == "fp32":
        from test_vectorized_access import sass
        path = tmp_path / "erf.ptx"
        path.write_text(ptx)
        text = sass(tmp_path, path)
        assert re.search(r"LOP3\.LUT R\d+, R\d+, 0x80000000, R\d+", text), text
        assert not re.search(r"SHF\.R\.U32\.HI R\d+, RZ, 0x1f", text), text


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_half_precision_erf_is_one_short_formula(tmp_path, dtype):
    """erf of f16/bf16 (MathOps.cpp, halfPrecisionErf): no libdevice call, no branch between two
    polynomials, one ex2.approx.ftz per element; at most 14 float/logic SASS instructions an element
    (the two-branch form took 19-20, libdevice's 26). test_half_precision_erf.py runs this PTX on
    every f16 and bf16 input; tests/gpu/test_fusion_epilogue_loads.py does on the GPU."""
    ptx = compile_and_assemble(tmp_path, "math_ops.py", "one_op", f"*{dtype},*{dtype},*{dtype}",
                               {"FN": "erf", "BLOCK": 128}, "sm_90a", extra=("--backend", "llvm"))
    assert "__nv_erff" not in ptx and "call" not in ptx
    assert ptx.count("ex2.approx.ftz.f32") == 128 // (4 * 32)  # one per element, 4 warps
    assert "0f3F400000" not in ptx  # no 0.75 switch between two polynomials
    wide = compile_and_assemble(tmp_path, "math_ops.py", "one_op", "*fp32,*fp32,*fp32",
                                {"FN": "erf", "BLOCK": 128}, "sm_90a", extra=("--backend", "llvm"))
    from test_vectorized_access import sass

    def float_work(text):
        path = tmp_path / "k.ptx"
        path.write_text(text)
        code = sass(tmp_path, path)
        return {op: len(re.findall(rf"\b{op}\b", code)) for op in ("FFMA", "FMUL", "FADD", "FSEL", "FSETP", "FMNMX",
                                                                     "MUFU", "LOP3")}
    half, single = float_work(ptx), float_work(wide)
    assert half["FSEL"] == 0 and half["FSETP"] == 0 and single["FSEL"] == 9
    assert half["MUFU"] == 1 and half["FFMA"] == 7, half
    assert sum(half.values()) <= 14, half  # one element a thread here
