"""The names of tessera's kernel language (Triton's `triton.language`).

Inside kernels these names are resolved by the C++ front-end; here they
exist so that kernel files import under Python, for editors, and as the
host-side values constexprs and dtypes take.
"""
from . import math


class constexpr:
    """A compile-time value: `BLOCK: tl.constexpr` or `LOG2E = tl.constexpr(1.44)`."""

    def __init__(self, value):
        self.value = value.value if isinstance(value, constexpr) else value

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


class const:
    """A parameter annotation, `in_ptr: tl.const`: the kernel only reads through this pointer
    (tl.store and atomics on it are compile errors; its type differs from a plain pointer's)."""


class dtype:
    def __init__(self, name, bits):
        self.name = name
        self.primitive_bitwidth = bits

    def __repr__(self):
        return f"tessera.language.{self.name}"

    def __eq__(self, other):
        return isinstance(other, dtype) and other.name == self.name

    def __hash__(self):
        return hash(self.name)


int1 = dtype("int1", 1)
int8 = dtype("int8", 8)
int16 = dtype("int16", 16)
int32 = dtype("int32", 32)
int64 = dtype("int64", 64)
uint8 = dtype("uint8", 8)
uint16 = dtype("uint16", 16)
uint32 = dtype("uint32", 32)
uint64 = dtype("uint64", 64)
float16 = dtype("fp16", 16)
bfloat16 = dtype("bf16", 16)
float32 = dtype("fp32", 32)
float64 = dtype("fp64", 64)
float8e4nv = dtype("fp8e4nv", 8)
float8e5 = dtype("fp8e5", 8)


def _device_only(name):
    def fn(*args, **kwargs):
        raise RuntimeError(f"tessera.language.{name} can only be called inside a @tessera.jit kernel")
    fn.__name__ = name
    return fn


for _name in [
    "program_id", "num_programs", "arange", "zeros", "zeros_like", "full", "load", "store",
    "where", "maximum", "minimum", "exp", "exp2", "log", "log2", "sqrt", "abs", "max", "min",
    "sum", "cdiv", "multiple_of", "max_contiguous", "static_assert", "static_print", "cast",
    "range", "static_range",
    # the rest of triton.language (docs/language.md)
    "sin", "cos", "rsqrt", "erf", "floor", "ceil", "fma", "fdiv", "div_rn", "sqrt_rn", "umulhi",
    "clamp", "sigmoid", "softmax", "broadcast", "broadcast_to", "reshape", "view", "ravel",
    "expand_dims", "trans", "permute", "join", "split", "cat", "flip", "reduce", "associative_scan",
    "argmax", "argmin", "xor_sum", "reduce_or", "cumsum", "cumprod", "dot", "atomic_add", "atomic_max",
    "atomic_min", "atomic_and", "atomic_or", "atomic_xor", "atomic_xchg", "atomic_cas",
    "make_block_ptr", "advance", "make_tensor_descriptor", "load_tensor_descriptor", "store_tensor_descriptor", "device_print", "device_assert", "assume", "debug_barrier",
    "rand", "randn", "randint", "randint4x", "rand4x", "randn4x", "philox", "swizzle2d",
    "to_tensor", "max_constancy", "condition", "interleave",
    # tessera's own: two warpgroups taking turns (docs/language.md)
    "pingpong_start", "pingpong_wait", "pingpong_pass", "pingpong_end",
]:
    globals()[_name] = _device_only(_name)
del _name


def pointer_type(element_ty, address_space=1):
    """The dtype of a pointer to `element_ty` (for x.to(tl.pointer_type(tl.int32)))."""
    return dtype("*" + element_ty.name, 64)


pi32_t = pointer_type(int32)

from . import extra  # noqa: E402  (tl.extra.cuda.libdevice)
from . import random  # noqa: E402


class tensor:
    """The type of block values inside kernels, for annotations (`def f(x: tl.tensor)`); no host values."""


def _self():
    import sys
    return sys.modules[__name__]


core = _self()  # triton.language.core (Triton keeps the language's classes there): the same names
del _self
