// The language prelude's source (see LanguagePrelude.h).
//
// Random numbers are counter-based Philox-4x32-10 / 4x64-10 (Salmon et al.,
// "Parallel Random Numbers: As Easy as 1, 2, 3", SC'11), with the same
// conventions as Triton's tl.rand family so that a seed and offsets give the
// same numbers: the seed is the key (low word, high word), the offset is the
// first counter word and the other three are zero; uniform floats fold the
// sign of the signed reinterpretation and scale by 2^-31 (2^-63 for 64-bit
// words), normals come from Box-Muller on two uniforms.
#include "dsl/LanguagePrelude.h"

namespace tessera {

const char *languagePreludeSource() {
  return R"PY(from tessera import jit
import tessera.language as tl

PHILOX_ROUNDS = 10


# ------------------------------------------------------ bitonic merge and top-k
# Triton's standard.py algorithms on the hypercube view of a block ([2] * log2(numel)): merging
# compares and swaps across one hypercube axis at a time (the partner of an element is its xor
# across that axis, taken as an xor_sum of the bits), so that tl.bitonic_merge of any input gives
# Triton's exact result, and tl.topk is a sort followed by the top-k halving steps.


@jit
def _bitonic_indicator(n_dims: tl.constexpr, j: tl.constexpr):
    return tl.reshape(tl.arange(0, 2), [1] * (n_dims - j - 1) + [2] + [1] * j)


@jit
def _bitonic_compare_and_swap(x, flip, i: tl.constexpr):
    n_dims: tl.constexpr = tl._log2(x.numel)
    idtype: tl.constexpr = tl.core.get_int_dtype(x.dtype.primitive_bitwidth, True)
    ix = x.to(idtype, bitcast=True)
    iy = ix ^ tl.xor_sum(ix, n_dims - 1 - i, True)
    y = iy.to(x.dtype, bitcast=True)
    is_right = _bitonic_indicator(n_dims, i)
    return tl.where((x > y) != (flip ^ is_right), y, x)


@jit
def _bitonic_merge_hypercube(x, stage: tl.constexpr, order: tl.constexpr):
    # order 0: ascending, 1: descending, 2: alternating with a stride of 2**stage
    if order == 2:
        flip = _bitonic_indicator(tl._log2(x.numel), stage)
    else:
        flip = order
    for i in tl.static_range(stage):
        x = _bitonic_compare_and_swap(x, flip, stage - 1 - i)
    return x


@jit
def bitonic_merge(x, dim: tl.constexpr = None, descending: tl.constexpr = 0):
    _dim: tl.constexpr = len(x.shape) - 1 if dim is None else dim
    tl.static_assert(_dim == len(x.shape) - 1, "only minor dimension is currently supported")
    n_dims: tl.constexpr = tl._log2(x.shape[-1])
    h = tl.reshape(x, [2] * tl._log2(x.numel))
    h = _bitonic_merge_hypercube(h, n_dims, descending)
    return tl.reshape(h, x.shape)


@jit
def topk(x, k: tl.constexpr, dim: tl.constexpr = None):
    _dim: tl.constexpr = len(x.shape) - 1 if dim is None else dim
    tl.static_assert(_dim == len(x.shape) - 1, "only minor dimension is currently supported")
    log_n: tl.constexpr = tl._log2(x.shape[_dim])
    log_k: tl.constexpr = tl._log2(k)
    h = tl.reshape(x, [2] * tl._log2(x.numel) if tl._log2(x.numel) else [1])
    for i in tl.static_range(1, log_k + 1):
        h = _bitonic_merge_hypercube(h, i, 2 if i < log_n else 1)
    for i in tl.static_range(log_k + 1, log_n + 1):
        h = tl.max(h, axis=tl._log2(h.numel) - 1 - log_k)
        h = _bitonic_merge_hypercube(h, log_k, 2 if i < log_n else 1)
    return tl.reshape(h, x.shape[:-1] + [2 ** log_k])


# ------------------------------------------------------ reductions' combine functions

@jit
def _sum_combine(a, b):
    return a + b


@jit
def _prod_combine(a, b):
    return a * b


@jit
def _xor_combine(a, b):
    return a ^ b


@jit
def _or_combine(a, b):
    return a | b


# (value, index) pairs: keep the larger (smaller) value; on equal values the
# "left" variants keep the lower index, the "fast" ones whichever came second.
@jit
def _argmax_combine_tie_break_left(v1, i1, v2, i2):
    keep_first = (v1 > v2) | ((v1 == v2) & (i1 < i2))
    return tl.where(keep_first, v1, v2), tl.where(keep_first, i1, i2)


@jit
def _argmax_combine_tie_break_fast(v1, i1, v2, i2):
    keep_first = v1 > v2
    return tl.where(keep_first, v1, v2), tl.where(keep_first, i1, i2)


@jit
def _argmin_combine_tie_break_left(v1, i1, v2, i2):
    keep_first = (v1 < v2) | ((v1 == v2) & (i1 < i2))
    return tl.where(keep_first, v1, v2), tl.where(keep_first, i1, i2)


@jit
def _argmin_combine_tie_break_fast(v1, i1, v2, i2):
    keep_first = v1 < v2
    return tl.where(keep_first, v1, v2), tl.where(keep_first, i1, i2)


# ------------------------------------------------------------------ math

@jit
def sigmoid(x):
    return 1.0 / (1.0 + tl.exp(-x))


@jit
def softmax(x, dim: tl.constexpr, ieee_rounding=False):
    exps = tl.exp(x - tl.max(x, dim, keep_dims=True))
    return tl.fdiv(exps, tl.sum(exps, dim, keep_dims=True), ieee_rounding)


# Row-major (i, j) of a size_i x size_j grid renumbered so that groups of
# size_g rows are walked column by column (better L2 reuse for tiled GEMMs).
@jit
def swizzle2d(i, j, size_i, size_j, size_g):
    linear = i * size_j + j
    per_group = size_g * size_j
    first_row = (linear // per_group) * size_g
    rows = tl.minimum(size_i - first_row, size_g)
    # the row within the group comes from the index within the group: the last group may have fewer
    # rows, and per_group need not be a multiple of them
    in_group = linear % per_group
    return first_row + in_group % rows, in_group // rows


# ------------------------------------------------------------------ libdevice
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


# ------------------------------------------------------------------ dot_scaled

# tl.dot_scaled, called by dsl/BuiltinsDotScaled.cpp with checked arguments (formats as
# strings; e2m1 as packed uint8, the other formats bitcast to their float type). As Triton
# does where the tensor cores have no microscaled formats: each operand is upcast to bf16
# (fp16 when a format is fp16) and multiplied by its scales, then one tl.dot accumulates
# in f32 (the bf16/fp16 tensor-core dot).
@jit
def dot_scaled(lhs, lhs_scale, lhs_format: tl.constexpr, lhs_k_pack: tl.constexpr, rhs, rhs_scale,
               rhs_format: tl.constexpr, rhs_k_pack: tl.constexpr, acc, fast_math: tl.constexpr):
    if lhs_format == "fp16" or rhs_format == "fp16":
        compute: tl.constexpr = tl.float16
    else:
        compute: tl.constexpr = tl.bfloat16
    rank: tl.constexpr = len(lhs.shape)
    row: tl.constexpr = rank - 2  # lhs [..., M, K] @ rhs [..., K, N]: K is the lhs' col, the rhs' row
    col: tl.constexpr = rank - 1
    a = _mx_operand(lhs, lhs_scale, lhs_format, col if lhs_k_pack else row, col, compute, fast_math)
    if rhs_scale is not None:  # given [..., N, K // 32] (Triton's layout): made [..., K // 32, N]
        if rank == 2:
            rhs_scale = tl.trans(rhs_scale)
        else:
            rhs_scale = tl.permute(rhs_scale, (0, 2, 1))
    b = _mx_operand(rhs, rhs_scale, rhs_format, row if rhs_k_pack else col, row, compute, fast_math)
    if acc is None:
        return tl.dot(a, b)
    return tl.dot(a, b, acc)


# One operand in `compute`: e2m1 unpacked along pack_axis, the other formats converted
# (exactly, but bf16 to fp16), times its scales (one per 32 elements along k_axis, laid out
# like the operand with K // 32 along k_axis); a scale of 0xFF (NaN) makes its values NaN,
# unless fast_math (then it is infinity, as Triton's).
@jit
def _mx_operand(x, scale, format: tl.constexpr, pack_axis: tl.constexpr, k_axis: tl.constexpr,
                compute: tl.constexpr, fast_math: tl.constexpr):
    if format == "e2m1":
        x = _e2m1_unpack(x, pack_axis, compute)
    else:
        x = x.to(compute)
    if scale is not None:
        factor = _e8m0_to_float(scale, compute)
        if not fast_math:
            factor = tl.where(scale == 0xFF, float("nan"), factor)
        # spread along K after the conversion: the [.., K] block only holds the factors
        x = x * tl.gather(factor, _coordinate(x.shape, k_axis) >> 5, k_axis)  # k // 32
    return x


# Each element's index along `axis` in a block of `shape` (rank 2 or 3).
@jit
def _coordinate(shape, axis: tl.constexpr):
    i = tl.arange(0, shape[axis])
    if len(shape) == 2:
        if axis == 0:
            i = i[:, None]
        else:
            i = i[None, :]
    else:
        if axis == 0:
            i = i[:, None, None]
        elif axis == 1:
            i = i[None, :, None]
        else:
            i = i[None, None, :]
    return tl.broadcast_to(i, shape)


# Bytes holding two e2m1 codes each along `axis` (the even index in the low nibble) to a
# block twice as long along it, of the codes' values in `compute`.
@jit
def _e2m1_unpack(x, axis: tl.constexpr, compute: tl.constexpr):
    shape: tl.constexpr = x.shape[:axis] + (2 * x.shape[axis],) + x.shape[axis + 1:]
    i = _coordinate(shape, axis)
    byte = tl.gather(x, i >> 1, axis)
    return _e2m1_to_float(tl.where((i & 1) == 0, byte & 0xF, byte >> 4), compute)


# An e2m1 code s.ee.m (values 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives), made
# exactly from its bits: the exponent rebiased, 0.5 (the one subnormal) spelled out.
@jit
def _e2m1_to_float(code, compute: tl.constexpr):
    if compute == tl.bfloat16:
        MANTISSA: tl.constexpr = 7
        BIAS: tl.constexpr = 127
    else:
        MANTISSA: tl.constexpr = 10
        BIAS: tl.constexpr = 15
    HALF: tl.constexpr = (BIAS - 1) << MANTISSA
    em = (code & 0x7).to(tl.uint16)
    magnitude = tl.where(em >= 2, (em << (MANTISSA - 1)) + HALF, em * HALF)
    sign = (code & 0x8).to(tl.uint16) << 12
    return (magnitude | sign).to(compute, bitcast=True)


# An e8m0 scale s to 2^(s - 127) in `compute`, from the bits as Triton builds it: s is
# bf16's exponent field (fp16's range is too small: through fp32, rounded). s = 0 gives 0,
# s = 255 infinity.
@jit
def _e8m0_to_float(s, compute: tl.constexpr):
    if compute == tl.bfloat16:
        return (s.to(tl.uint16) << 7).to(tl.bfloat16, bitcast=True)
    else:
        return (s.to(tl.uint32) << 23).to(tl.float32, bitcast=True).to(tl.float16)


# ------------------------------------------------------------------ random

# One Philox round: the multiply-high halves of two counter words, mixed
# with the other two words and the key, become the new counter; the key
# then advances by the Weyl increments.
@jit
def _philox_rounds(c0, c1, c2, c3, k0, k1, n_rounds: tl.constexpr):
    if c0.dtype == tl.uint32:
        MUL_A: tl.constexpr = 0xD2511F53
        MUL_B: tl.constexpr = 0xCD9E8D57
        WEYL_A: tl.constexpr = 0x9E3779B9
        WEYL_B: tl.constexpr = 0xBB67AE85
    else:
        MUL_A: tl.constexpr = 0xD2E7470EE14C6C93
        MUL_B: tl.constexpr = 0xCA5A826395121157
        WEYL_A: tl.constexpr = 0x9E3779B97F4A7C15
        WEYL_B: tl.constexpr = 0xBB67AE8584CAA73B
    for r in tl.static_range(n_rounds):
        hi_a = tl.umulhi(MUL_A, c0)
        lo_a = MUL_A * c0
        hi_b = tl.umulhi(MUL_B, c2)
        lo_b = MUL_B * c2
        c0, c1, c2, c3 = hi_b ^ c1 ^ k0, lo_b, hi_a ^ c3 ^ k1, lo_a
        k0 = k0 + WEYL_A
        k1 = k1 + WEYL_B
    return c0, c1, c2, c3


@jit
def philox(seed, c0, c1, c2, c3, n_rounds: tl.constexpr = PHILOX_ROUNDS):
    seed = tl.to_tensor(seed)
    tl.static_assert(seed.dtype.is_int(), "the seed of a random function must be an integer")
    seed = seed.to(tl.uint64)
    if tl.constexpr(c0.dtype.primitive_bitwidth) == 32:
        word = tl.uint32
        key_lo = (seed & 0xFFFFFFFF).to(tl.uint32)
        key_hi = (seed >> 32).to(tl.uint32)
    else:
        tl.static_assert(tl.constexpr(c0.dtype.primitive_bitwidth) == 64,
                         "random offsets must be 32- or 64-bit integers")
        word = tl.uint64
        key_lo = seed
        key_hi = seed * 0
    return _philox_rounds(c0.to(word, bitcast=True), c1.to(word, bitcast=True), c2.to(word, bitcast=True),
                          c3.to(word, bitcast=True), key_lo, key_hi, n_rounds)


@jit
def randint4x(seed, offset, n_rounds: tl.constexpr = PHILOX_ROUNDS):
    # Triton 3.6: always the 32-bit generator; a 64-bit offset is split into the first two counter words
    offset = tl.to_tensor(offset)
    offset_lo = offset.to(tl.uint32)
    zero = offset_lo * 0
    if tl.constexpr(offset.dtype.primitive_bitwidth) > 32:
        offset_hi = (offset >> 32).to(tl.uint32)
    else:
        offset_hi = zero
    return philox(seed, offset_lo, offset_hi, zero, zero, n_rounds)


@jit
def randint(seed, offset, n_rounds: tl.constexpr = PHILOX_ROUNDS):
    first, _, _, _ = randint4x(seed, offset, n_rounds)
    return first


# Uniform in [0, 1): the word read as signed, negatives folded onto
# non-negatives (-x - 1), scaled by 2^-31 (2^-63 for 64-bit words).
@jit
def uint_to_uniform_float(x):
    if tl.constexpr(x.dtype.primitive_bitwidth) == 32:
        signed = x.to(tl.int32, bitcast=True)
        scale = 4.6566127342e-10
    else:
        tl.static_assert(tl.constexpr(x.dtype.primitive_bitwidth) == 64, "expected 32- or 64-bit random words")
        signed = x.to(tl.int64, bitcast=True)
        scale = 1.0842020432385337e-19
    folded = tl.where(signed < 0, -signed - 1, signed)
    return folded * scale


@jit
def rand(seed, offset, n_rounds: tl.constexpr = PHILOX_ROUNDS):
    return uint_to_uniform_float(randint(seed, offset, n_rounds))


@jit
def rand4x(seed, offsets, n_rounds: tl.constexpr = PHILOX_ROUNDS):
    w0, w1, w2, w3 = randint4x(seed, offsets, n_rounds)
    return (uint_to_uniform_float(w0), uint_to_uniform_float(w1), uint_to_uniform_float(w2),
            uint_to_uniform_float(w3))


# Box-Muller: two uniforms (the first kept away from 0) to two normals.
@jit
def pair_uniform_to_normal(u1, u2):
    radius = tl.sqrt(-2.0 * tl.log(tl.maximum(1.0e-7, u1)))
    angle = 6.283185307179586 * u2
    return radius * tl.cos(angle), radius * tl.sin(angle)


@jit
def randn(seed, offset, n_rounds: tl.constexpr = PHILOX_ROUNDS):
    w0, w1, _, _ = randint4x(seed, offset, n_rounds)
    normal, _ = pair_uniform_to_normal(uint_to_uniform_float(w0), uint_to_uniform_float(w1))
    return normal


@jit
def randn4x(seed, offset, n_rounds: tl.constexpr = PHILOX_ROUNDS):
    u0, u1, u2, u3 = rand4x(seed, offset, n_rounds)
    n0, n1 = pair_uniform_to_normal(u0, u1)
    n2, n3 = pair_uniform_to_normal(u2, u3)
    return n0, n1, n2, n3


# tl.philox_impl (random.py): rounds of Philox on counters (c0..c3, all uint32 or all uint64) with the key
# (k0, k1), which Triton's arithmetic brings into the counters' type.
@jit
def philox_impl(c0, c1, c2, c3, k0, k1, n_rounds: tl.constexpr = PHILOX_ROUNDS):
    tl.static_assert(c0.dtype == tl.uint32 or c0.dtype == tl.uint64, "dtype not supported in philox_impl")
    k0 = tl.to_tensor(k0).to(c0.dtype)
    k1 = tl.to_tensor(k1).to(c0.dtype)
    return _philox_rounds(c0, c1.to(c0.dtype), c2.to(c0.dtype), c3.to(c0.dtype), k0, k1, n_rounds)


# tl.add / tl.sub / tl.mul (core.py): the operators; sanitize_overflow only adds checks under debug,
# which tessera's debug mode does not make for these.
@jit
def add(x, y, sanitize_overflow: tl.constexpr = True):
    return x + y


@jit
def sub(x, y, sanitize_overflow: tl.constexpr = True):
    return x - y


@jit
def mul(x, y, sanitize_overflow: tl.constexpr = True):
    return x * y
)PY";
}

} // namespace tessera
