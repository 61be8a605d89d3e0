"""Float division in its Triton forms: `/`, tl.fdiv (with and without ieee_rounding), tl.div_rn,
tl.sigmoid, and a power-of-two divisor (tests/python/test_division_rounding.py)."""
import tessera.language as tl
from tessera import jit


@jit
def divide(x_ptr, y_ptr, out_ptr, FORM: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + i)
    y = tl.load(y_ptr + i)
    if FORM == "slash":
        r = x / y
    elif FORM == "by_constant":
        r = x / 30.0
    elif FORM == "by_power_of_two":
        r = x / 32.0
    elif FORM == "reciprocal":
        r = 1.0 / x
    elif FORM == "fdiv":
        r = tl.fdiv(x, y)
    elif FORM == "fdiv_ieee":
        r = tl.fdiv(x, y, ieee_rounding=True)
    elif FORM == "div_rn":
        r = tl.div_rn(x, y)
    else:
        r = tl.sigmoid(x)
    tl.store(out_ptr + i, r)
