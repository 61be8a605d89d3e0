import tessera
import tessera.language as tl


@tessera.jit
def gated_state(k_ptr, v_ptr, w_ptr, g_ptr, h0_ptr, h_ptr, ht_ptr, T, K: tl.constexpr, BV: tl.constexpr,
                BT: tl.constexpr, IN_PLACE: tl.constexpr = False):
    # A gated recurrent state in fla's chunk_gated_delta_rule_fwd_h form: the state h [K, BV]
    # starts from a loaded block, each chunk stores it, reads v - w @ h and updates
    # h = h * exp2(g_last) + k^T @ v (`b_h *= ...; b_h += tl.dot(b_k, b_v)`).
    # IN_PLACE: v - w @ h is written back over v (the loop then writes what it reads).
    o_k = tl.arange(0, K)
    o_v = tl.arange(0, BV)
    b_h = tl.load(h0_ptr + o_k[:, None] * BV + o_v[None, :])
    for i_t in range(tl.cdiv(T, BT)):
        o_t = i_t * BT + tl.arange(0, BT)
        m_t = o_t < T
        tl.store(h_ptr + i_t * K * BV + o_k[:, None] * BV + o_v[None, :], b_h.to(h_ptr.dtype.element_ty))
        b_w = tl.load(w_ptr + o_t[:, None] * K + o_k[None, :], mask=m_t[:, None], other=0.0)
        b_v = tl.dot(b_w, b_h.to(b_w.dtype))
        p_v = v_ptr + o_t[:, None] * BV + o_v[None, :]
        b_v = tl.load(p_v, mask=m_t[:, None], other=0.0) - b_v
        if IN_PLACE:
            tl.store(p_v, b_v.to(p_v.dtype.element_ty), mask=m_t[:, None])
        g_last = tl.load(g_ptr + tl.minimum((i_t + 1) * BT, T) - 1)
        b_g = tl.load(g_ptr + o_t, mask=m_t, other=0.0)
        b_v = b_v * tl.where(m_t, tl.exp2(g_last - b_g), 0)[:, None]
        b_h *= tl.exp2(g_last)
        b_k = tl.load(k_ptr + o_k[:, None] + o_t[None, :] * K, mask=m_t[None, :], other=0.0)
        b_h += tl.dot(b_k, b_v.to(b_k.dtype))
    tl.store(ht_ptr + o_k[:, None] * BV + o_v[None, :], b_h)


@tessera.jit
def gated_state_halves(k_ptr, v_ptr, w_ptr, g_ptr, h0_ptr, h_ptr, ht_ptr, T, BV: tl.constexpr, BT: tl.constexpr):
    # gated_state with K = 128 as fla keeps it: two [64, BV] halves of the state, so that
    # v = w1 @ h1 + w2 @ h2 reads two B operands computed in the loop, and one B (v) is read by
    # two dots (h1 += k1^T @ v, h2 += k2^T @ v).
    o_k = tl.arange(0, 64)
    o_v = tl.arange(0, BV)
    b_h1 = tl.load(h0_ptr + o_k[:, None] * BV + o_v[None, :])
    b_h2 = tl.load(h0_ptr + (64 + o_k)[:, None] * BV + o_v[None, :])
    for i_t in range(tl.cdiv(T, BT)):
        o_t = i_t * BT + tl.arange(0, BT)
        m_t = o_t < T
        p_h = h_ptr + i_t * 128 * BV + o_k[:, None] * BV + o_v[None, :]
        tl.store(p_h, b_h1.to(h_ptr.dtype.element_ty))
        tl.store(p_h + 64 * BV, b_h2.to(h_ptr.dtype.element_ty))
        b_w = tl.load(w_ptr + o_t[:, None] * 128 + o_k[None, :], mask=m_t[:, None], other=0.0)
        b_v = tl.dot(b_w, b_h1.to(b_w.dtype))
        b_w = tl.load(w_ptr + o_t[:, None] * 128 + (64 + o_k)[None, :], mask=m_t[:, None], other=0.0)
        b_v += tl.dot(b_w, b_h2.to(b_w.dtype))
        b_v = tl.load(v_ptr + o_t[:, None] * BV + o_v[None, :], mask=m_t[:, None], other=0.0) - b_v
        g_last = tl.load(g_ptr + tl.minimum((i_t + 1) * BT, T) - 1)
        b_g = tl.load(g_ptr + o_t, mask=m_t, other=0.0)
        b_v = b_v * tl.where(m_t, tl.exp2(g_last - b_g), 0)[:, None]
        b_h1 *= tl.exp2(g_last)
        b_h2 *= tl.exp2(g_last)
        b_v = b_v.to(k_ptr.dtype.element_ty)
        b_k = tl.load(k_ptr + o_k[:, None] + o_t[None, :] * 128, mask=m_t[None, :], other=0.0)
        b_h1 += tl.dot(b_k, b_v)
        b_k = tl.load(k_ptr + (64 + o_k)[:, None] + o_t[None, :] * 128, mask=m_t[None, :], other=0.0)
        b_h2 += tl.dot(b_k, b_v)
    tl.store(ht_ptr + o_k[:, None] * BV + o_v[None, :], b_h1)
    tl.store(ht_ptr + (64 + o_k)[:, None] * BV + o_v[None, :], b_h2)


@tessera.jit
def scaled_b_matmul(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # A GEMM whose B block is computed in the loop (scaled after loading): with 3 stages the dot,
    # whose accumulator only it reads, runs on into the next iteration (async).
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + offs_m[:, None] * K + (k + offs_k)[None, :])
        b = tl.load(b_ptr + (k + offs_k)[:, None] * BN + offs_n[None, :])
        acc += tl.dot(a, (b * 2).to(a.dtype))
    tl.store(c_ptr + offs_m[:, None] * BN + offs_n[None, :], acc)
