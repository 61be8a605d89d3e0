import tessera
import tessera.language as tl


# One [BM, BN] tile of lhs @ rhs in microscaling formats, shaped like Triton's test_scaled_dot:
# lhs [BM, BK] (e2m1: [BM, BK // 2] bytes), rhs [BK, BN] (e2m1: [BK // 2, BN]), any strides;
# scales [BM, BK // 32] and [BN, BK // 32] (row-major), or None. The result is stored as bf16.
@tessera.jit
def scaled_dot_tile(lhs_ptr, stride_l0, stride_l1, lhs_scale_ptr, rhs_ptr, stride_r0, stride_r1, rhs_scale_ptr,
                    out_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, LHS_FORMAT: tl.constexpr,
                    RHS_FORMAT: tl.constexpr):
    LHS_K: tl.constexpr = BK // 2 if LHS_FORMAT == "e2m1" else BK
    RHS_K: tl.constexpr = BK // 2 if RHS_FORMAT == "e2m1" else BK
    rows = tl.arange(0, BM)
    cols = tl.arange(0, BN)
    lhs = tl.load(lhs_ptr + rows[:, None] * stride_l0 + tl.arange(0, LHS_K)[None, :] * stride_l1)
    rhs = tl.load(rhs_ptr + tl.arange(0, RHS_K)[:, None] * stride_r0 + cols[None, :] * stride_r1)
    GROUPS: tl.constexpr = BK // 32
    lhs_scale = lhs_scale_ptr
    rhs_scale = rhs_scale_ptr
    if lhs_scale_ptr is not None:
        lhs_scale = tl.load(lhs_scale_ptr + rows[:, None] * GROUPS + tl.arange(0, GROUPS)[None, :])
    if rhs_scale_ptr is not None:
        rhs_scale = tl.load(rhs_scale_ptr + cols[:, None] * GROUPS + tl.arange(0, GROUPS)[None, :])
    c = tl.dot_scaled(lhs, lhs_scale, LHS_FORMAT, rhs, rhs_scale, RHS_FORMAT)
    tl.store(out_ptr + rows[:, None] * BN + cols[None, :], c.to(tl.bfloat16))


# The general form, f32 out: both scales optional, an accumulator (ACC: c is added), the
# k_pack flags, fast_math, and 3-D (batched, B > 0) operands. Every operand is contiguous:
# lhs [B?, LM, LK], rhs [B?, RK, RN] in bytes or 16-bit words as the format stores them,
# scales [B?, M, K // 32] / [B?, N, K // 32], out [B?, M, N].
@tessera.jit
def scaled_dot_general(lhs_ptr, lhs_scale_ptr, rhs_ptr, rhs_scale_ptr, out_ptr,
                       B: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                       LHS_FORMAT: tl.constexpr, RHS_FORMAT: tl.constexpr, LHS_K_PACK: tl.constexpr,
                       RHS_K_PACK: tl.constexpr, ACC: tl.constexpr, FAST_MATH: tl.constexpr):
    LHS_PACKED: tl.constexpr = 2 if LHS_FORMAT == "e2m1" else 1
    RHS_PACKED: tl.constexpr = 2 if RHS_FORMAT == "e2m1" else 1
    LM: tl.constexpr = M if LHS_K_PACK else M // LHS_PACKED
    LK: tl.constexpr = K // LHS_PACKED if LHS_K_PACK else K
    RK: tl.constexpr = K // RHS_PACKED if RHS_K_PACK else K
    RN: tl.constexpr = N if RHS_K_PACK else N // RHS_PACKED
    G: tl.constexpr = K // 32
    lhs_scale = lhs_scale_ptr
    rhs_scale = rhs_scale_ptr
    if B == 0:
        lhs = tl.load(lhs_ptr + tl.arange(0, LM)[:, None] * LK + tl.arange(0, LK)[None, :])
        rhs = tl.load(rhs_ptr + tl.arange(0, RK)[:, None] * RN + tl.arange(0, RN)[None, :])
        if lhs_scale_ptr is not None:
            lhs_scale = tl.load(lhs_scale_ptr + tl.arange(0, M)[:, None] * G + tl.arange(0, G)[None, :])
        if rhs_scale_ptr is not None:
            rhs_scale = tl.load(rhs_scale_ptr + tl.arange(0, N)[:, None] * G + tl.arange(0, G)[None, :])
        out = out_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    else:
        bi = tl.arange(0, B)[:, None, None]
        lhs = tl.load(lhs_ptr + bi * (LM * LK) + tl.arange(0, LM)[None, :, None] * LK + tl.arange(0, LK)[None, None, :])
        rhs = tl.load(rhs_ptr + bi * (RK * RN) + tl.arange(0, RK)[None, :, None] * RN + tl.arange(0, RN)[None, None, :])
        if lhs_scale_ptr is not None:
            lhs_scale = tl.load(lhs_scale_ptr + bi * (M * G) + tl.arange(0, M)[None, :, None] * G +
                                tl.arange(0, G)[None, None, :])
        if rhs_scale_ptr is not None:
            rhs_scale = tl.load(rhs_scale_ptr + bi * (N * G) + tl.arange(0, N)[None, :, None] * G +
                                tl.arange(0, G)[None, None, :])
        out = out_ptr + bi * (M * N) + tl.arange(0, M)[None, :, None] * N + tl.arange(0, N)[None, None, :]
    if ACC:
        c = tl.dot_scaled(lhs, lhs_scale, LHS_FORMAT, rhs, rhs_scale, RHS_FORMAT, acc=tl.load(out),
                          fast_math=FAST_MATH, lhs_k_pack=LHS_K_PACK, rhs_k_pack=RHS_K_PACK)
    else:
        c = tl.dot_scaled(lhs, lhs_scale, LHS_FORMAT, rhs, rhs_scale, RHS_FORMAT, fast_math=FAST_MATH,
                          lhs_k_pack=LHS_K_PACK, rhs_k_pack=RHS_K_PACK, out_dtype=tl.float32)
    tl.store(out, c)


# A reference upcast written with plain language ops, the way Triton's test_scaled_dot checks
# tl.dot_scaled: n groups of 32 values (fp8: 32 bytes a group; e2m1: 16 bytes, two codes each,
# low nibble first) times 2^(scale - 127) per group, as TO_TYPE (bf16 or fp16), flattened.
@tessera.jit
def mx_upcast_kernel(x_ptr, scale_ptr, out_ptr, n_groups, EXP_BITS: tl.constexpr, MAN_BITS: tl.constexpr,
                     TO_TYPE: tl.constexpr, BLOCK: tl.constexpr):
    FP8: tl.constexpr = EXP_BITS + MAN_BITS == 7
    GROUPS: tl.constexpr = BLOCK // 32
    BYTES: tl.constexpr = 32 if FP8 else 16
    pid = tl.program_id(0)
    offs = pid * GROUPS * BYTES + tl.arange(0, GROUPS)[:, None] * BYTES + tl.arange(0, BYTES)[None, :]
    x = tl.load(x_ptr + offs, mask=offs < n_groups * BYTES)
    group = pid * GROUPS + tl.arange(0, GROUPS)[:, None]
    scale = tl.load(scale_ptr + group, mask=group < n_groups)
    tl.static_assert(x.dtype == tl.uint8)
    tl.static_assert(scale.dtype == tl.uint8)
    if TO_TYPE == tl.bfloat16:
        factor = (scale.to(tl.uint16) << 7).to(tl.bfloat16, bitcast=True)
    else:
        factor = (scale.to(tl.uint32) << 23).to(tl.float32, bitcast=True).to(tl.float16)
    TO_MAN: tl.constexpr = 7 if TO_TYPE == tl.bfloat16 else 10
    TO_BIAS: tl.constexpr = 127 if TO_TYPE == tl.bfloat16 else 15
    if FP8:
        if EXP_BITS == 5:
            values = x.to(tl.float8e5, bitcast=True).to(TO_TYPE)
            # infinities and NaNs kept as such (Python's precedence: & before ==)
            INF: tl.constexpr = 0x7C
            TO_INF: tl.constexpr = ((1 << (15 - TO_MAN)) - 1) << TO_MAN
            values = tl.where(x & INF == INF, (values.to(tl.uint16, bitcast=True) | TO_INF).to(TO_TYPE, bitcast=True),
                              values)
        else:
            values = x.to(tl.float8e4nv, bitcast=True).to(TO_TYPE)
    else:
        HALF: tl.constexpr = (TO_BIAS - 1) << TO_MAN
        lo = x & 0x7
        hi = x & 0x70
        v0 = (lo.to(tl.uint16) << (TO_MAN - 1)) | ((x & 0x8).to(tl.uint16) << 12)
        v1 = (hi.to(tl.uint16) << (TO_MAN - 5)) | ((x & 0x80).to(tl.uint16) << 8)
        v0 = tl.where((lo & 0x6) != 0, v0 + HALF, v0)
        v1 = tl.where((hi & 0x60) != 0, v1 + HALF, v1)
        v0 = tl.where(lo == 0x1, HALF | (v0 & 0x8000), v0)
        v1 = tl.where(hi == 0x10, HALF | (v1 & 0x8000), v1)
        values = tl.interleave(v0, v1).to(TO_TYPE, bitcast=True)
    scaled = tl.where(scale == 0xFF, float("nan"), values * factor)
    out = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + out, tl.ravel(scaled), mask=out < n_groups * 32)


# Bad calls, one per CASE (tests/python/test_dot_scaled.py::test_scaled_dot_errors).
@tessera.jit
def bad_scaled_dot(x_ptr, out_ptr, CASE: tl.constexpr):
    i = tl.arange(0, 32)
    x = tl.load(x_ptr + i[:, None] * 32 + i[None, :])  # [32, 32] bytes
    s2 = tl.load(x_ptr + i[:, None] * 2 + tl.arange(0, 2)[None, :])  # [32, 2] scales
    c = tl.zeros((32, 32), tl.float32)
    if CASE == "format":
        c = tl.dot_scaled(x, s2, "e9m9", x, None, "e4m3")
    elif CASE == "format_nyi":
        c = tl.dot_scaled(x, None, "e2m3", x, None, "e4m3")
    elif CASE == "format_not_string":
        c = tl.dot_scaled(x, None, "e4m3", x, None, tl.float8e5)
    elif CASE == "e2m1_not_uint8":
        c = tl.dot_scaled(x.to(tl.int8, bitcast=True), None, "e2m1", x, None, "e4m3")
    elif CASE == "fp8_dtype":
        c = tl.dot_scaled(x, None, "e4m3", x.to(tl.float16), None, "e5m2")
    elif CASE == "k_pack":
        c = tl.dot_scaled(x, None, "e4m3", x, None, "e4m3", lhs_k_pack=False)
    elif CASE == "k_mismatch":
        c = tl.dot_scaled(x, None, "e2m1", x, None, "e4m3")
    elif CASE == "rank":
        c = tl.dot_scaled(tl.load(x_ptr + i), None, "e4m3", x, None, "e4m3")
    elif CASE == "scale_shape":
        s4 = tl.load(x_ptr + i[:, None] * 4 + tl.arange(0, 4)[None, :])
        c = tl.dot_scaled(x, s4, "e4m3", x, None, "e4m3")
    elif CASE == "scale_dtype":
        c = tl.dot_scaled(x, None, "e4m3", x, s2.to(tl.int8), "e4m3")
    elif CASE == "scale_k":
        x16 = tl.load(x_ptr + i[:, None] * 16 + tl.arange(0, 16)[None, :])
        c = tl.dot_scaled(x16, s2, "e4m3", tl.load(x_ptr + tl.arange(0, 16)[:, None] * 32 + i[None, :]), None, "e4m3")
    elif CASE == "acc":
        c = tl.dot_scaled(x, None, "e4m3", x, None, "e4m3", acc=c.to(tl.float16))
    elif CASE == "out_dtype":
        c = tl.dot_scaled(x, None, "e4m3", x, None, "e4m3", out_dtype=tl.float16)
    elif CASE == "batch":
        x2 = tl.broadcast_to(x[None, :, :], (2, 32, 32))
        x4 = tl.broadcast_to(x[None, :, :], (4, 32, 32))
        c = tl.sum(tl.dot_scaled(x2, None, "e4m3", x4, None, "e4m3"), 0)
    tl.store(out_ptr + i[:, None] * 32 + i[None, :], c)


# A microscaled GEMM: c[M, N] = (a * 2^(a_scale - 127)) @ b, a in e2m1 ([M, K // 2] bytes) or
# e4m3 ([M, K] bytes) with scales [M, K // 32], b bf16 [K, N]; tiles of BM x BN, a K loop of BK
# (a multiple of 64) accumulating through dot_scaled's acc. M, N, K multiples of the blocks.
@tessera.jit
def scaled_matmul_kernel(a_ptr, a_scale_ptr, b_ptr, c_ptr, M, N, K, A_FORMAT: tl.constexpr,
                         BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    PACK: tl.constexpr = 2 if A_FORMAT == "e2m1" else 1
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * (K // PACK) + (k // PACK + tl.arange(0, BK // PACK))[None, :])
        s = tl.load(a_scale_ptr + rm[:, None] * (K // 32) + (k // 32 + tl.arange(0, BK // 32))[None, :])
        b = tl.load(b_ptr + (k + tl.arange(0, BK))[:, None] * N + rn[None, :])
        acc = tl.dot_scaled(a, s, A_FORMAT, b, None, "bf16", acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)
