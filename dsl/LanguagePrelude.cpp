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
    return first_row + (linear % rows), (linear % per_group) // rows


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
    offset = tl.to_tensor(offset)
    zero = offset * 0
    return philox(seed, offset, zero, zero, zero, n_rounds)


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
)PY";
}

} // namespace tessera
