"""The names of tessera's kernel language (Triton's `triton.language`).

Inside kernels these names are resolved by the C++ front-end; here they
exist so that kernel files import under Python, for editors, and as the
host-side values constexprs and dtypes take.
"""
import builtins as _builtins
from enum import Enum as _Enum

from . import math


class constexpr_type:
    """Triton's triton.language.core.constexpr_type: the type of a constexpr, equal when the values are
    (`tl.constexpr(10).type == constexpr_type(10)`; in kernels too, `c.type == constexpr_type(10)`)."""

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return isinstance(other, constexpr_type) and self.value == other.value

    def __repr__(self):
        return f"constexpr_type[{self.value}]"

    def __hash__(self):
        return hash(self.value)


class constexpr:
    """A compile-time value: `BLOCK: tl.constexpr` or `LOG2E = tl.constexpr(1.44)`."""

    def __init__(self, value):
        self.value = value.value if isinstance(value, constexpr) else value

    @property
    def type(self):
        return constexpr_type(self.value)

    def __repr__(self):
        return f"constexpr[{self.value!r}]"

    def __index__(self):
        return self.value

    def __int__(self):
        return int(self.value)

    def __float__(self):
        return float(self.value)

    def __bool__(self):
        return bool(self.value)

    def __eq__(self, other):  # constexpr(constexpr(5)) == constexpr(5) == 5, as in Triton
        return self.value == (other.value if isinstance(other, constexpr) else other)

    def __hash__(self):
        return hash(self.value)


class PropagateNan(_Enum):
    """`propagate_nan=` of tl.minimum / tl.maximum / tl.clamp (Triton's values): NONE, a NaN operand
    loses to the other (PTX min/max); ALL, a NaN operand is the result."""
    NONE = 0x0000
    ALL = 0xFFFF


class const:
    """A parameter annotation, `in_ptr: tl.const`: the kernel only reads through this pointer
    (tl.store and atomics on it are compile errors; its type differs from a plain pointer's)."""


class dtype:
    """A scalar type, as Triton's `triton.language.core.dtype`: `tl.dtype("fp16") == tl.float16`.

    On the host a dtype is a value: a constexpr argument (`OUT_DTYPE=tl.float16`, read by its
    `.name` in python/bindings/Arguments.cpp), a module global of a kernel, a test parameter.
    """
    SINT_TYPES = ["int8", "int16", "int32", "int64"]
    UINT_TYPES = ["int1", "uint8", "uint16", "uint32", "uint64"]  # int1 is unsigned, as in Triton
    FP_TYPES = ["fp8e4b15", "fp8e4nv", "fp8e4b8", "fp8e5", "fp8e5b16", "fp16", "bf16", "fp32", "fp64"]
    STANDARD_FP_TYPES = ["fp16", "bf16", "fp32", "fp64"]
    OTHER_TYPES = ["void"]

    class SIGNEDNESS(_Enum):
        SIGNED = 0
        UNSIGNED = 1

    class KIND(_Enum):
        BOOLEAN = 0
        INTEGRAL = 1
        FLOATING = 2

    def __init__(self, name):
        name = name.value if isinstance(name, constexpr) else name
        if not dtype.is_dtype(name):
            raise ValueError(f"tl.dtype({name!r}): not a dtype name; the names are "
                             + ", ".join(dtype.SINT_TYPES + dtype.UINT_TYPES + dtype.FP_TYPES + dtype.OTHER_TYPES))
        self.name = name
        self.primitive_bitwidth = _BITWIDTHS[name]
        self.itemsize = self.primitive_bitwidth // 8
        if name in dtype.SINT_TYPES or name in dtype.UINT_TYPES:
            self.int_signedness = dtype.SIGNEDNESS.SIGNED if name in dtype.SINT_TYPES else dtype.SIGNEDNESS.UNSIGNED
            self.int_bitwidth = self.primitive_bitwidth
        elif name in dtype.FP_TYPES:
            self.fp_mantissa_width, self.exponent_bias = _FP_FORMATS[name]

    # The predicates on the name.
    def is_fp8(self):
        return "fp8" in self.name

    def is_fp8e4nv(self):
        return self.name == "fp8e4nv"

    def is_fp8e4b8(self):
        return self.name == "fp8e4b8"

    def is_fp8e4b15(self):
        return self.name == "fp8e4b15"

    def is_fp8e5(self):
        return self.name == "fp8e5"

    def is_fp8e5b16(self):
        return self.name == "fp8e5b16"

    def is_fp16(self):
        return self.name == "fp16"

    def is_bf16(self):
        return self.name == "bf16"

    def is_fp32(self):
        return self.name == "fp32"

    def is_fp64(self):
        return self.name == "fp64"

    def is_int1(self):
        return self.name == "int1"

    def is_int8(self):
        return self.name == "int8"

    def is_int16(self):
        return self.name == "int16"

    def is_int32(self):
        return self.name == "int32"

    def is_int64(self):
        return self.name == "int64"

    def is_uint8(self):
        return self.name == "uint8"

    def is_uint16(self):
        return self.name == "uint16"

    def is_uint32(self):
        return self.name == "uint32"

    def is_uint64(self):
        return self.name == "uint64"

    def is_floating(self):
        return self.name in dtype.FP_TYPES

    def is_standard_floating(self):
        return self.name in dtype.STANDARD_FP_TYPES

    def is_int_signed(self):
        return self.name in dtype.SINT_TYPES

    def is_int_unsigned(self):
        return self.name in dtype.UINT_TYPES

    def is_int(self):
        return self.name in dtype.SINT_TYPES + dtype.UINT_TYPES

    def is_bool(self):
        return self.is_int1()

    def is_void(self):  # Triton 3.6 raises "Not implemented" here; the answer is the useful one
        return self.name == "void"

    @staticmethod
    def is_block():
        return False

    @staticmethod
    def is_ptr():
        return False

    @staticmethod
    def is_const():
        return False

    @staticmethod
    def is_dtype(type_str):
        return type_str in dtype.SINT_TYPES + dtype.UINT_TYPES + dtype.FP_TYPES + dtype.OTHER_TYPES

    def kind(self):
        """bool < integer < floating point, as Triton orders them."""
        if self.is_bool():
            return dtype.KIND.BOOLEAN
        if self.is_int():
            return dtype.KIND.INTEGRAL
        if self.is_floating():
            return dtype.KIND.FLOATING
        raise TypeError(f"dtype {self} has no kind (it is not a bool, integer or floating-point type)")

    def get_int_max_value(self):
        if self.is_int_signed():
            return 2 ** (self.int_bitwidth - 1) - 1
        if self.is_int_unsigned():
            return 2 ** self.int_bitwidth - 1
        raise TypeError(f"get_int_max_value() needs an integer dtype, got {self}")

    def get_int_min_value(self):
        if self.is_int_signed():
            return -2 ** (self.int_bitwidth - 1)
        if self.is_int_unsigned():
            return 0
        raise TypeError(f"get_int_min_value() needs an integer dtype, got {self}")

    def to_int_type(self):
        """The signed integer dtype of the same width (as inside kernels)."""
        bits = self.primitive_bitwidth
        if bits not in (8, 16, 32, 64):
            raise TypeError(f"to_int_type() needs a dtype of 8, 16, 32 or 64 bits, got {self}")
        return dtype(f"int{bits}")

    @property
    def scalar(self):
        return self

    @property
    def cache_key_part(self):
        return self.name

    def with_element_ty(self, element_ty):
        return element_ty

    def mangle(self):
        if self.is_int():
            return ("i" if self.int_signedness == dtype.SIGNEDNESS.SIGNED else "u") + str(self.int_bitwidth)
        if self.is_floating():
            return self.name
        if self.is_void():
            return "V"
        raise NotImplementedError(f"NYI: Type mangling for type {type(self)}")

    def codegen_name(self):
        """The module attribute's name: "float16" for fp16, "bfloat16" for bf16, else the name."""
        if self.name.startswith("fp"):
            return "float" + self.name[2:]
        if self.name.startswith("bf"):
            return "bfloat" + self.name[2:]
        return self.name

    def __str__(self):
        return self.name

    def __repr__(self):  # an expression that evaluates to it, under Triton's spelling
        return f"triton.language.{self.codegen_name()}"

    def __eq__(self, other):
        other = other.value if isinstance(other, constexpr) else other
        return isinstance(other, dtype) and other.name == self.name

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash((self.name,))


_BITWIDTHS = {"int1": 1, "int8": 8, "int16": 16, "int32": 32, "int64": 64, "uint8": 8, "uint16": 16,
              "uint32": 32, "uint64": 64, "fp8e4b15": 8, "fp8e4nv": 8, "fp8e4b8": 8, "fp8e5": 8, "fp8e5b16": 8,
              "fp16": 16, "bf16": 16, "fp32": 32, "fp64": 64, "void": 0}
# (mantissa bits, exponent bias) of each floating-point dtype (core.py).
_FP_FORMATS = {"fp8e4b15": (3, 15), "fp8e4nv": (3, 7), "fp8e4b8": (3, 8), "fp8e5": (2, 15), "fp8e5b16": (2, 16),
               "fp16": (10, 15), "bf16": (7, 127), "fp32": (23, 127), "fp64": (52, 1023)}


class pointer_type(dtype):
    """The dtype of a pointer to `element_ty` (for x.to(tl.pointer_type(tl.int32)))."""

    def __init__(self, element_ty, address_space=1, const=False):
        element_ty = element_ty.value if isinstance(element_ty, constexpr) else element_ty
        if not isinstance(element_ty, dtype):
            raise TypeError(f"element_ty has type `{type(element_ty).__name__}`; expected `dtype`.")
        self.element_ty = element_ty
        self.address_space = address_space
        self.const = const
        self.name = f"const_pointer<{element_ty}>" if const else f"pointer<{element_ty}>"

    def __repr__(self):
        return self.name

    def is_ptr(self):
        return True

    def is_const(self):
        return self.const

    def mangle(self):
        return f"P{self.element_ty.mangle()}"

    def __eq__(self, other):
        other = other.value if isinstance(other, constexpr) else other
        return (isinstance(other, pointer_type) and self.element_ty == other.element_ty
                and self.address_space == other.address_space and self.const == other.const)

    def __hash__(self):
        return hash((self.element_ty, self.address_space, self.const))


TRITON_MAX_TENSOR_NUMEL = 1048576


class block_type(dtype):
    """The type of a block: its element dtype and shape (Triton's `x.type` of a tensor)."""

    def __init__(self, element_ty, shape):
        if not isinstance(shape, (list, _builtins.tuple)):  # tl.tuple (below) is Triton's kernel type
            raise TypeError(f"block_type's shape must be a list or tuple, got {type(shape).__name__}")
        self.element_ty = element_ty
        self.shape = _builtins.tuple(d.value if isinstance(d, constexpr) else d for d in shape)
        if not self.shape:
            raise TypeError("0d block_type is forbidden")
        numel = 1
        for i, d in enumerate(self.shape):
            if not isinstance(d, int) or isinstance(d, bool):
                raise TypeError(f"Shape element {i} must have type `constexpr[int]`, got `constexpr[{type(d)}]")
            if d <= 0 or d & (d - 1):
                raise ValueError(f"Shape element {i} must be a power of 2")
            numel *= d
        if numel > TRITON_MAX_TENSOR_NUMEL:
            raise ValueError(f"numel ({numel}) exceeds triton maximum tensor numel ({TRITON_MAX_TENSOR_NUMEL})")
        self.numel = numel
        self.name = f"<{self.shape}, {self.element_ty}>"

    def __repr__(self):
        return self.name

    def is_block(self):
        return True

    def get_block_shapes(self):
        return self.shape

    def with_element_ty(self, scalar_ty):
        return block_type(scalar_ty, self.shape)

    @property
    def scalar(self):
        return self.element_ty

    @property
    def nbytes(self):
        return self.numel * (self.element_ty.primitive_bitwidth // 8)

    def mangle(self):
        return f"{self.scalar.mangle()}S{'_'.join(map(str, self.shape))}S"

    def __eq__(self, other):
        return isinstance(other, block_type) and self.element_ty == other.element_ty and self.shape == other.shape

    def __hash__(self):
        return hash((self.element_ty, self.shape))


void = dtype("void")
int1 = dtype("int1")
int8 = dtype("int8")
int16 = dtype("int16")
int32 = dtype("int32")
int64 = dtype("int64")
uint8 = dtype("uint8")
uint16 = dtype("uint16")
uint32 = dtype("uint32")
uint64 = dtype("uint64")
float8e5 = dtype("fp8e5")
float8e5b16 = dtype("fp8e5b16")  # float8e5b16, float8e4b8 (AMD's): names only in kernels (docs/language.md)
float8e4nv = dtype("fp8e4nv")
float8e4b8 = dtype("fp8e4b8")
float8e4b15 = dtype("fp8e4b15")
float16 = dtype("fp16")
bfloat16 = dtype("bf16")
float32 = dtype("fp32")
float64 = dtype("fp64")
pi32_t = pointer_type(int32)


from ._device import _device_only  # noqa: E402


for _name in [
    "program_id", "num_programs", "arange", "zeros", "zeros_like", "full", "load", "store",
    "where", "maximum", "minimum", "exp", "exp2", "log", "log2", "sqrt", "abs", "max", "min",
    "sum", "cdiv", "multiple_of", "max_contiguous", "static_assert", "static_print", "cast",
    "range", "static_range",
    # the rest of triton.language (docs/language.md)
    "sin", "cos", "rsqrt", "erf", "floor", "ceil", "fma", "fdiv", "div_rn", "sqrt_rn", "umulhi",
    "clamp", "sigmoid", "softmax", "broadcast", "broadcast_to", "reshape", "view", "ravel",
    "expand_dims", "trans", "permute", "join", "split", "cat", "flip", "reduce", "associative_scan",
    "argmax", "argmin", "xor_sum", "reduce_or", "cumsum", "cumprod", "dot", "dot_scaled", "atomic_add", "atomic_max",
    "atomic_min", "atomic_and", "atomic_or", "atomic_xor", "atomic_xchg", "atomic_cas",
    "make_block_ptr", "advance", "make_tensor_descriptor", "load_tensor_descriptor", "store_tensor_descriptor", "device_print", "device_assert", "assume", "debug_barrier",
    "rand", "randn", "randint", "randint4x", "rand4x", "randn4x", "philox", "swizzle2d",
    "to_tensor", "max_constancy", "condition", "interleave", "map_elementwise",
    "sort", "gather", "histogram", "inline_asm_elementwise", "topk", "bitonic_merge", "add", "sub", "mul",
    "philox_impl", "uint_to_uniform_float", "pair_uniform_to_normal",
    # tessera's own: two warpgroups taking turns (docs/language.md)
    "pingpong_start", "pingpong_wait", "pingpong_pass", "pingpong_end",
]:
    globals()[_name] = _device_only(_name)
del _name


from . import extra  # noqa: E402  (tl.extra.cuda.libdevice)
from . import random  # noqa: E402
from . import target_info  # noqa: E402  (tl.target_info.is_cuda() on the host)


def _log2(i):
    """Triton's standard._log2 (a constexpr function): floor(log2(i)) of an int, on the host and in kernels."""
    i = getattr(i, "value", i)
    log2 = 0
    while i > 1:
        i >>= 1
        log2 += 1
    return log2


CONSTEXPR_0 = constexpr(0)  # triton.language.core.CONSTEXPR_0 (the default `descending` of Triton's sort helpers)


def _is_power_of_two(i):
    """Triton's standard._is_power_of_two (a constexpr function), on the host and in kernels."""
    i = getattr(i, "value", i)
    return (i & (i - 1)) == 0 and i != 0


def builtin(fn):
    """Triton's triton.language.core.builtin: a function kernels call at compile time. tessera compiles it
    as a @jit helper (its `_semantic` parameter stays at its default), so a body of language operations on
    its arguments folds as in Triton: `return isinstance(v, tl.constexpr)`."""
    fn.__tessera_builtin__ = True
    return fn


class tensor:
    """The type of block values inside kernels, for annotations (`def f(x: tl.tensor)`); no host values."""


class tuple:
    """Triton's tl.tuple (`tl.tuple([a, b])` inside kernels builds a tuple); no host values."""


class slice:
    """Triton's tl.slice (the type of `x[a:b]`'s index inside kernels); no host values."""


class tensor_descriptor_base:
    """The type of tensor descriptors inside kernels (`isinstance(d, tl.tensor_descriptor)`); no host values."""


class tensor_descriptor(tensor_descriptor_base):
    """A descriptor made by tl.make_tensor_descriptor or passed as a TensorDescriptor; no host values."""


def _self():
    import sys
    return sys.modules[__name__]


core = _self()  # triton.language.core (Triton keeps the language's classes there): the same names
standard = core  # triton.language.standard (Triton's library of @jit functions): the same names too
del _self
