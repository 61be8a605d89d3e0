"""Attention, FlashAttention-style: softmax(sm_scale * Q @ K^T) @ V, forward and
backward, without ever forming the N x N score matrix (docs/attention.md).

Tensors are batch x heads x seq x head_dim with arbitrary strides (every
stride is an argument), so (B, H, N, D) and (B, N, H, D) storage both work.
Q has H heads, K and V have H_KV (grouped-query attention: H % H_KV == 0,
query head h reads key/value head h // (H // H_KV)). Q may have N_Q rows and
K/V N_KV rows. Inputs fp16 or bf16; every dot accumulates in fp32.

Forward (attn_fwd_kernel): one program per BLOCK_M query rows of one (batch,
head). It sweeps the keys BLOCK_N at a time keeping, per row, the running
maximum m of the scores (in log2 units: the scale is folded with log2(e) so
exp2 replaces exp), the running sum l of exp2(score - m) and the
un-normalised output acc; when the maximum grows, l and acc are rescaled by
exp2(m_old - m_new). At the end O = acc / l and LSE = (m + log2 l) * ln 2,
the natural log-sum-exp of the row's scaled scores, which the backward pass
uses to recompute the probabilities. Causal (query i sees keys j <= i, the
top-left alignment of torch's is_causal): blocks left of the diagonal need
no mask, the diagonal blocks are masked, blocks right of it are skipped.

Backward: attn_bwd_preprocess_kernel computes delta_i = sum_d dO[i,d] O[i,d];
attn_bwd_dkdv_kernel owns BLOCK_N keys of one (batch, K/V head) and loops over
the query heads of its group and their query blocks, accumulating dK and dV
in registers (no atomics, GQA's sum over the group included);
attn_bwd_dq_kernel owns BLOCK_M queries and loops over key blocks. With
P = exp2(S * log2 e - LSE * log2 e), dP = dO V^T, dS = P * (dP - delta):
dV = P^T dO, dK = sm_scale dS^T Q, dQ = sm_scale dS K.

LSE and delta are fp32 arrays [B, H, N_Q], contiguous.
"""
import tessera
import tessera.language as tl

LOG2E = tl.constexpr(1.4426950408889634)
LN2 = tl.constexpr(0.6931471805599453)


@tessera.jit
def _online_softmax(s, m_i, l_i, keep, qk_scale, MASKED: tl.constexpr, SHIFT: tl.constexpr = 0.0):
    """One key block of the online softmax: s the raw scores Q K^T, masked by keep when
    MASKED; returns the block's exp2(s * qk_scale - m) in fp32, the factor alpha =
    exp2(m_old - m_new) that rescales what came before, and the new row maximum (log2
    units) and sum. The maximum is taken over the raw scores and scaled after (qk_scale > 0),
    so scaling and subtracting the maximum are one fused multiply-add per score. SHIFT: P (and
    the sum) scaled by 2^SHIFT (the fp8 forward's P_SHIFT)."""
    if MASKED:
        s = tl.where(keep, s, -float("inf"))
    m_new = tl.maximum(m_i, tl.max(s, axis=1) * qk_scale)
    # Guard rows that have seen no key yet (m = -inf): exp2(-inf - -inf) would be NaN.
    m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)
    bias = m_safe
    if SHIFT != 0.0:
        bias = m_safe - SHIFT
    p = tl.exp2(s * qk_scale - bias[:, None])
    alpha = tl.exp2(m_i - m_safe)
    return p, alpha, m_new, l_i * alpha + tl.sum(p, axis=1)


@tessera.jit
def _load_keys(ptrs, ok, MASKED: tl.constexpr):
    """A K or V block; where ok is false it reads zeros when MASKED (without, every key
    lies inside N_KV and the load has no predicate)."""
    if MASKED:
        block = tl.load(ptrs, mask=ok, other=0.0)
    else:
        block = tl.load(ptrs)
    return block


@tessera.jit
def _fwd_block_sweep(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_kd, stride_vn, stride_vd,
                     offs_m, offs_d, lo, hi, N_KV, qk_scale,
                     BLOCK_N: tl.constexpr, MASK_KEYS: tl.constexpr, DIAGONAL: tl.constexpr,
                     PINGPONG: tl.constexpr = False, TMA: tl.constexpr = False, kv_row0=0,
                     WARP_SPECIALIZE: tl.constexpr = False):
    """Keys lo..hi into the running (acc, l_i, m_i) of the rows offs_m. MASK_KEYS: hi may be
    ragged (keys >= N_KV masked); without it every block lies inside N_KV and the step has no
    mask at all. DIAGONAL masks keys after the row too. PINGPONG (8 warps: two warpgroups of 64
    rows): the warpgroups take turns to issue their dots (tl.pingpong_wait / pass), so that one's
    softmax runs while the other's dots keep the tensor cores busy (FlashAttention-3). TMA:
    k_base and v_base are tensor descriptors over the (rows, HEAD_DIM) view of K and V, this
    head's keys from row kv_row0 on, read through the TMA unit (every block inside N_KV).
    WARP_SPECIALIZE (with TMA): a producer warpgroup issues the copies (docs/tma.md; the kernel's
    first such loop)."""
    offs_nb = tl.arange(0, BLOCK_N)
    for start_n in tl.range(lo, hi, BLOCK_N, warp_specialize=WARP_SPECIALIZE):
        offs_n = start_n + offs_nb
        key_ok = offs_n < N_KV
        if TMA:
            kt = tl.trans(k_base.load([kv_row0 + start_n, 0]))
        else:
            # K^T as a [HEAD_DIM, BLOCK_N] block straight from its strides: no transpose.
            kt_ptrs = k_base + offs_d[:, None] * stride_kd + offs_n[None, :] * stride_kn
            kt = _load_keys(kt_ptrs, key_ok[None, :], MASK_KEYS)
        if PINGPONG:
            tl.pingpong_wait()
        s = tl.dot(q, kt)
        if PINGPONG:
            tl.pingpong_pass()
        keep = key_ok[None, :]
        if DIAGONAL:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        p, alpha, m_i, l_i = _online_softmax(s, m_i, l_i, keep, qk_scale, MASK_KEYS or DIAGONAL)
        if TMA:
            v = v_base.load([kv_row0 + start_n, 0])
        else:
            v_ptrs = v_base + offs_n[:, None] * stride_vn + offs_d[None, :] * stride_vd
            v = _load_keys(v_ptrs, key_ok[:, None], MASK_KEYS)
        acc = acc * alpha[:, None]
        p = p.to(v.dtype)
        if PINGPONG:
            tl.pingpong_wait()
        acc += tl.dot(p, v)
        if PINGPONG:
            tl.pingpong_pass()
    return acc, l_i, m_i


@tessera.jit
def _fwd_block_sweep_overlapped(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_kd, stride_vn, stride_vd,
                                offs_m, offs_d, lo, hi, N_KV, qk_scale,
                                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, MASK_KEYS: tl.constexpr,
                                DIAGONAL: tl.constexpr, TMA: tl.constexpr = False, kv_row0=0):
    """_fwd_block_sweep with the two dots of a step in flight together (FlashAttention-3's
    intra-warpgroup overlap): step j issues S_j = Q K_j^T and then P_{j-1} V_{j-1} before it
    reads S_j, so on wgmma the softmax of block j runs while the tensor cores do P_{j-1} V_{j-1}
    (compiler/passes/DeferWgmmaWaits.h). P_{j-1} is carried in registers; the first step's
    P is zeros, and the last block's P V follows the loop. TMA: as in _fwd_block_sweep."""
    offs_nb = tl.arange(0, BLOCK_N)
    p = tl.zeros([BLOCK_M, BLOCK_N], q.dtype)
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + offs_nb
        key_ok = offs_n < N_KV
        # The block before (the first step's P is zeros: any in-range block will do).
        start_p = tl.maximum(start_n - BLOCK_N, lo)
        if TMA:
            kt = tl.trans(k_base.load([kv_row0 + start_n, 0]))
        else:
            kt_ptrs = k_base + offs_d[:, None] * stride_kd + offs_n[None, :] * stride_kn
            kt = _load_keys(kt_ptrs, key_ok[None, :], MASK_KEYS)
        s = tl.dot(q, kt)
        if TMA:
            v = v_base.load([kv_row0 + start_p, 0])
        else:
            offs_p = start_p + offs_nb
            v_ptrs = v_base + offs_p[:, None] * stride_vn + offs_d[None, :] * stride_vd
            v = _load_keys(v_ptrs, (offs_p < N_KV)[:, None], MASK_KEYS)
        acc = tl.dot(p, v, acc)
        keep = key_ok[None, :]
        if DIAGONAL:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        p32, alpha, m_i, l_i = _online_softmax(s, m_i, l_i, keep, qk_scale, MASK_KEYS or DIAGONAL)
        acc = acc * alpha[:, None]
        p = p32.to(q.dtype)
    start_p = lo + tl.maximum(hi - 1 - lo, 0) // BLOCK_N * BLOCK_N
    if TMA:
        # An empty sweep (lo == hi) reads no block: its P is zeros, but V beyond this head's
        # keys need not be finite.
        if hi > lo:
            acc = tl.dot(p, v_base.load([kv_row0 + start_p, 0]), acc)
    else:
        offs_p = start_p + offs_nb
        v = _load_keys(v_base + offs_p[:, None] * stride_vn + offs_d[None, :] * stride_vd,
                       (offs_p < N_KV)[:, None], True)
        acc = tl.dot(p, v, acc)
    return acc, l_i, m_i


@tessera.jit
def _query_block(Q, K, V, O, stride_qb, stride_qh, stride_qn, stride_qd, stride_kb, stride_kh, stride_vb, stride_vh,
                 stride_ob, stride_oh, H, H_KV, N_Q, N_KV, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                 CAUSAL: tl.constexpr, TMA: tl.constexpr):
    """The forward's query block of this program (grid (cdiv(N_Q, BLOCK_M), B * H); causal: the last
    blocks first): its (batch, head) row, batch, K/V head, K and V bases (TMA: the descriptors, and
    the first row of this (batch, K/V head) in their (B * H_KV * N_KV, HEAD_DIM) view), O's base,
    first row, row and head-dim offsets, which rows exist, and its Q."""
    pid_m = tl.program_id(0)
    if CAUSAL:
        pid_m = tl.num_programs(0) - 1 - pid_m
    off_bh = tl.program_id(1)
    off_b = (off_bh // H).to(tl.int64)
    off_h = (off_bh % H).to(tl.int64)
    off_hkv = off_h // (H // H_KV)
    q_base = Q + off_b * stride_qb + off_h * stride_qh
    if TMA:
        k_base = K
        v_base = V
        kv_row0 = ((off_b * H_KV + off_hkv) * N_KV).to(tl.int32)
    else:
        k_base = K + off_b * stride_kb + off_hkv * stride_kh
        v_base = V + off_b * stride_vb + off_hkv * stride_vh
        kv_row0 = 0
    o_base = O + off_b * stride_ob + off_h * stride_oh

    start_m = pid_m * BLOCK_M
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    row_ok = offs_m < N_Q
    q = tl.load(q_base + offs_m[:, None] * stride_qn + offs_d[None, :] * stride_qd,
                mask=row_ok[:, None], other=0.0)
    return off_bh, off_b, off_hkv, k_base, v_base, kv_row0, o_base, start_m, offs_m, offs_d, row_ok, q


@tessera.jit
def _key_bounds(start_m, N_KV, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    """(hi_free, hi): key blocks below hi_free lie wholly inside N_KV (and, causal, wholly left of the
    diagonal: every key <= every row) and need no mask; those up to hi (the ragged last block, the
    diagonal ones) do; nothing to their right."""
    if CAUSAL:
        hi_free = tl.minimum(start_m // BLOCK_N * BLOCK_N, N_KV // BLOCK_N * BLOCK_N)
        hi = tl.minimum(start_m + BLOCK_M, N_KV)
    else:
        hi_free = N_KV // BLOCK_N * BLOCK_N
        hi = N_KV
    return hi_free, hi


@tessera.jit
def attn_fwd_kernel(Q, K, V, O, LSE,
                    stride_qb, stride_qh, stride_qn, stride_qd,
                    stride_kb, stride_kh, stride_kn, stride_kd,
                    stride_vb, stride_vh, stride_vn, stride_vd,
                    stride_ob, stride_oh, stride_on, stride_od,
                    H, H_KV, N_Q, N_KV, sm_scale,
                    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    CAUSAL: tl.constexpr, OVERLAP: tl.constexpr = False, PINGPONG: tl.constexpr = False,
                    TMA: tl.constexpr = False, WARP_SPECIALIZE: tl.constexpr = False):
    """Grid: (cdiv(N_Q, BLOCK_M), B * H). Causal: the last query blocks (the most keys to
    sweep) run first, so the short ones fill the tail. OVERLAP and PINGPONG: see the sweeps.
    TMA (Hopper): K and V are tensor descriptors over their (B * H_KV * N_KV, HEAD_DIM) view
    (contiguous heads), blocks [BLOCK_N, HEAD_DIM], N_KV a multiple of BLOCK_N; the K/V strides
    are then unused. WARP_SPECIALIZE (TMA, not OVERLAP): the unmasked sweep's copies come from a
    producer warpgroup, launched as 4 more warps (docs/tma.md)."""
    tl.static_assert(not (OVERLAP and PINGPONG), "OVERLAP and PINGPONG are two schedules: pick one")
    off_bh, off_b, off_hkv, k_base, v_base, kv_row0, o_base, start_m, offs_m, offs_d, row_ok, q = _query_block(
        Q, K, V, O, stride_qb, stride_qh, stride_qn, stride_qd, stride_kb, stride_kh, stride_vb, stride_vh,
        stride_ob, stride_oh, H, H_KV, N_Q, N_KV, HEAD_DIM, BLOCK_M, CAUSAL, TMA)

    qk_scale = sm_scale * LOG2E
    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    hi_free, hi = _key_bounds(start_m, N_KV, BLOCK_M, BLOCK_N, CAUSAL)
    if OVERLAP:
        acc, l_i, m_i = _fwd_block_sweep_overlapped(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_kd,
                                                    stride_vn, stride_vd, offs_m, offs_d, 0, hi_free, N_KV,
                                                    qk_scale, BLOCK_M, BLOCK_N, False, False, TMA, kv_row0)
        acc, l_i, m_i = _fwd_block_sweep_overlapped(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_kd,
                                                    stride_vn, stride_vd, offs_m, offs_d, hi_free, hi, N_KV,
                                                    qk_scale, BLOCK_M, BLOCK_N, True, CAUSAL, TMA, kv_row0)
    else:
        if PINGPONG:
            tl.pingpong_start()
        acc, l_i, m_i = _fwd_block_sweep(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_kd,
                                         stride_vn, stride_vd, offs_m, offs_d, 0, hi_free, N_KV, qk_scale,
                                         BLOCK_N, False, False, PINGPONG, TMA, kv_row0, WARP_SPECIALIZE)
        # The blocks the diagonal crosses (causal) or the ragged last one; nothing to their right.
        acc, l_i, m_i = _fwd_block_sweep(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_kd,
                                         stride_vn, stride_vd, offs_m, offs_d, hi_free, hi, N_KV, qk_scale,
                                         BLOCK_N, True, CAUSAL, PINGPONG, TMA, kv_row0)
        if PINGPONG:
            tl.pingpong_end()

    inv_l = 1.0 / l_i
    out = acc * inv_l[:, None]
    tl.store(o_base + offs_m[:, None] * stride_on + offs_d[None, :] * stride_od,
             out.to(O.dtype.element_ty), mask=row_ok[:, None])
    lse = (m_i + tl.log2(l_i)) * LN2
    tl.store(LSE + off_bh.to(tl.int64) * N_Q + offs_m, lse, mask=row_ok)


# ------------------------------------------------------------------ fp8 forward
# Q, K and V in float8_e4m3fn with per-tensor fp32 descale factors (the dequantised x is its fp8
# value times the descale), both dots on fp8 tensor cores with fp32 accumulation, O in bf16 and
# LSE as attn_fwd_kernel writes it (docs/attention.md, "FP8 forward"). S = Q K^T is scaled by
# q_descale * k_descale with sm_scale (one factor, folded into the softmax's qk_scale). P is
# quantised to e4m3 for P V as 2^P_SHIFT * exp2(score - row max): the shift (free: it is folded
# into the exponent) puts P in [0, 256] instead of [0, 1], where e4m3 keeps its 3 mantissa bits
# down to 2^-14 instead of flushing below 2^-9; the row sum l carries the same factor, so O =
# acc / l cancels it. V comes as V^T (keys contiguous): the B operand of P V must be K-major for
# fp8 wgmma, which has no transpose bit.
P_SHIFT = tl.constexpr(8.0)


@tessera.jit
def _fp8_block_sweep(acc, l_i, m_i, q, k_base, vt_base, stride_kn, stride_kd, stride_vn, stride_vd,
                     offs_m, offs_d, lo, hi, N_KV, qk_scale,
                     BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, MASK_KEYS: tl.constexpr,
                     DIAGONAL: tl.constexpr, TMA: tl.constexpr = False, kv_row0=0, vt_row0=0,
                     WARP_SPECIALIZE: tl.constexpr = False, PINGPONG: tl.constexpr = False):
    """_fwd_block_sweep for fp8: keys lo..hi into (acc, l_i, m_i). K^T is read [HEAD_DIM,
    BLOCK_N] (head dim contiguous in K: the K-major B of Q K^T), V as the transpose of a
    [HEAD_DIM, BLOCK_N] block of V^T (keys contiguous: the K-major B of P V). Any strides work
    through pointers (others are transposed on the way to shared memory, slower). TMA: k_base
    is a descriptor over K's (rows, HEAD_DIM) view from row kv_row0, vt_base one over V^T's
    (B * H_KV * HEAD_DIM, N_KV) view, this head's rows from vt_row0. PINGPONG: as in
    _fwd_block_sweep (two warpgroups take turns to issue their dots)."""
    offs_nb = tl.arange(0, BLOCK_N)
    for start_n in tl.range(lo, hi, BLOCK_N, warp_specialize=WARP_SPECIALIZE):
        offs_n = start_n + offs_nb
        key_ok = offs_n < N_KV
        if TMA:
            kt = tl.trans(k_base.load([kv_row0 + start_n, 0]))
        else:
            kt = _load_keys(k_base + offs_d[:, None] * stride_kd + offs_n[None, :] * stride_kn,
                            key_ok[None, :], MASK_KEYS)
        if PINGPONG:
            tl.pingpong_wait()
        s = tl.dot(q, kt)
        if PINGPONG:
            tl.pingpong_pass()
        keep = key_ok[None, :]
        if DIAGONAL:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        p, alpha, m_i, l_i = _online_softmax(s, m_i, l_i, keep, qk_scale, MASK_KEYS or DIAGONAL, P_SHIFT)
        if TMA:
            v = tl.trans(vt_base.load([vt_row0, start_n]))
        else:
            vt = _load_keys(vt_base + offs_d[:, None] * stride_vd + offs_n[None, :] * stride_vn,
                            key_ok[None, :], MASK_KEYS)
            v = tl.trans(vt)
        acc = acc * alpha[:, None]
        p8 = p.to(tl.float8e4nv)
        if PINGPONG:
            tl.pingpong_wait()
        acc += tl.dot(p8, v)
        if PINGPONG:
            tl.pingpong_pass()
    return acc, l_i, m_i


@tessera.jit
def attn_fwd_fp8_kernel(Q, K, V, O, LSE, Q_DESCALE, K_DESCALE, V_DESCALE,
                        stride_qb, stride_qh, stride_qn, stride_qd,
                        stride_kb, stride_kh, stride_kn, stride_kd,
                        stride_vb, stride_vh, stride_vn, stride_vd,
                        stride_ob, stride_oh, stride_on, stride_od,
                        H, H_KV, N_Q, N_KV, sm_scale,
                        HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                        CAUSAL: tl.constexpr, TMA: tl.constexpr = False, WARP_SPECIALIZE: tl.constexpr = False,
                        PINGPONG: tl.constexpr = False):
    """The fp8 forward: Q, K, V float8e4nv, *_DESCALE one fp32 each, O bf16 (or any float type),
    LSE fp32. V's strides are those of V[b, h, n, d] whatever its storage; V^T storage (keys
    contiguous, stride_vn == 1) is the fast one. Grid: (cdiv(N_Q, BLOCK_M), B * H); causal
    as attn_fwd_kernel. TMA (Hopper): K a descriptor over (B * H_KV * N_KV, HEAD_DIM), blocks
    [BLOCK_N, HEAD_DIM], V one over V^T's (B * H_KV * HEAD_DIM, N_KV), blocks [HEAD_DIM,
    BLOCK_N]; N_KV a multiple of BLOCK_N. WARP_SPECIALIZE (TMA): a producer warpgroup.
    PINGPONG (8 warps): the two warpgroups take turns to issue their dots (FlashAttention-3)."""
    off_bh, off_b, off_hkv, k_base, v_base, kv_row0, o_base, start_m, offs_m, offs_d, row_ok, q = _query_block(
        Q, K, V, O, stride_qb, stride_qh, stride_qn, stride_qd, stride_kb, stride_kh, stride_vb, stride_vh,
        stride_ob, stride_oh, H, H_KV, N_Q, N_KV, HEAD_DIM, BLOCK_M, CAUSAL, TMA)
    vt_row0 = 0
    if TMA:  # V^T's first row of this (batch, K/V head) in the descriptor's (B * H_KV * HEAD_DIM, N_KV) view
        vt_row0 = ((off_b * H_KV + off_hkv) * HEAD_DIM).to(tl.int32)

    # Dequantisation: S = (q_descale * k_descale) * Q K^T, folded into the softmax's scale;
    # O = v_descale * P V, applied once at the end.
    qk_scale = sm_scale * LOG2E * (tl.load(Q_DESCALE) * tl.load(K_DESCALE))
    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    hi_free, hi = _key_bounds(start_m, N_KV, BLOCK_M, BLOCK_N, CAUSAL)
    if PINGPONG:
        tl.pingpong_start()
    acc, l_i, m_i = _fp8_block_sweep(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_kd, stride_vn, stride_vd,
                                     offs_m, offs_d, 0, hi_free, N_KV, qk_scale, BLOCK_N, HEAD_DIM, False, False,
                                     TMA, kv_row0, vt_row0, WARP_SPECIALIZE, PINGPONG)
    acc, l_i, m_i = _fp8_block_sweep(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_kd, stride_vn, stride_vd,
                                     offs_m, offs_d, hi_free, hi, N_KV, qk_scale, BLOCK_N, HEAD_DIM, True, CAUSAL,
                                     TMA, kv_row0, vt_row0, False, PINGPONG)
    if PINGPONG:
        tl.pingpong_end()

    inv_l = tl.load(V_DESCALE) / l_i
    out = acc * inv_l[:, None]
    tl.store(o_base + offs_m[:, None] * stride_on + offs_d[None, :] * stride_od,
             out.to(O.dtype.element_ty), mask=row_ok[:, None])
    # l carries 2^P_SHIFT.
    lse = (m_i + tl.log2(l_i) - P_SHIFT) * LN2
    tl.store(LSE + off_bh.to(tl.int64) * N_Q + offs_m, lse, mask=row_ok)


@tessera.jit
def _bwd_delta(O, DO, DELTA, stride_ob, stride_oh, stride_on, stride_od, stride_dob, stride_doh, stride_don,
               stride_dod, H, N_Q, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr):
    """delta of the rows pid_m * BLOCK_M.. of (batch, head) program_id(1); returns (off_bh, offs_m, row_ok)."""
    pid_m = tl.program_id(0)
    off_bh = tl.program_id(1)
    off_b = (off_bh // H).to(tl.int64)
    off_h = (off_bh % H).to(tl.int64)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    row_ok = offs_m < N_Q
    o = tl.load(O + off_b * stride_ob + off_h * stride_oh + offs_m[:, None] * stride_on
                + offs_d[None, :] * stride_od, mask=row_ok[:, None], other=0.0).to(tl.float32)
    do = tl.load(DO + off_b * stride_dob + off_h * stride_doh + offs_m[:, None] * stride_don
                 + offs_d[None, :] * stride_dod, mask=row_ok[:, None], other=0.0).to(tl.float32)
    delta = tl.sum(o * do, axis=1)
    tl.store(DELTA + off_bh.to(tl.int64) * N_Q + offs_m, delta, mask=row_ok)
    return off_bh, offs_m, row_ok


@tessera.jit
def attn_bwd_preprocess_kernel(O, DO, DELTA,
                               stride_ob, stride_oh, stride_on, stride_od,
                               stride_dob, stride_doh, stride_don, stride_dod,
                               H, N_Q,
                               HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr):
    """delta[b, h, i] = sum_d dO[b, h, i, d] * O[b, h, i, d] in fp32. Grid: (cdiv(N_Q, BLOCK_M), B * H)."""
    _bwd_delta(O, DO, DELTA, stride_ob, stride_oh, stride_on, stride_od, stride_dob, stride_doh, stride_don,
               stride_dod, H, N_Q, HEAD_DIM, BLOCK_M)


@tessera.jit
def attn_bwd_fused_preprocess_kernel(O, DO, DELTA, DQ_ACC,
                                     stride_ob, stride_oh, stride_on, stride_od,
                                     stride_dob, stride_doh, stride_don, stride_dod,
                                     H, N_Q,
                                     HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr):
    """attn_bwd_preprocess_kernel's delta, and the same rows of DQ_ACC (fp32 [B, H, N_Q, HEAD_DIM],
    contiguous: attn_bwd_fused_kernel's dQ sums) zeroed, which spares a memset.
    Grid: (cdiv(N_Q, BLOCK_M), B * H)."""
    off_bh, offs_m, row_ok = _bwd_delta(O, DO, DELTA, stride_ob, stride_oh, stride_on, stride_od, stride_dob,
                                        stride_doh, stride_don, stride_dod, H, N_Q, HEAD_DIM, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    tl.store(DQ_ACC + (off_bh.to(tl.int64) * N_Q + offs_m[:, None]) * HEAD_DIM + offs_d[None, :],
             tl.zeros([BLOCK_M, HEAD_DIM], tl.float32), mask=row_ok[:, None])


@tessera.jit
def _key_block(K, V, stride_kb, stride_kh, stride_kn, stride_kd, stride_vb, stride_vh, stride_vn, stride_vd,
               H, H_KV, N_KV, HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr):
    """The backward's key block of this program (grid (cdiv(N_KV, BLOCK_N), B * H_KV)): its index,
    batch, K/V head, query heads a K/V head, first key, key and head-dim offsets, which keys exist,
    and its K and V (zeros past N_KV)."""
    pid_n = tl.program_id(0)
    off_bh = tl.program_id(1)
    off_b = (off_bh // H_KV).to(tl.int64)
    off_hkv = (off_bh % H_KV).to(tl.int64)
    group = H // H_KV
    start_n = pid_n * BLOCK_N
    offs_n = start_n + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    key_ok = offs_n < N_KV
    k = tl.load(K + off_b * stride_kb + off_hkv * stride_kh + offs_n[:, None] * stride_kn
                + offs_d[None, :] * stride_kd, mask=key_ok[:, None], other=0.0)
    v = tl.load(V + off_b * stride_vb + off_hkv * stride_vh + offs_n[:, None] * stride_vn
                + offs_d[None, :] * stride_vd, mask=key_ok[:, None], other=0.0)
    return pid_n, off_b, off_hkv, group, start_n, offs_n, offs_d, key_ok, k, v


@tessera.jit
def _dkdv_block_sweep(dk, dv, k, v, q_base, do_base, LSE, DELTA, row_base, stride_qn, stride_qd, stride_don,
                      stride_dod, offs_n, offs_d, lo, hi, N_Q, qk_scale, BLOCK_M: tl.constexpr,
                      DIAGONAL: tl.constexpr):
    """Query rows lo..hi (hi may be ragged) into the dK, dV of the keys offs_n (transposed
    orientation: keys as rows); DIAGONAL masks the scores of keys after the query."""
    offs_mb = tl.arange(0, BLOCK_M)
    for start_m in range(lo, hi, BLOCK_M):
        offs_m = start_m + offs_mb
        row_ok = offs_m < N_Q
        qt = tl.load(q_base + offs_d[:, None] * stride_qd + offs_m[None, :] * stride_qn,
                     mask=row_ok[None, :], other=0.0)
        # Rows past N_Q get LSE = +inf, hence P = 0.
        lse2 = tl.load(LSE + row_base + offs_m, mask=row_ok, other=float("inf")) * LOG2E
        pt = tl.exp2(tl.dot(k, qt) * qk_scale - lse2[None, :])  # P^T: [BLOCK_N, BLOCK_M]
        if DIAGONAL:
            pt = tl.where(offs_m[None, :] >= offs_n[:, None], pt, 0.0)
        do = tl.load(do_base + offs_m[:, None] * stride_don + offs_d[None, :] * stride_dod,
                     mask=row_ok[:, None], other=0.0)
        dv += tl.dot(pt.to(do.dtype), do)
        dot_ = tl.load(do_base + offs_d[:, None] * stride_dod + offs_m[None, :] * stride_don,
                       mask=row_ok[None, :], other=0.0)
        dpt = tl.dot(v, dot_)  # dP^T = V dO^T: [BLOCK_N, BLOCK_M]
        delta = tl.load(DELTA + row_base + offs_m, mask=row_ok, other=0.0)
        dst = pt * (dpt - delta[None, :])
        q = tl.load(q_base + offs_m[:, None] * stride_qn + offs_d[None, :] * stride_qd,
                    mask=row_ok[:, None], other=0.0)
        dk += tl.dot(dst.to(q.dtype), q)
    return dk, dv


@tessera.jit
def attn_bwd_dkdv_kernel(Q, K, V, DO, LSE, DELTA, DK, DV,
                         stride_qb, stride_qh, stride_qn, stride_qd,
                         stride_kb, stride_kh, stride_kn, stride_kd,
                         stride_vb, stride_vh, stride_vn, stride_vd,
                         stride_dob, stride_doh, stride_don, stride_dod,
                         stride_dkb, stride_dkh, stride_dkn, stride_dkd,
                         stride_dvb, stride_dvh, stride_dvn, stride_dvd,
                         H, H_KV, N_Q, N_KV, sm_scale,
                         HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         CAUSAL: tl.constexpr):
    """dK, dV of BLOCK_N keys of one (batch, K/V head), summed over the query heads of its
    group. Works in the transposed orientation (keys as rows) so both results are plain
    dot outputs. Grid: (cdiv(N_KV, BLOCK_N), B * H_KV)."""
    pid_n, off_b, off_hkv, group, start_n, offs_n, offs_d, key_ok, k, v = _key_block(
        K, V, stride_kb, stride_kh, stride_kn, stride_kd, stride_vb, stride_vh, stride_vn, stride_vd,
        H, H_KV, N_KV, HEAD_DIM, BLOCK_N)
    qk_scale = sm_scale * LOG2E
    dk = tl.zeros([BLOCK_N, HEAD_DIM], tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], tl.float32)
    # Causal: query rows before this key block see none of it (query blocks start at its first
    # key, not at a multiple of BLOCK_M). Masking every block rather than the diagonal ones
    # only: two sweeps made the sm_90a kernel spill.
    lo = 0
    if CAUSAL:
        lo = start_n
    for g in range(0, group):
        off_h = off_hkv * group + g
        q_base = Q + off_b * stride_qb + off_h * stride_qh
        do_base = DO + off_b * stride_dob + off_h * stride_doh
        row_base = (off_b * H + off_h) * N_Q
        dk, dv = _dkdv_block_sweep(dk, dv, k, v, q_base, do_base, LSE, DELTA, row_base, stride_qn, stride_qd,
                                   stride_don, stride_dod, offs_n, offs_d, lo, N_Q, N_Q, qk_scale, BLOCK_M, CAUSAL)
    dk = dk * sm_scale
    tl.store(DK + off_b * stride_dkb + off_hkv * stride_dkh + offs_n[:, None] * stride_dkn
             + offs_d[None, :] * stride_dkd, dk.to(DK.dtype.element_ty), mask=key_ok[:, None])
    tl.store(DV + off_b * stride_dvb + off_hkv * stride_dvh + offs_n[:, None] * stride_dvn
             + offs_d[None, :] * stride_dvd, dv.to(DV.dtype.element_ty), mask=key_ok[:, None])


@tessera.jit
def _dq_block_sweep(dq, q, do, lse2, delta, k_base, v_base, stride_kn, stride_kd, stride_vn, stride_vd,
                    offs_m, offs_d, lo, hi, N_KV, qk_scale, BLOCK_N: tl.constexpr, DIAGONAL: tl.constexpr):
    """Keys lo..hi (hi may be ragged) into the dQ of the rows offs_m; DIAGONAL masks keys
    after the query."""
    offs_nb = tl.arange(0, BLOCK_N)
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + offs_nb
        key_ok = offs_n < N_KV
        kt = tl.load(k_base + offs_d[:, None] * stride_kd + offs_n[None, :] * stride_kn,
                     mask=key_ok[None, :], other=0.0)
        p = tl.exp2(tl.dot(q, kt) * qk_scale - lse2[:, None])
        keep = key_ok[None, :]
        if DIAGONAL:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        p = tl.where(keep, p, 0.0)
        vt = tl.load(v_base + offs_d[:, None] * stride_vd + offs_n[None, :] * stride_vn,
                     mask=key_ok[None, :], other=0.0)
        dp = tl.dot(do, vt)
        ds = p * (dp - delta[:, None])
        k = tl.load(k_base + offs_n[:, None] * stride_kn + offs_d[None, :] * stride_kd,
                    mask=key_ok[:, None], other=0.0)
        dq += tl.dot(ds.to(k.dtype), k)
    return dq


@tessera.jit
def attn_bwd_dq_kernel(Q, K, V, DO, LSE, DELTA, DQ,
                       stride_qb, stride_qh, stride_qn, stride_qd,
                       stride_kb, stride_kh, stride_kn, stride_kd,
                       stride_vb, stride_vh, stride_vn, stride_vd,
                       stride_dob, stride_doh, stride_don, stride_dod,
                       stride_dqb, stride_dqh, stride_dqn, stride_dqd,
                       H, H_KV, N_Q, N_KV, sm_scale,
                       HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                       CAUSAL: tl.constexpr):
    """dQ of BLOCK_M queries of one (batch, head). Grid: (cdiv(N_Q, BLOCK_M), B * H).
    Causal: the last query blocks (the most keys to sweep) run first."""
    pid_m = tl.program_id(0)
    if CAUSAL:
        pid_m = tl.num_programs(0) - 1 - pid_m
    off_bh = tl.program_id(1)
    off_b = (off_bh // H).to(tl.int64)
    off_h = (off_bh % H).to(tl.int64)
    off_hkv = off_h // (H // H_KV)
    k_base = K + off_b * stride_kb + off_hkv * stride_kh
    v_base = V + off_b * stride_vb + off_hkv * stride_vh

    start_m = pid_m * BLOCK_M
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    row_ok = offs_m < N_Q
    q = tl.load(Q + off_b * stride_qb + off_h * stride_qh + offs_m[:, None] * stride_qn
                + offs_d[None, :] * stride_qd, mask=row_ok[:, None], other=0.0)
    do = tl.load(DO + off_b * stride_dob + off_h * stride_doh + offs_m[:, None] * stride_don
                 + offs_d[None, :] * stride_dod, mask=row_ok[:, None], other=0.0)
    row_base = off_bh.to(tl.int64) * N_Q
    lse2 = tl.load(LSE + row_base + offs_m, mask=row_ok, other=0.0) * LOG2E
    delta = tl.load(DELTA + row_base + offs_m, mask=row_ok, other=0.0)
    qk_scale = sm_scale * LOG2E

    dq = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    if CAUSAL and BLOCK_M % BLOCK_N != 0:  # key steps not aligned to the query block: all masked
        dq = _dq_block_sweep(dq, q, do, lse2, delta, k_base, v_base, stride_kn, stride_kd, stride_vn, stride_vd,
                             offs_m, offs_d, 0, tl.minimum(start_m + BLOCK_M, N_KV), N_KV, qk_scale, BLOCK_N, True)
    elif CAUSAL:
        # Key blocks entirely left of the diagonal need no mask; nothing right of it.
        dq = _dq_block_sweep(dq, q, do, lse2, delta, k_base, v_base, stride_kn, stride_kd, stride_vn, stride_vd,
                             offs_m, offs_d, 0, tl.minimum(start_m, N_KV), N_KV, qk_scale, BLOCK_N, False)
        dq = _dq_block_sweep(dq, q, do, lse2, delta, k_base, v_base, stride_kn, stride_kd, stride_vn, stride_vd,
                             offs_m, offs_d, start_m, tl.minimum(start_m + BLOCK_M, N_KV), N_KV, qk_scale,
                             BLOCK_N, True)
    else:
        dq = _dq_block_sweep(dq, q, do, lse2, delta, k_base, v_base, stride_kn, stride_kd, stride_vn, stride_vd,
                             offs_m, offs_d, 0, N_KV, N_KV, qk_scale, BLOCK_N, False)
    dq = dq * sm_scale
    tl.store(DQ + off_b * stride_dqb + off_h * stride_dqh + offs_m[:, None] * stride_dqn
             + offs_d[None, :] * stride_dqd, dq.to(DQ.dtype.element_ty), mask=row_ok[:, None])


@tessera.jit
def _fused_bwd_steps(dk, dv, k, v, q_base, do_base, LSE, DELTA, DQ_ACC, head0, group, lo, steps, first,
                     stride_qh, stride_qn, stride_qd, stride_doh, stride_don, stride_dod, offs_n, offs_d, key_ok,
                     N_Q, qk_scale, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, DIAGONAL: tl.constexpr,
                     MASK_KEYS: tl.constexpr, STAGGER: tl.constexpr):
    """`steps` query blocks from row lo (the last may be ragged) of each query head of the group
    into dK, dV of the keys offs_n (keys as rows), their dQ added into DQ_ACC: one loop over
    (head, block) pairs, so that the pipeline does not drain between heads. Five dots a step,
    S^T = K Q^T, dV += P^T dO, dP^T = V dO^T, dK += dS^T Q, dQ = dS K; Q and dO are read once,
    each B of one dot as it is and of another through tl.trans. DIAGONAL masks keys after the
    query; MASK_KEYS zeroes P of the keys past N_KV (their K and V are zeros, but exp2(-LSE)
    alone may overflow). STAGGER: the steps run from `first` on, wrapping around (any order
    sums the same), so that programs of neighbouring key blocks, started together, add into
    different rows of dQ instead of all into the same ones at once (a division more a step)."""
    offs_mb = tl.arange(0, BLOCK_M)
    total = group * steps
    for i in range(0, total):
        step = i
        if STAGGER:
            step = i + first
            step = tl.where(step >= total, step - total, step)
        g = step // steps
        offs_m = lo + (step - g * steps) * BLOCK_M + offs_mb
        row_ok = offs_m < N_Q
        q = tl.load(q_base + g * stride_qh + offs_m[:, None] * stride_qn + offs_d[None, :] * stride_qd,
                    mask=row_ok[:, None], other=0.0)
        rows = (head0 + g) * N_Q + offs_m
        # Rows past N_Q get LSE = +inf, hence P = 0 (and no dQ).
        lse2 = tl.load(LSE + rows, mask=row_ok, other=float("inf")) * LOG2E
        do = tl.load(do_base + g * stride_doh + offs_m[:, None] * stride_don + offs_d[None, :] * stride_dod,
                     mask=row_ok[:, None], other=0.0)
        # Issue order is wgmma's completion order: S^T and dP^T go together, so P is computed
        # while dP^T runs, dS while dV runs, and dQ's atomics while dK runs.
        st = tl.dot(k, tl.trans(q))
        dpt = tl.dot(v, tl.trans(do))  # dP^T = V dO^T: [BLOCK_N, BLOCK_M]
        pt = tl.exp2(st * qk_scale - lse2[None, :])  # P^T: [BLOCK_N, BLOCK_M]
        if DIAGONAL:
            keep = offs_m[None, :] >= offs_n[:, None]
            if MASK_KEYS:
                keep = keep & key_ok[:, None]
            pt = tl.where(keep, pt, 0.0)
        elif MASK_KEYS:
            pt = tl.where(key_ok[:, None], pt, 0.0)
        # P in the inputs' type from here on, for dS too (rounded to it anyway): an fp32 P
        # held until dS made the D = 128 kernel spill.
        pt = pt.to(do.dtype)
        dv += tl.dot(pt, do)
        delta = tl.load(DELTA + rows, mask=row_ok, other=0.0)
        dst = (pt * (dpt - delta[None, :])).to(q.dtype)
        dq = tl.dot(tl.trans(dst), k)  # [BLOCK_M, HEAD_DIM], unscaled
        dk += tl.dot(dst, q)
        tl.atomic_add(DQ_ACC + rows[:, None] * HEAD_DIM + offs_d[None, :], dq, mask=row_ok[:, None], sem="relaxed")
    return dk, dv


@tessera.jit
def attn_bwd_fused_kernel(Q, K, V, DO, LSE, DELTA, DQ_ACC, DK, DV,
                          stride_qb, stride_qh, stride_qn, stride_qd,
                          stride_kb, stride_kh, stride_kn, stride_kd,
                          stride_vb, stride_vh, stride_vn, stride_vd,
                          stride_dob, stride_doh, stride_don, stride_dod,
                          stride_dkb, stride_dkh, stride_dkn, stride_dkd,
                          stride_dvb, stride_dvh, stride_dvn, stride_dvd,
                          H, H_KV, N_Q, N_KV, sm_scale,
                          HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                          CAUSAL: tl.constexpr, MASK_KEYS: tl.constexpr, STAGGER: tl.constexpr = False):
    """The backward in one pass (FlashAttention-3's): dK, dV of BLOCK_N keys of one (batch,
    K/V head), summed over the query heads of its group, kept in registers (keys as rows), while
    dQ (unscaled) is added into DQ_ACC, fp32 [B, H, N_Q, HEAD_DIM] contiguous and zeroed
    beforehand (attn_bwd_fused_preprocess_kernel does), by atomics; attn_bwd_dq_convert_kernel scales
    and casts it. P and dP are computed once: five dots a step, S^T = K Q^T, dV += P^T dO,
    dP^T = V dO^T, dK += dS^T Q, dQ = dS K, against the split kernels' seven (_fused_bwd_steps).
    K and V are staged in shared memory once for all steps. Causal: query rows before the key
    block see none of it (each head's steps start at the key block, not at a multiple of
    BLOCK_M); the steps the diagonal crosses are masked, the rest not. MASK_KEYS (N_KV not a
    multiple of BLOCK_N): P of the keys past N_KV is zeroed. STAGGER: program pid_n starts its
    (unmasked) steps at step pid_n (_fused_bwd_steps).
    Grid: (cdiv(N_KV, BLOCK_N), B * H_KV)."""
    pid_n, off_b, off_hkv, group, start_n, offs_n, offs_d, key_ok, k, v = _key_block(
        K, V, stride_kb, stride_kh, stride_kn, stride_kd, stride_vb, stride_vh, stride_vn, stride_vd,
        H, H_KV, N_KV, HEAD_DIM, BLOCK_N)
    qk_scale = sm_scale * LOG2E
    dk = tl.zeros([BLOCK_N, HEAD_DIM], tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], tl.float32)
    head0 = off_b * H + off_hkv * group  # the group's first query head, as a (batch, head) row
    q_base = Q + off_b * stride_qb + off_hkv * group * stride_qh
    do_base = DO + off_b * stride_dob + off_hkv * group * stride_doh
    if CAUSAL:
        # The query blocks the diagonal crosses (from the key block's first key: rows before it
        # see none of it), masked; then the rows that see every key of the block.
        lo = tl.minimum(start_n, N_Q)
        diagonal = tl.cdiv(tl.minimum(start_n + BLOCK_N, N_Q) - lo, BLOCK_M)
        dk, dv = _fused_bwd_steps(dk, dv, k, v, q_base, do_base, LSE, DELTA, DQ_ACC, head0, group, lo, diagonal, 0,
                                  stride_qh, stride_qn, stride_qd, stride_doh, stride_don, stride_dod, offs_n,
                                  offs_d, key_ok, N_Q, qk_scale, HEAD_DIM, BLOCK_M, True, MASK_KEYS, False)
        lo += diagonal * BLOCK_M
        steps = tl.cdiv(tl.maximum(N_Q - lo, 0), BLOCK_M)
        dk, dv = _fused_bwd_steps(dk, dv, k, v, q_base, do_base, LSE, DELTA, DQ_ACC, head0, group, lo, steps,
                                  pid_n % tl.maximum(group * steps, 1), stride_qh, stride_qn, stride_qd,
                                  stride_doh, stride_don, stride_dod, offs_n, offs_d, key_ok, N_Q, qk_scale,
                                  HEAD_DIM, BLOCK_M, False, MASK_KEYS, STAGGER)
    else:
        steps = tl.cdiv(N_Q, BLOCK_M)
        dk, dv = _fused_bwd_steps(dk, dv, k, v, q_base, do_base, LSE, DELTA, DQ_ACC, head0, group, 0, steps,
                                  pid_n % (group * steps), stride_qh, stride_qn, stride_qd, stride_doh, stride_don,
                                  stride_dod, offs_n, offs_d, key_ok, N_Q, qk_scale, HEAD_DIM, BLOCK_M, False,
                                  MASK_KEYS, STAGGER)
    dk = dk * sm_scale
    tl.store(DK + off_b * stride_dkb + off_hkv * stride_dkh + offs_n[:, None] * stride_dkn
             + offs_d[None, :] * stride_dkd, dk.to(DK.dtype.element_ty), mask=key_ok[:, None])
    tl.store(DV + off_b * stride_dvb + off_hkv * stride_dvh + offs_n[:, None] * stride_dvn
             + offs_d[None, :] * stride_dvd, dv.to(DV.dtype.element_ty), mask=key_ok[:, None])


@tessera.jit
def attn_bwd_dq_convert_kernel(DQ_ACC, DQ, stride_dqb, stride_dqh, stride_dqn, stride_dqd, H, N_Q, sm_scale,
                               HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr):
    """dQ = sm_scale * DQ_ACC (attn_bwd_fused_kernel's fp32 sums) in DQ's dtype and strides.
    Grid: (cdiv(N_Q, BLOCK_M), B * H)."""
    pid_m = tl.program_id(0)
    off_bh = tl.program_id(1)
    off_b = (off_bh // H).to(tl.int64)
    off_h = (off_bh % H).to(tl.int64)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    row_ok = offs_m < N_Q
    acc = tl.load(DQ_ACC + (off_bh.to(tl.int64) * N_Q + offs_m[:, None]) * HEAD_DIM + offs_d[None, :],
                  mask=row_ok[:, None], other=0.0)
    tl.store(DQ + off_b * stride_dqb + off_h * stride_dqh + offs_m[:, None] * stride_dqn
             + offs_d[None, :] * stride_dqd, (acc * sm_scale).to(DQ.dtype.element_ty), mask=row_ok[:, None])


# ------------------------------------------------------------------ attention modifiers
# FlexAttention-style modifiers (docs/fusion.md), forward only: @jit functions passed as
# constexprs and inlined into the sweep. Each gets the mod arguments A0..A{NUM_ARGS-1}
# (tensors as pointers, or scalars) after its own parameters:
#   SCORE_MOD(score, b, h, q_idx, kv_idx, *args) -> score   (natural units, after sm_scale)
#   MASK_MOD(b, h, q_idx, kv_idx, *args) -> bool             (False: the key is not seen)
#   KV_RANGE(q_lo, q_hi, n_kv, *args) -> (kv_lo, kv_hi)      (the keys queries q_lo..q_hi-1 may
#                                                             see; blocks outside are skipped)
# q_idx is a [BLOCK_M, 1] block, kv_idx [1, BLOCK_N] (both clamped into range: positions past
# the end are masked anyway), b and h int64 scalars.

@tessera.jit
def _score_mod_call(SCORE_MOD: tl.constexpr, s, b, h, q_idx, kv_idx, A0, A1, A2, A3, NUM_ARGS: tl.constexpr):
    if NUM_ARGS == 0:
        return SCORE_MOD(s, b, h, q_idx, kv_idx)
    elif NUM_ARGS == 1:
        return SCORE_MOD(s, b, h, q_idx, kv_idx, A0)
    elif NUM_ARGS == 2:
        return SCORE_MOD(s, b, h, q_idx, kv_idx, A0, A1)
    elif NUM_ARGS == 3:
        return SCORE_MOD(s, b, h, q_idx, kv_idx, A0, A1, A2)
    else:
        return SCORE_MOD(s, b, h, q_idx, kv_idx, A0, A1, A2, A3)


@tessera.jit
def _mask_mod_call(MASK_MOD: tl.constexpr, b, h, q_idx, kv_idx, A0, A1, A2, A3, NUM_ARGS: tl.constexpr):
    if NUM_ARGS == 0:
        return MASK_MOD(b, h, q_idx, kv_idx)
    elif NUM_ARGS == 1:
        return MASK_MOD(b, h, q_idx, kv_idx, A0)
    elif NUM_ARGS == 2:
        return MASK_MOD(b, h, q_idx, kv_idx, A0, A1)
    elif NUM_ARGS == 3:
        return MASK_MOD(b, h, q_idx, kv_idx, A0, A1, A2)
    else:
        return MASK_MOD(b, h, q_idx, kv_idx, A0, A1, A2, A3)


@tessera.jit
def _kv_range_call(KV_RANGE: tl.constexpr, q_lo, q_hi, n_kv, A0, A1, A2, A3, NUM_ARGS: tl.constexpr):
    if NUM_ARGS == 0:
        return KV_RANGE(q_lo, q_hi, n_kv)
    elif NUM_ARGS == 1:
        return KV_RANGE(q_lo, q_hi, n_kv, A0)
    elif NUM_ARGS == 2:
        return KV_RANGE(q_lo, q_hi, n_kv, A0, A1)
    elif NUM_ARGS == 3:
        return KV_RANGE(q_lo, q_hi, n_kv, A0, A1, A2)
    else:
        return KV_RANGE(q_lo, q_hi, n_kv, A0, A1, A2, A3)


@tessera.jit
def attn_fwd_mod_kernel(Q, K, V, O, LSE,
                        stride_qb, stride_qh, stride_qn, stride_qd,
                        stride_kb, stride_kh, stride_kn, stride_kd,
                        stride_vb, stride_vh, stride_vn, stride_vd,
                        stride_ob, stride_oh, stride_on, stride_od,
                        H, H_KV, N_Q, N_KV, sm_scale, A0, A1, A2, A3,
                        HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                        CAUSAL: tl.constexpr, SCORE_MOD: tl.constexpr = None, MASK_MOD: tl.constexpr = None,
                        KV_RANGE: tl.constexpr = None, NUM_ARGS: tl.constexpr = 0):
    """attn_fwd_kernel with score/mask modifiers and key-block skipping. Rows that see no key
    get O = 0 and LSE = -inf. Grid: (cdiv(N_Q, BLOCK_M), B * H)."""
    pid_m = tl.program_id(0)
    off_bh = tl.program_id(1)
    off_b = (off_bh // H).to(tl.int64)
    off_h = (off_bh % H).to(tl.int64)
    off_hkv = off_h // (H // H_KV)
    q_base = Q + off_b * stride_qb + off_h * stride_qh
    k_base = K + off_b * stride_kb + off_hkv * stride_kh
    v_base = V + off_b * stride_vb + off_hkv * stride_vh
    o_base = O + off_b * stride_ob + off_h * stride_oh

    start_m = pid_m * BLOCK_M
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    offs_nb = tl.arange(0, BLOCK_N)
    row_ok = offs_m < N_Q
    q = tl.load(q_base + offs_m[:, None] * stride_qn + offs_d[None, :] * stride_qd,
                mask=row_ok[:, None], other=0.0)

    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    # The keys this query block may see: causal and KV_RANGE bound them; whole blocks outside
    # are never loaded.
    lo = 0
    hi = N_KV
    if CAUSAL:
        hi = tl.minimum(start_m + BLOCK_M, N_KV)
    if KV_RANGE is not None:
        r_lo, r_hi = _kv_range_call(KV_RANGE, start_m, tl.minimum(start_m + BLOCK_M, N_Q), N_KV,
                                    A0, A1, A2, A3, NUM_ARGS)
        lo = (tl.maximum(r_lo, 0) // BLOCK_N) * BLOCK_N
        hi = tl.minimum(hi, r_hi)
    # Indices as the modifiers see them: clamped into range (rows and keys past the end are
    # masked anyway), so a modifier may index tensors with them without masks.
    q_idx = tl.minimum(offs_m, N_Q - 1)[:, None]
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + offs_nb
        key_ok = offs_n < N_KV
        kt = tl.load(k_base + offs_d[:, None] * stride_kd + offs_n[None, :] * stride_kn,
                     mask=key_ok[None, :], other=0.0)
        s = tl.dot(q, kt) * sm_scale  # natural units, as the modifiers see them
        kv_idx = tl.minimum(offs_n, N_KV - 1)[None, :]
        if SCORE_MOD is not None:
            s = _score_mod_call(SCORE_MOD, s, off_b, off_h, q_idx, kv_idx, A0, A1, A2, A3, NUM_ARGS)
        keep = key_ok[None, :]
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        if MASK_MOD is not None:
            keep = keep & _mask_mod_call(MASK_MOD, off_b, off_h, q_idx, kv_idx, A0, A1, A2, A3, NUM_ARGS)
        s = tl.where(keep, s * LOG2E, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)
        p = tl.exp2(s - m_safe[:, None])
        alpha = tl.exp2(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_base + offs_n[:, None] * stride_vn + offs_d[None, :] * stride_vd,
                    mask=key_ok[:, None], other=0.0)
        acc = acc * alpha[:, None]
        acc += tl.dot(p.to(v.dtype), v)
        m_i = m_new

    seen = l_i > 0.0
    inv_l = tl.where(seen, 1.0 / tl.where(seen, l_i, 1.0), 0.0)
    out = acc * inv_l[:, None]
    tl.store(o_base + offs_m[:, None] * stride_on + offs_d[None, :] * stride_od,
             out.to(O.dtype.element_ty), mask=row_ok[:, None])
    lse = tl.where(seen, (m_i + tl.log2(tl.where(seen, l_i, 1.0))) * LN2, -float("inf"))
    tl.store(LSE + off_bh.to(tl.int64) * N_Q + offs_m, lse, mask=row_ok)
