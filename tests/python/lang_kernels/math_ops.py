import tessera
import tessera.language as tl
from tessera.language.extra.cuda import libdevice


@tessera.jit
def float_math(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    y = tl.load(y_ptr + offs, mask=m, other=1.0)
    r = tl.sin(x) + tl.cos(y) + tl.rsqrt(x) + tl.erf(x) + tl.floor(x) + tl.ceil(y)
    r += tl.fma(x, y, r) + tl.fdiv(x, y) + tl.div_rn(x, y) + tl.sqrt_rn(x)
    r += tl.clamp(x, -1.0, 1.0) + tl.sigmoid(x) + x.sigmoid()
    r += libdevice.tanh(x) + tl.math.pow(x, y) + libdevice.log1p(x) + libdevice.expm1(y)
    r += libdevice.atan2(x, y) + tl.math.tanh(y) + libdevice.erfc(x) + libdevice.round(y)
    tl.store(out_ptr + offs, r, mask=m)


@tessera.jit
def one_op(x_ptr, y_ptr, out_ptr, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    if FN == "sin":
        r = tl.sin(x)
    elif FN == "cos":
        r = tl.cos(x)
    elif FN == "rsqrt":
        r = tl.rsqrt(x)
    elif FN == "erf":
        r = tl.erf(x)
    elif FN == "floor":
        r = tl.floor(x)
    elif FN == "ceil":
        r = tl.ceil(x)
    elif FN == "fma":
        r = tl.fma(x, y, x)
    elif FN == "fdiv":
        r = tl.fdiv(x, y)
    elif FN == "div_rn":
        r = tl.div_rn(x, y)
    elif FN == "sqrt_rn":
        r = tl.sqrt_rn(x)
    elif FN == "clamp":
        r = tl.clamp(x, -0.5, 0.5)
    elif FN == "sigmoid":
        r = tl.sigmoid(x)
    elif FN == "fast_tanhf":
        r = tl.math.fast_tanhf(x)
    else:
        r = tl.math.pow(x, y)
    tl.store(out_ptr + offs, r)


@tessera.jit
def integer_ops(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1)
    y = tl.load(y_ptr + offs, mask=m, other=1)
    r = (x // y) + (x % y) + (x << 2) + (x >> 1) + (x & 7) + (x | 1) + (x ^ y) + ~x
    r += tl.umulhi(x, y).to(x.dtype)
    tl.store(out_ptr + offs, r, mask=m)


@tessera.jit
def softmax_rows(x_ptr, out_ptr, ROWS: tl.constexpr, COLS: tl.constexpr):
    offs = tl.arange(0, ROWS)[:, None] * COLS + tl.arange(0, COLS)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.softmax(x))
