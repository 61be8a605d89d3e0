// The language prelude's libdevice section (see LanguagePrelude.h): libdevice functions that
// are plain language. languagePreludeSource() (LanguagePrelude.cpp) joins it between the math
// and dot_scaled sections.
#include "dsl/LanguagePrelude.h"

namespace tessera {

const char *const kLanguagePreludeLibdevice = R"PY(# ------------------------------------------------------------------ libdevice
# libdevice functions that are plain language: classification, bit
# reinterpretation and conversions with a named rounding (results typed as
# libdevice's: predicates are int32, nonzero for true).

@jit
def _libdevice_float(x, fn: tl.constexpr):
    tl.static_assert(x.dtype.is_floating(), fn + " needs floats")
    return x


@jit
def isnan(x):
    x = _libdevice_float(x, "isnan")
    return (x != x).to(tl.int32)


@jit
def isinf(x):
    x = _libdevice_float(x, "isinf")
    return (tl.abs(x) == float("inf")).to(tl.int32)


@jit
def finitef(x):
    x = _libdevice_float(x, "finitef")
    return (tl.abs(x) < float("inf")).to(tl.int32)


@jit
def isfinited(x):
    x = _libdevice_float(x, "isfinited")
    return (tl.abs(x) < float("inf")).to(tl.int32)


@jit
def signbit(x):
    x = _libdevice_float(x, "signbit")
    if x.dtype == tl.float64:
        bits = x.to(tl.int64, bitcast=True)
    else:
        bits = x.to(tl.float32).to(tl.int32, bitcast=True)
    return (bits < 0).to(tl.int32)


@jit
def _reinterpret(x, src: tl.constexpr, dst: tl.constexpr, fn: tl.constexpr):
    tl.static_assert(x.dtype == src, fn)
    return x.to(dst, bitcast=True)


@jit
def float_as_int(x):
    return _reinterpret(x, tl.float32, tl.int32, "float_as_int needs float32 operands")


@jit
def float_as_uint(x):
    return _reinterpret(x, tl.float32, tl.uint32, "float_as_uint needs float32 operands")


@jit
def int_as_float(x):
    return _reinterpret(x, tl.int32, tl.float32, "int_as_float needs int32 operands")


@jit
def uint_as_float(x):
    return _reinterpret(x, tl.uint32, tl.float32, "uint_as_float needs uint32 operands")


@jit
def double_as_longlong(x):
    return _reinterpret(x, tl.float64, tl.int64, "double_as_longlong needs float64 operands")


@jit
def longlong_as_double(x):
    return _reinterpret(x, tl.int64, tl.float64, "longlong_as_double needs int64 operands")


# Float to integer with rounding "rn" (to nearest even), "rz", "rd", "ru".
@jit
def _float_to_int(x, src: tl.constexpr, dst: tl.constexpr, rounding: tl.constexpr, fn: tl.constexpr):
    tl.static_assert(x.dtype == src, fn)
    if rounding == "rn":
        x = tl.math.rint(x)
    elif rounding == "rd":
        x = tl.floor(x)
    elif rounding == "ru":
        x = tl.ceil(x)
    return x.to(dst)


@jit
def float2int_rn(x):
    return _float_to_int(x, tl.float32, tl.int32, "rn", "float2int_rn")


@jit
def float2int_rz(x):
    return _float_to_int(x, tl.float32, tl.int32, "rz", "float2int_rz")


@jit
def float2int_rd(x):
    return _float_to_int(x, tl.float32, tl.int32, "rd", "float2int_rd")


@jit
def float2int_ru(x):
    return _float_to_int(x, tl.float32, tl.int32, "ru", "float2int_ru")


@jit
def float2uint_rn(x):
    return _float_to_int(x, tl.float32, tl.uint32, "rn", "float2uint_rn")


@jit
def float2uint_rz(x):
    return _float_to_int(x, tl.float32, tl.uint32, "rz", "float2uint_rz")


@jit
def float2uint_rd(x):
    return _float_to_int(x, tl.float32, tl.uint32, "rd", "float2uint_rd")


@jit
def float2uint_ru(x):
    return _float_to_int(x, tl.float32, tl.uint32, "ru", "float2uint_ru")


@jit
def float2ll_rn(x):
    return _float_to_int(x, tl.float32, tl.int64, "rn", "float2ll_rn")


@jit
def float2ll_rz(x):
    return _float_to_int(x, tl.float32, tl.int64, "rz", "float2ll_rz")


@jit
def float2ll_rd(x):
    return _float_to_int(x, tl.float32, tl.int64, "rd", "float2ll_rd")


@jit
def float2ll_ru(x):
    return _float_to_int(x, tl.float32, tl.int64, "ru", "float2ll_ru")


@jit
def float2ull_rn(x):
    return _float_to_int(x, tl.float32, tl.uint64, "rn", "float2ull_rn")


@jit
def float2ull_rz(x):
    return _float_to_int(x, tl.float32, tl.uint64, "rz", "float2ull_rz")


@jit
def float2ull_rd(x):
    return _float_to_int(x, tl.float32, tl.uint64, "rd", "float2ull_rd")


@jit
def float2ull_ru(x):
    return _float_to_int(x, tl.float32, tl.uint64, "ru", "float2ull_ru")


@jit
def double2int_rn(x):
    return _float_to_int(x, tl.float64, tl.int32, "rn", "double2int_rn")


@jit
def double2int_rz(x):
    return _float_to_int(x, tl.float64, tl.int32, "rz", "double2int_rz")


@jit
def double2int_rd(x):
    return _float_to_int(x, tl.float64, tl.int32, "rd", "double2int_rd")


@jit
def double2int_ru(x):
    return _float_to_int(x, tl.float64, tl.int32, "ru", "double2int_ru")


@jit
def double2uint_rn(x):
    return _float_to_int(x, tl.float64, tl.uint32, "rn", "double2uint_rn")


@jit
def double2uint_rz(x):
    return _float_to_int(x, tl.float64, tl.uint32, "rz", "double2uint_rz")


@jit
def double2uint_rd(x):
    return _float_to_int(x, tl.float64, tl.uint32, "rd", "double2uint_rd")


@jit
def double2uint_ru(x):
    return _float_to_int(x, tl.float64, tl.uint32, "ru", "double2uint_ru")


@jit
def double2ll_rn(x):
    return _float_to_int(x, tl.float64, tl.int64, "rn", "double2ll_rn")


@jit
def double2ll_rz(x):
    return _float_to_int(x, tl.float64, tl.int64, "rz", "double2ll_rz")


@jit
def double2ll_rd(x):
    return _float_to_int(x, tl.float64, tl.int64, "rd", "double2ll_rd")


@jit
def double2ll_ru(x):
    return _float_to_int(x, tl.float64, tl.int64, "ru", "double2ll_ru")


@jit
def double2ull_rn(x):
    return _float_to_int(x, tl.float64, tl.uint64, "rn", "double2ull_rn")


@jit
def double2ull_rz(x):
    return _float_to_int(x, tl.float64, tl.uint64, "rz", "double2ull_rz")


@jit
def double2ull_rd(x):
    return _float_to_int(x, tl.float64, tl.uint64, "rd", "double2ull_rd")


@jit
def double2ull_ru(x):
    return _float_to_int(x, tl.float64, tl.uint64, "ru", "double2ull_ru")


# Integer to float and double to float: round to nearest, as a cast does.
@jit
def _convert_rn(x, src: tl.constexpr, dst: tl.constexpr, fn: tl.constexpr):
    tl.static_assert(x.dtype == src, fn)
    return x.to(dst)


@jit
def int2float_rn(x):
    return _convert_rn(x, tl.int32, tl.float32, "int2float_rn needs int32 operands")


@jit
def uint2float_rn(x):
    return _convert_rn(x, tl.uint32, tl.float32, "uint2float_rn needs uint32 operands")


@jit
def ll2float_rn(x):
    return _convert_rn(x, tl.int64, tl.float32, "ll2float_rn needs int64 operands")


@jit
def ull2float_rn(x):
    return _convert_rn(x, tl.uint64, tl.float32, "ull2float_rn needs uint64 operands")


@jit
def int2double_rn(x):
    return _convert_rn(x, tl.int32, tl.float64, "int2double_rn needs int32 operands")


@jit
def uint2double_rn(x):
    return _convert_rn(x, tl.uint32, tl.float64, "uint2double_rn needs uint32 operands")


@jit
def ll2double_rn(x):
    return _convert_rn(x, tl.int64, tl.float64, "ll2double_rn needs int64 operands")


@jit
def ull2double_rn(x):
    return _convert_rn(x, tl.uint64, tl.float64, "ull2double_rn needs uint64 operands")


@jit
def double2float_rn(x):
    return _convert_rn(x, tl.float64, tl.float32, "double2float_rn needs float64 operands")


@jit
def llrint(x):
    x = _libdevice_float(x, "llrint")
    return tl.math.rint(x).to(tl.int64)


@jit
def llround(x):
    x = _libdevice_float(x, "llround")
    return tl.math.round(x).to(tl.int64)


# ilogb: the unbiased exponent, from the bits (subnormals scaled up first); 0 and NaN give
# INT_MIN and infinities INT_MAX, as CUDA's ilogbf. Inductor's frexp helper calls it.
@jit
def ilogb(x):
    x = _libdevice_float(x, "ilogb")
    if x.dtype == tl.float64:
        e = ((x.to(tl.int64, bitcast=True) >> 52) & 0x7FF).to(tl.int32)
        e_sub = (((x * 18014398509481984.0).to(tl.int64, bitcast=True) >> 52) & 0x7FF).to(tl.int32) - 54
        e = tl.where(e == 0, e_sub, e) - 1023
    else:
        xf = x.to(tl.float32)
        e = (xf.to(tl.int32, bitcast=True) >> 23) & 0xFF
        e_sub = (((xf * 16777216.0).to(tl.int32, bitcast=True) >> 23) & 0xFF) - 24
        e = tl.where(e == 0, e_sub, e) - 127
    e = tl.where((x == 0) | (x != x), -2147483648, e)
    return tl.where(tl.abs(x) == float("inf"), 2147483647, e)


# ldexp(x, n) = x * 2**n with one rounding: the product is exact in float64 (n clamped to
# +-400, beyond which every float32 result is 0 or inf), then rounded to float32 once.
@jit
def ldexp(x, y):
    x = _libdevice_float(x, "ldexp")
    tl.static_assert(x.dtype != tl.float64, "ldexp of float64 operands is not supported yet")
    n = tl.minimum(tl.maximum(tl.cast(y, tl.int32), -400), 400)
    scale = ((n + 1023).to(tl.int64) << 52).to(tl.float64, bitcast=True)
    return (x.to(tl.float64) * scale).to(tl.float32)


@jit
def scalbn(x, y):
    return ldexp(x, y)


# Integer libdevice functions, on the bits (32- or 64-bit integers; results as libdevice's).
@jit
def _libdevice_int(x, fn: tl.constexpr):
    tl.static_assert(x.dtype.is_int() and x.dtype.primitive_bitwidth >= 32, fn + " needs 32- or 64-bit integers")
    return x


@jit
def _bits(x):
    if x.dtype.primitive_bitwidth == 64:
        return x.to(tl.uint64, bitcast=True)
    else:
        return x.to(tl.uint32, bitcast=True)


# popc: the number of set bits (int32), by summing bit fields in parallel.
@jit
def popc(x):
    v = _bits(_libdevice_int(x, "popc"))
    if x.dtype.primitive_bitwidth == 64:
        v = v - ((v >> 1) & 0x5555555555555555)
        v = (v & 0x3333333333333333) + ((v >> 2) & 0x3333333333333333)
        v = (v + (v >> 4)) & 0x0F0F0F0F0F0F0F0F
        return ((v * 0x0101010101010101) >> 56).to(tl.int32)
    else:
        v = v - ((v >> 1) & 0x55555555)
        v = (v & 0x33333333) + ((v >> 2) & 0x33333333)
        v = (v + (v >> 4)) & 0x0F0F0F0F
        return ((v * 0x01010101) >> 24).to(tl.int32)


# clz: the number of leading zero bits (int32; the width for 0), by halving the window.
@jit
def clz(x):
    v = _bits(_libdevice_int(x, "clz"))
    W: tl.constexpr = x.dtype.primitive_bitwidth
    n = tl.where(v == 0, 1, 0).to(tl.int32)
    for step in tl.static_range(6 if W == 64 else 5):
        s: tl.constexpr = W >> (step + 1)
        top = (v >> (W - s)) == 0
        n += tl.where(top, s, 0)
        v = tl.where(top, v << s, v)
    return n


# brev: the bits in reverse order (the operand's type), by swapping ever wider fields.
@jit
def brev(x):
    v = _bits(_libdevice_int(x, "brev"))
    if x.dtype.primitive_bitwidth == 64:
        v = ((v >> 1) & 0x5555555555555555) | ((v & 0x5555555555555555) << 1)
        v = ((v >> 2) & 0x3333333333333333) | ((v & 0x3333333333333333) << 2)
        v = ((v >> 4) & 0x0F0F0F0F0F0F0F0F) | ((v & 0x0F0F0F0F0F0F0F0F) << 4)
        v = ((v >> 8) & 0x00FF00FF00FF00FF) | ((v & 0x00FF00FF00FF00FF) << 8)
        v = ((v >> 16) & 0x0000FFFF0000FFFF) | ((v & 0x0000FFFF0000FFFF) << 16)
        v = (v >> 32) | (v << 32)
    else:
        v = ((v >> 1) & 0x55555555) | ((v & 0x55555555) << 1)
        v = ((v >> 2) & 0x33333333) | ((v & 0x33333333) << 2)
        v = ((v >> 4) & 0x0F0F0F0F) | ((v & 0x0F0F0F0F) << 4)
        v = ((v >> 8) & 0x00FF00FF) | ((v & 0x00FF00FF) << 8)
        v = (v >> 16) | (v << 16)
    return v.to(x.dtype, bitcast=True)


# ffs: the 1-based position of the lowest set bit (int32), 0 for 0.
@jit
def ffs(x):
    v = _bits(_libdevice_int(x, "ffs"))
    return tl.where(v == 0, 0, popc(v ^ (v - 1)))


# mulhi: the high half of the full product (the operands' type; signed from the unsigned one).
@jit
def mulhi(x, y):
    x = _libdevice_int(x, "mulhi")
    y = _libdevice_int(y, "mulhi")
    tl.static_assert(x.dtype == y.dtype, "mulhi needs operands of one type")
    if x.dtype.is_int_unsigned():
        return tl.umulhi(x, y)
    elif x.dtype.primitive_bitwidth == 32:
        return ((x.to(tl.int64) * y.to(tl.int64)) >> 32).to(tl.int32)
    else:
        hi = tl.umulhi(x.to(tl.uint64, bitcast=True), y.to(tl.uint64, bitcast=True)).to(tl.int64, bitcast=True)
        return hi - tl.where(x < 0, y, 0) - tl.where(y < 0, x, 0)


# hadd / rhadd: (x + y) >> 1, rounded down / up, without the sum overflowing.
@jit
def hadd(x, y):
    x = _libdevice_int(x, "hadd")
    return (x & y) + ((x ^ y) >> 1)


@jit
def rhadd(x, y):
    x = _libdevice_int(x, "rhadd")
    return (x | y) - ((x ^ y) >> 1)


# The "_rn" arithmetic is IEEE arithmetic (round to nearest even).
@jit
def add_rn(x, y):
    return _libdevice_float(x, "add_rn") + y


@jit
def sub_rn(x, y):
    return _libdevice_float(x, "sub_rn") - y


@jit
def mul_rn(x, y):
    return _libdevice_float(x, "mul_rn") * y


@jit
def fma_rn(x, y, z):
    return tl.fma(_libdevice_float(x, "fma_rn"), y, z)


@jit
def rcp_rn(x):
    x = _libdevice_float(x, "rcp_rn")
    return tl.div_rn(1.0, x)


# Integer to float and double to float with a directed rounding ("rd", "ru", "rz"): the nearest value,
# moved one step where it lies on the wrong side of the exact one (compared exactly: the nearest value of an
# integer is an integer, checked against the type's range first; a double holds every float).
@jit
def _convert_directed(x, src: tl.constexpr, dst: tl.constexpr, rounding: tl.constexpr, fn: tl.constexpr):
    tl.static_assert(x.dtype == src, fn)
    r = x.to(dst)
    if src == tl.float64:
        above = r.to(tl.float64) > x
        below = r.to(tl.float64) < x
    else:
        if src == tl.uint64:
            limit: tl.constexpr = 18446744073709551616.0
        elif src == tl.int64:
            limit: tl.constexpr = 9223372036854775808.0
        elif src == tl.uint32:
            limit: tl.constexpr = 4294967296.0
        else:
            limit: tl.constexpr = 2147483648.0
        past = r >= limit  # rounded up past the largest integer of src: above x
        back = tl.where(past, 0.0, r).to(src)
        above = past | (back > x)
        below = (~past) & (back < x)
    inf = float("inf")
    if rounding == "rd":
        r = tl.where(above, tl.math.nextafter(r, tl.full(r.shape, -inf, dst)), r)
    elif rounding == "ru":
        r = tl.where(below, tl.math.nextafter(r, tl.full(r.shape, inf, dst)), r)
    else:
        r = tl.where((above & (r > 0)) | (below & (r < 0)), tl.math.nextafter(r, tl.zeros(r.shape, dst)), r)
    return r


@jit
def int2float_rz(x):
    return _convert_directed(x, tl.int32, tl.float32, "rz", "int2float_rz needs int32 operands")


@jit
def int2float_rd(x):
    return _convert_directed(x, tl.int32, tl.float32, "rd", "int2float_rd needs int32 operands")


@jit
def int2float_ru(x):
    return _convert_directed(x, tl.int32, tl.float32, "ru", "int2float_ru needs int32 operands")


@jit
def uint2float_rz(x):
    return _convert_directed(x, tl.uint32, tl.float32, "rz", "uint2float_rz needs uint32 operands")


@jit
def uint2float_rd(x):
    return _convert_directed(x, tl.uint32, tl.float32, "rd", "uint2float_rd needs uint32 operands")


@jit
def uint2float_ru(x):
    return _convert_directed(x, tl.uint32, tl.float32, "ru", "uint2float_ru needs uint32 operands")


@jit
def ll2float_rz(x):
    return _convert_directed(x, tl.int64, tl.float32, "rz", "ll2float_rz needs int64 operands")


@jit
def ll2float_rd(x):
    return _convert_directed(x, tl.int64, tl.float32, "rd", "ll2float_rd needs int64 operands")


@jit
def ll2float_ru(x):
    return _convert_directed(x, tl.int64, tl.float32, "ru", "ll2float_ru needs int64 operands")


@jit
def ull2float_rz(x):
    return _convert_directed(x, tl.uint64, tl.float32, "rz", "ull2float_rz needs uint64 operands")


@jit
def ull2float_rd(x):
    return _convert_directed(x, tl.uint64, tl.float32, "rd", "ull2float_rd needs uint64 operands")


@jit
def ull2float_ru(x):
    return _convert_directed(x, tl.uint64, tl.float32, "ru", "ull2float_ru needs uint64 operands")


@jit
def ll2double_rz(x):
    return _convert_directed(x, tl.int64, tl.float64, "rz", "ll2double_rz needs int64 operands")


@jit
def ll2double_rd(x):
    return _convert_directed(x, tl.int64, tl.float64, "rd", "ll2double_rd needs int64 operands")


@jit
def ll2double_ru(x):
    return _convert_directed(x, tl.int64, tl.float64, "ru", "ll2double_ru needs int64 operands")


@jit
def ull2double_rz(x):
    return _convert_directed(x, tl.uint64, tl.float64, "rz", "ull2double_rz needs uint64 operands")


@jit
def ull2double_rd(x):
    return _convert_directed(x, tl.uint64, tl.float64, "rd", "ull2double_rd needs uint64 operands")


@jit
def ull2double_ru(x):
    return _convert_directed(x, tl.uint64, tl.float64, "ru", "ull2double_ru needs uint64 operands")


@jit
def double2float_rz(x):
    return _convert_directed(x, tl.float64, tl.float32, "rz", "double2float_rz needs float64 operands")


@jit
def double2float_rd(x):
    return _convert_directed(x, tl.float64, tl.float32, "rd", "double2float_rd needs float64 operands")


@jit
def double2float_ru(x):
    return _convert_directed(x, tl.float64, tl.float32, "ru", "double2float_ru needs float64 operands")


# mul24: the low 32 bits of the product of the low 24 bits (sign-extended for int32, as PTX mul24.lo.s32).
@jit
def mul24(x, y):
    tl.static_assert(x.dtype == y.dtype and (x.dtype == tl.int32 or x.dtype == tl.uint32),
                     "mul24 needs two int32 or two uint32 operands")
    if x.dtype == tl.int32:
        return ((x << 8) >> 8) * ((y << 8) >> 8)
    return (x & 0xFFFFFF) * (y & 0xFFFFFF)


# sad: |x - y| + z (int32, int32, uint32 -> int32; or all uint32).
@jit
def sad(x, y, z):
    tl.static_assert(x.dtype == y.dtype and (x.dtype == tl.int32 or x.dtype == tl.uint32), "sad needs int32 or uint32 operands")
    if x.dtype == tl.int32:
        d = x.to(tl.int64) - y.to(tl.int64)
        return (tl.where(d < 0, -d, d) + z.to(tl.int64)).to(tl.int32)
    return tl.where(x > y, x - y, y - x) + z.to(tl.uint32)


# byte_perm(x, y, s): byte i of the result is byte (s >> 4i) & 7 of the 8 bytes {y, x} (x the low four).
@jit
def byte_perm(x, y, s):
    tl.static_assert(x.dtype == tl.int32 and y.dtype == tl.int32 and s.dtype == tl.int32, "byte_perm needs int32 operands")
    both = (y.to(tl.uint32, bitcast=True).to(tl.uint64) << 32) | x.to(tl.uint32, bitcast=True).to(tl.uint64)
    sel = s.to(tl.uint32, bitcast=True)
    r = (both >> ((sel & 7) * 8).to(tl.uint64)) & 0xFF
    r = r | (((both >> (((sel >> 4) & 7) * 8).to(tl.uint64)) & 0xFF) << 8)
    r = r | (((both >> (((sel >> 8) & 7) * 8).to(tl.uint64)) & 0xFF) << 16)
    r = r | (((both >> (((sel >> 12) & 7) * 8).to(tl.uint64)) & 0xFF) << 24)
    return r.to(tl.uint32).to(tl.int32, bitcast=True)


@jit
def double2hiint(x):
    tl.static_assert(x.dtype == tl.float64, "double2hiint needs float64 operands")
    return (x.to(tl.uint64, bitcast=True) >> 32).to(tl.uint32).to(tl.int32, bitcast=True)


@jit
def double2loint(x):
    tl.static_assert(x.dtype == tl.float64, "double2loint needs float64 operands")
    return x.to(tl.uint64, bitcast=True).to(tl.uint32).to(tl.int32, bitcast=True)


@jit
def hiloint2double(hi, lo):
    tl.static_assert(hi.dtype == tl.int32 and lo.dtype == tl.int32, "hiloint2double needs int32 operands")
    bits = (hi.to(tl.uint32, bitcast=True).to(tl.uint64) << 32) | lo.to(tl.uint32, bitcast=True).to(tl.uint64)
    return bits.to(tl.float64, bitcast=True)


# rcp64h (PTX rcp.approx.ftz.f64): 1/x from the high 32 bits of x, the low 32 bits of the result zero.
@jit
def rcp64h(x):
    tl.static_assert(x.dtype == tl.float64, "rcp64h needs float64 operands")
    high = (x.to(tl.uint64, bitcast=True) & 0xFFFFFFFF00000000).to(tl.float64, bitcast=True)
    return ((1.0 / high).to(tl.uint64, bitcast=True) & 0xFFFFFFFF00000000).to(tl.float64, bitcast=True)


)PY";

} // namespace tessera
