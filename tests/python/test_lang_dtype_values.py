"""dtypes as values, as Triton has them: dtype objects passed as constexpr
arguments (`OUT_DTYPE=tl.float16` at launch, in tessera.compile and on the
CLI), dtypes in module globals, the attributes and methods of Triton's dtype
class (core.py), dtype comparisons, and the names tessera knows but does not
support (tl.float8e4b8 compares; using it is an error)."""
import numpy as np
import pytest

import tessera
import tessera.language as tl
from conftest import run_cli
from lang_support import assemble

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")

ACC_DTYPE = tl.float64  # a dtype in a module global


@tessera.jit(interpret=True)
def cast_kernel(x_ptr, out_ptr, OUT_DTYPE: tl.constexpr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)
    acc = tl.zeros([16], dtype=ACC_DTYPE) + x
    tl.static_assert(acc.dtype == tl.float64)
    y = acc.to(OUT_DTYPE) + tl.zeros([16], dtype=OUT_DTYPE)
    tl.static_assert(y.dtype == OUT_DTYPE)
    tl.store(out_ptr + offs, y)


@pytest.mark.parametrize("dtype, np_dtype", [(tl.float16, np.float16), (tl.int32, np.int32),
                                             (tl.bfloat16, None), (tl.uint8, np.uint8)])
def test_dtype_constexpr_argument(dtype, np_dtype):
    x = np.linspace(0, 100, 16).astype(np.float32)
    if np_dtype is None:  # bf16: compare through the float32 the kernel stores into
        out = np.zeros(16, np.float32)
        cast_kernel[(1,)](x, out, OUT_DTYPE=dtype)
        np.testing.assert_allclose(out, x, rtol=1 / 128)
        return
    out = np.zeros(16, np_dtype)
    cast_kernel[(1,)](x, out, OUT_DTYPE=dtype)
    np.testing.assert_array_equal(out, x.astype(np.float64).astype(np_dtype))


def test_dtype_constexpr_specialises():
    k = tessera.jit(cast_kernel.fn)  # the launch path (not interpreted)
    d = np.zeros(16, np.float32)
    assert tessera.compile(k, signature="*fp32:16,*fp16:16", constexprs={"OUT_DTYPE": tl.float16},
                           target="sm_90a").metadata.constexprs == {"OUT_DTYPE": tl.float16}
    ptx16 = k.warmup(FakeArray(d), FakeArray(d, "<f2"), OUT_DTYPE=tl.float16, grid=(1,)).asm["ptx"]
    ptx32 = k.warmup(FakeArray(d), FakeArray(d), OUT_DTYPE=tl.float32, grid=(1,)).asm["ptx"]
    assert "cvt.rn.f16.f64" in ptx16 and "cvt.rn.f16.f64" not in ptx32
    assert k.specialization(FakeArray(d), FakeArray(d), OUT_DTYPE=tl.int8)[1] == {"OUT_DTYPE": tl.int8}
    assert k.cache_info()["compiled"] == 2


class FakeArray:
    """Device memory as __cuda_array_interface__ (no GPU is touched: only compiled)."""

    def __init__(self, array, typestr="<f4"):
        self.__cuda_array_interface__ = {"data": (4096, False), "typestr": typestr, "shape": array.shape,
                                         "version": 2}


def test_dtype_constexpr_on_the_cli(tmp_path):
    path = tmp_path / "k.py"
    path.write_text("import tessera\nimport tessera.language as tl\n\n@tessera.jit\n"
                    "def k(x_ptr, out_ptr, OUT: tl.constexpr):\n"
                    "    offs = tl.arange(0, 16)\n"
                    "    tl.store(out_ptr + offs, tl.load(x_ptr + offs).to(OUT))\n")
    proc = run_cli(["compile", str(path), "--kernel", "k", "--signature", "*fp32,*bf16", "--constexpr",
                    "OUT=tl.bfloat16", "--arch", "sm_90a", "--emit", "ir"])
    assert proc.returncode == 0, proc.stderr
    assert "bf16" in proc.stdout


def test_unsupported_dtype_object_is_refused():
    class dtype:  # another library's dtype with a name tessera has no type for
        name = "fp8e4b8"

        def __str__(self):
            return "fp8e4b8"
    x = np.zeros(16, np.float32)
    with pytest.raises(TypeError, match=r"constexpr 'OUT_DTYPE' is the dtype fp8e4b8, which tessera does not support"):
        cast_kernel[(1,)](x, x, OUT_DTYPE=dtype())


@tessera.jit(interpret=True)
def dtype_attributes_kernel(x_ptr, out_ptr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)
    d = x.dtype
    tl.static_assert(d.fp_mantissa_width == 23 and d.exponent_bias == 127)
    tl.static_assert(tl.float16.fp_mantissa_width == 10 and tl.bfloat16.exponent_bias == 127)
    tl.static_assert(d.primitive_bitwidth == 32 and d.itemsize == 4)
    tl.static_assert(d.is_floating() and d.is_standard_floating() and d.is_fp32())
    tl.static_assert(not d.is_int_signed() and not d.is_block() and not d.is_ptr())
    tl.static_assert(tl.int16.int_bitwidth == 16 and tl.int16.is_int_signed())
    tl.static_assert(tl.int1.is_int_unsigned() and tl.int1.is_int())  # as Triton: int1 is unsigned
    tl.static_assert(tl.int8.get_int_max_value() == 127 and tl.int8.get_int_min_value() == -128)
    tl.static_assert(tl.uint16.get_int_max_value() == 65535 and tl.int64.get_int_min_value() == -2 ** 63)
    tl.static_assert(d.scalar == tl.float32 and d.name == "fp32" and tl.bfloat16.codegen_name() == "bfloat16")
    tl.static_assert(x_ptr.dtype.element_ty == tl.float32 and x_ptr.dtype.is_ptr())
    tl.static_assert(x_ptr.dtype.name == "pointer<fp32>" and x_ptr.dtype.scalar == x_ptr.dtype)
    tl.static_assert(tl.float16 != tl.float32 and tl.float16 != 16 and d in (tl.float16, tl.float32))
    # Triton's other fp8 formats (fp8e4b15 is a type; AMD's fp8e4b8 and fp8e5b16 are names that compare).
    tl.static_assert(tl.float8e4b8 != tl.float8e4nv and tl.float8e4b8 == tl.float8e4b8 and tl.float8e4b8.is_fp8())
    tl.static_assert(tl.float8e4b15 != tl.float8e4nv and tl.float8e4b15 == tl.float8e4b15)
    tl.static_assert(tl.float8e4b15.is_fp8() and tl.float8e4b15.is_fp8e4b15() and not tl.float8e4nv.is_fp8e4b15())
    tl.static_assert(tl.float8e4b15.primitive_bitwidth == 8 and tl.float8e4b15.exponent_bias == 15)
    tl.static_assert(tl.dtype("fp16") == tl.float16 and tl.dtype("fp8e4b15") == tl.float8e4b15)
    tl.static_assert(isinstance(d, tl.dtype) and isinstance(x, tl.tensor) and not isinstance(x, tl.dtype))
    tl.static_assert(isinstance(3, (float, int)) and not isinstance(3, float) and isinstance(x_ptr.dtype, tl.pointer_type))
    tl.static_assert(isinstance(x.type, tl.block_type) and isinstance(16, tl.constexpr))
    # x.type: a block type for a block, the dtype for a scalar.
    tl.static_assert(x.type.element_ty == tl.float32 and x.type.shape == (16,) and x.type.is_block())
    tl.static_assert(x.type.scalar == tl.float32 and x.type.numel == 16 and x.type.nbytes == 64)
    tl.static_assert(tl.sum(x).type == tl.float32 and x.type != tl.float32)
    x = x + tl.full(x.shape, 0, x.type.element_ty)
    if d == tl.float8e4b15:
        x = x.to(tl.float8e4b15)  # not taken: a constexpr if
    tl.store(out_ptr + offs, x)


def test_dtype_attributes_and_methods():
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(16, np.float32)
    dtype_attributes_kernel[(1,)](x, out)
    np.testing.assert_array_equal(out, x)


def test_dtype_values_compile_to_ptx(tmp_path):
    for fn, signature, constexprs in [(cast_kernel, "*fp32:16,*fp16:16", {"OUT_DTYPE": tl.float16}),
                                      (dtype_attributes_kernel, "*fp32:16,*fp32:16", {})]:
        assemble(tessera.compile(fn, signature=signature, constexprs=constexprs, target="sm_90a").asm["ptx"],
                 "sm_90a", tmp_path)


@pytest.mark.parametrize("body, message", [
    ("y = x.to(tl.float8e4b8)", "to()'s dtype is tl.float8e4b8, a dtype tessera names but does not support yet"),
    ("y = tl.int32.fp_mantissa_width", "dtype int32 has no attribute 'fp_mantissa_width'"),
    ("y = tl.float32.int_bitwidth", "dtype fp32 has no attribute 'int_bitwidth'"),
    ("y = tl.float32.get_int_max_value()", "get_int_max_value() needs an integer dtype, got fp32"),
    ("y = x.to(x.type)", "to()'s dtype must be a dtype such as tl.float32, got the block type <16xf32>"),
])
def test_errors(tmp_path, body, message):
    path = tmp_path / "k.py"
    path.write_text("import tessera\nimport tessera.language as tl\n\n@tessera.jit\n"
                    f"def k(x_ptr):\n    x = tl.load(x_ptr + tl.arange(0, 16))\n    {body}\n")
    with pytest.raises(tessera.CompilationError) as info:
        tessera.compile(str(path), kernel="k", signature="*fp32", target="sm_90a")
    assert "k.py:7:" in str(info.value) and message in str(info.value), str(info.value)
