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

#include <string>

namespace tessera {

const char *languagePreludeSource() {
  // The libdevice section is long enough for a file of its own (LanguagePreludeLibdevice.cpp);
  // the parts join in their order, so the source reads as one text.
  static const std::string source = std::string(R"PY(from tessera import jit
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


)PY") + kLanguagePreludeLibdevice + R"PY(# ------------------------------------------------------------------ dot_scaled

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
  return source.c_str();
}

} // namespace tessera
