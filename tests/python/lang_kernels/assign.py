"""Triton's assignment rule (code_generator.py visit_Assign): `x = <number>`
makes x a scalar tensor of the number's to_tensor type; `x: tl.constexpr = ...`
keeps a compile-time constant (tests/python/test_lang_assign.py)."""
import tessera
import tessera.language as tl


# int8 block x an int32 scalar tensor: the product is int32 (no int8 wrap).
@tessera.jit
def scale_by_assigned(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = 100
    y = tl.load(x_ptr + offs) * a
    tl.static_assert(y.dtype == tl.int32)
    tl.store(y_ptr + offs, y)


# The same with the factor a constexpr: a weak literal, so the product stays int8.
@tessera.jit
def scale_by_constexpr(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a: tl.constexpr = 100
    y = tl.load(x_ptr + offs) * a
    tl.static_assert(y.dtype == tl.int8)
    tl.store(y_ptr + offs, y)


# Triton's test_for_iv: an accumulator initialised by 0 is an int32 scalar tensor.
@tessera.jit
def sum_range_int64(out_ptr, LO: tl.constexpr, HI: tl.constexpr, STEP: tl.constexpr):
    acc = 0
    acc = acc.to(tl.int64)
    for i in range(LO, HI, STEP):
        acc += i
    tl.store(out_ptr, acc)


# Triton raises here: B is a scalar tensor, tl.arange needs constexprs.
@tessera.jit
def arange_of_assigned(x_ptr):
    B = 128
    tl.store(x_ptr + tl.arange(0, B), 1.0)


@tessera.jit
def constexpr_of_tensor(x_ptr):
    v: tl.constexpr = tl.load(x_ptr)
    tl.store(x_ptr, v)
