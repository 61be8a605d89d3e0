"""Host-side dtype objects (python/tessera/language/__init__.py) as Triton 3.6's
triton.language.core.dtype, pointer_type and block_type have them: what Triton's own tests and
libraries do with tl.dtype outside kernels (test_core.py builds `map(tl.dtype, tl.dtype.SINT_TYPES
+ ...)` while it is collected), and those objects as constexpr arguments."""
import numpy as np
import pytest

import tessera
import tessera.compat
import tessera.language as tl
from lang_support import assemble

needs_ext = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")

# name: (primitive_bitwidth, itemsize, codegen_name / attribute of tl), from core.py and _utils.py.
TABLE = {
    "int1": (1, 0, "int1"), "int8": (8, 1, "int8"), "int16": (16, 2, "int16"), "int32": (32, 4, "int32"),
    "int64": (64, 8, "int64"), "uint8": (8, 1, "uint8"), "uint16": (16, 2, "uint16"),
    "uint32": (32, 4, "uint32"), "uint64": (64, 8, "uint64"),
    "fp8e4b15": (8, 1, "float8e4b15"), "fp8e4nv": (8, 1, "float8e4nv"), "fp8e4b8": (8, 1, "float8e4b8"),
    "fp8e5": (8, 1, "float8e5"), "fp8e5b16": (8, 1, "float8e5b16"), "fp16": (16, 2, "float16"),
    "bf16": (16, 2, "bfloat16"), "fp32": (32, 4, "float32"), "fp64": (64, 8, "float64"), "void": (0, 0, "void"),
}
# (fp_mantissa_width, exponent_bias)
FP_FORMATS = {"fp8e4b15": (3, 15), "fp8e4nv": (3, 7), "fp8e4b8": (3, 8), "fp8e5": (2, 15), "fp8e5b16": (2, 16),
              "fp16": (10, 15), "bf16": (7, 127), "fp32": (23, 127), "fp64": (52, 1023)}


def test_name_lists():
    assert tl.dtype.SINT_TYPES == ["int8", "int16", "int32", "int64"]
    assert tl.dtype.UINT_TYPES == ["int1", "uint8", "uint16", "uint32", "uint64"]
    assert tl.dtype.FP_TYPES == ["fp8e4b15", "fp8e4nv", "fp8e4b8", "fp8e5", "fp8e5b16", "fp16", "bf16", "fp32", "fp64"]
    assert tl.dtype.STANDARD_FP_TYPES == ["fp16", "bf16", "fp32", "fp64"]
    assert tl.dtype.OTHER_TYPES == ["void"]
    assert all(tl.dtype.is_dtype(n) for n in TABLE) and not tl.dtype.is_dtype("float16")


def test_collection_time_use():  # test_core.py's test_dtype_tensor parameters
    dtypes = list(map(tl.dtype, tl.dtype.SINT_TYPES + tl.dtype.UINT_TYPES + tl.dtype.STANDARD_FP_TYPES))
    assert [d.name for d in dtypes] == tl.dtype.SINT_TYPES + tl.dtype.UINT_TYPES + tl.dtype.STANDARD_FP_TYPES
    assert dtypes[0] == tl.int8 and dtypes[-1] == tl.float64 and tl.uint8 in dtypes


@pytest.mark.parametrize("name", list(TABLE))
def test_table(name):
    bits, itemsize, attr = TABLE[name]
    d = tl.dtype(name)
    assert d == getattr(tl, attr) and hash(d) == hash(getattr(tl, attr)) and d is not getattr(tl, attr)
    assert d.name == name and str(d) == name and d.codegen_name() == attr
    assert repr(d) == f"triton.language.{attr}"
    assert d.primitive_bitwidth == bits and d.itemsize == itemsize and d.scalar is d
    assert d.cache_key_part == name
    signed, unsigned = name in tl.dtype.SINT_TYPES, name in tl.dtype.UINT_TYPES
    assert (d.is_int_signed(), d.is_int_unsigned(), d.is_int()) == (signed, unsigned, signed or unsigned)
    if signed or unsigned:
        assert d.int_bitwidth == bits
        assert d.int_signedness == (tl.dtype.SIGNEDNESS.SIGNED if signed else tl.dtype.SIGNEDNESS.UNSIGNED)
        assert not hasattr(d, "fp_mantissa_width") and not hasattr(d, "exponent_bias")
        assert d.kind() == (tl.dtype.KIND.BOOLEAN if name == "int1" else tl.dtype.KIND.INTEGRAL)
        assert d.get_int_max_value() == (2 ** (bits - 1) - 1 if signed else 2 ** bits - 1)
        assert d.get_int_min_value() == (-2 ** (bits - 1) if signed else 0)
        assert d.mangle() == ("i" if signed else "u") + str(bits)
    else:
        assert not hasattr(d, "int_bitwidth") and not hasattr(d, "int_signedness")
        with pytest.raises(TypeError, match=f"get_int_max_value\\(\\) needs an integer dtype, got {name}"):
            d.get_int_max_value()
        with pytest.raises(TypeError, match=f"get_int_min_value\\(\\) needs an integer dtype, got {name}"):
            d.get_int_min_value()
    if name in FP_FORMATS:
        assert (d.fp_mantissa_width, d.exponent_bias) == FP_FORMATS[name]
        assert d.is_floating() and d.kind() == tl.dtype.KIND.FLOATING and d.mangle() == name
    else:
        assert not d.is_floating() and not hasattr(d, "fp_mantissa_width")
    assert d.is_standard_floating() == (name in ("fp16", "bf16", "fp32", "fp64"))
    assert d.is_fp8() == name.startswith("fp8") and d.is_bool() == (name == "int1")
    assert d.is_void() == (name == "void")
    assert not d.is_ptr() and not d.is_block() and not d.is_const()
    # exactly one of the is_<name>() predicates holds, the one of its own name
    predicates = ["fp8e4nv", "fp8e4b8", "fp8e4b15", "fp8e5", "fp8e5b16", "fp16", "bf16", "fp32", "fp64", "int1",
                  "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
    assert [p for p in predicates if getattr(d, f"is_{p}")()] == ([name] if name != "void" else [])


def test_equality_and_hashing():
    assert tl.float16 == tl.dtype("fp16") and tl.float16 != tl.bfloat16 and not (tl.float16 != tl.dtype("fp16"))
    assert tl.float16 != "fp16" and tl.float16 != 16 and tl.float16 != None  # noqa: E711
    assert tl.float16 == tl.constexpr(tl.float16)  # Triton unwraps a constexpr
    assert len({tl.dtype("fp32"), tl.float32, tl.int32, tl.dtype("int32")}) == 2
    assert {tl.float32: 1}[tl.dtype("fp32")] == 1
    assert tl.dtype(tl.constexpr("int8")) == tl.int8


def test_other_methods():
    assert tl.float16.to_int_type() == tl.int16 and tl.float8e5.to_int_type() == tl.int8
    assert tl.float32.with_element_ty(tl.int8) == tl.int8
    assert tl.dtype.is_ptr() is False and tl.dtype.is_block() is False  # static, as in Triton
    assert tl.void.primitive_bitwidth == 0 and tl.void.mangle() == "V" and str(tl.void) == "void"
    with pytest.raises(TypeError, match="dtype void has no kind"):
        tl.void.kind()


@pytest.mark.parametrize("name", ["float16", "i32", "fp8", "", "pointer<fp32>"])
def test_bad_name(name):
    with pytest.raises(ValueError, match=f"tl.dtype\\({name!r}\\): not a dtype name; the names are int8, "):
        tl.dtype(name)


def test_pointer_type():
    p = tl.pointer_type(tl.int32)
    assert isinstance(p, tl.dtype) and isinstance(p, tl.pointer_type)
    assert p.element_ty == tl.int32 and p.address_space == 1 and p.const is False
    assert p.name == "pointer<int32>" and str(p) == repr(p) == "pointer<int32>" and p.scalar is p
    assert p.is_ptr() and not p.is_const() and not p.is_block() and not p.is_int() and not p.is_floating()
    assert p == tl.pi32_t and p != tl.int32 and tl.int32 != p and hash(p) == hash(tl.pi32_t)
    assert p != tl.pointer_type(tl.int32, address_space=3) and p.mangle() == "Pi32"
    c = tl.pointer_type(tl.float16, const=True)
    assert c.name == "const_pointer<fp16>" and c.is_const() and c != tl.pointer_type(tl.float16)
    assert tl.pointer_type(tl.constexpr(tl.float32)).element_ty == tl.float32
    with pytest.raises(TypeError, match="element_ty has type `str`; expected `dtype`."):
        tl.pointer_type("fp32")


def test_block_type():
    b = tl.block_type(tl.float32, [16, 32])
    assert isinstance(b, tl.dtype) and b.is_block() and not tl.float32.is_block()
    assert b.shape == (16, 32) and b.get_block_shapes() == (16, 32) and b.numel == 512 and b.nbytes == 2048
    assert b.element_ty == tl.float32 and b.scalar == tl.float32 and b.name == str(b) == "<(16, 32), fp32>"
    assert b == tl.block_type(tl.float32, (16, 32)) and b != tl.block_type(tl.float16, (16, 32))
    assert b.with_element_ty(tl.int8) == tl.block_type(tl.int8, [16, 32]) and b.mangle() == "fp32S16_32S"
    assert tl.block_type(tl.int8, [tl.constexpr(4)]).shape == (4,)
    with pytest.raises(ValueError, match="Shape element 1 must be a power of 2"):
        tl.block_type(tl.float32, [16, 3])
    with pytest.raises(TypeError, match="0d block_type is forbidden"):
        tl.block_type(tl.float32, [])
    with pytest.raises(ValueError, match=r"numel \(2097152\) exceeds triton maximum tensor numel \(1048576\)"):
        tl.block_type(tl.float32, [2048, 1024])


def test_module_dtypes_are_dtypes():
    for attr in ["int1", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
                 "bfloat16", "float32", "float64", "float8e4nv", "float8e5", "float8e4b15", "float8e4b8",
                 "float8e5b16", "void"]:
        d = getattr(tl, attr)
        assert type(d) is tl.dtype and d.codegen_name() == attr, attr  # type(...).__name__ == "dtype": Arguments.cpp
    assert tl.core.dtype is tl.dtype and tl.core.pointer_type is tl.pointer_type and tl.core.float16 is tl.float16


@tessera.jit(interpret=True)
def zeros_kernel(out_ptr, DTYPE: tl.constexpr):
    offs = tl.arange(0, 16)
    tl.static_assert(DTYPE == tl.float16)
    tl.store(out_ptr + offs, tl.zeros([16], DTYPE) + 3)


@needs_ext
def test_constructed_dtype_as_constexpr_interpreted():
    out = np.zeros(16, np.float16)
    zeros_kernel[(1,)](out, DTYPE=tl.dtype("fp16"))
    np.testing.assert_array_equal(out, np.full(16, 3, np.float16))


@needs_ext
def test_constructed_dtype_as_constexpr_compiled(tmp_path):
    k = tessera.compile(zeros_kernel, signature="*fp16:16", constexprs={"DTYPE": tl.dtype("fp16")}, target="sm_90a")
    assert k.metadata.constexprs == {"DTYPE": tl.float16}
    assert "st.global" in k.asm["ptx"] and ".b16" in k.asm["ptx"]
    assemble(k.asm["ptx"], "sm_90a", tmp_path)


@needs_ext
@pytest.mark.parametrize("name", ["fp8e4b8", "void"])
def test_dtype_without_kernel_type_is_refused(name):
    out = np.zeros(16, np.float16)
    with pytest.raises(TypeError, match=f"constexpr 'DTYPE' is the dtype {name}, which tessera does not support"):
        zeros_kernel[(1,)](out, DTYPE=tl.dtype(name))


@needs_ext
def test_pointer_type_as_constexpr_is_refused():
    out = np.zeros(16, np.float16)
    with pytest.raises(TypeError, match="constexpr 'DTYPE' has unsupported type 'tessera.pointer_type'"):
        zeros_kernel[(1,)](out, DTYPE=tl.pointer_type(tl.float16))


FP8_GLOBAL = tl.float8e4b15  # a module global of a dtype


@tessera.jit(interpret=True)
def fp8_global_kernel(out_ptr):
    tl.static_assert(FP8_GLOBAL == tl.float8e4b15 and FP8_GLOBAL.exponent_bias == 15)
    tl.store(out_ptr + tl.arange(0, 16), tl.full([16], 1, tl.float32))


@needs_ext
def test_fp8e4b15_dtype_in_a_global():
    out = np.zeros(16, np.float32)
    fp8_global_kernel[(1,)](out)
    np.testing.assert_array_equal(out, np.ones(16, np.float32))


def test_compatibility_mode():
    tessera.compat.install()
    try:
        namespace = {"__name__": "user_tests"}
        exec("import triton\nimport triton.language as tl\n"
             "params = list(map(tl.dtype, tl.dtype.SINT_TYPES + tl.dtype.UINT_TYPES + tl.dtype.STANDARD_FP_TYPES))\n"
             "codegen = [repr(eval(f'triton.language.{d}')) for d in ['int8', 'uint32', 'float16', 'bfloat16']]\n",
             namespace)
    finally:
        tessera.compat.uninstall()
    assert namespace["tl"] is tl and len(namespace["params"]) == 13
    assert namespace["codegen"] == ["triton.language.int8", "triton.language.uint32", "triton.language.float16",
                                    "triton.language.bfloat16"]  # test_core.py's test_dtype_codegen
