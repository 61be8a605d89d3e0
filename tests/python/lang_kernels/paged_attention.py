"""Attention of a block of queries over a paged key/value cache (the form of vLLM's prefix prefill):
the page of each key comes from a block table loaded in the loop, so the 2-D K and V pointer blocks
are built from a loaded row of page numbers (tests/python/test_paged_attention_ptx.py)."""
import tessera.language as tl
from tessera import jit


@jit
def paged_attention(Q, K_cache, V_cache, block_table, context_len, Out, sm_scale, page_size,
                    stride_qm, stride_k_page, stride_k_d, stride_k_slot, stride_v_page, stride_v_slot, stride_om,
                    BLOCK_M: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0)
    n_context = tl.load(context_len)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    offs_n = tl.arange(0, BLOCK_N)
    q = tl.load(Q + offs_m[:, None] * stride_qm + offs_d[None, :])
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    for start_n in range(0, n_context, BLOCK_N):
        pos = start_n + offs_n
        valid = pos < n_context
        page = tl.load(block_table + pos // page_size, mask=valid, other=0)
        slot = pos % page_size
        k = tl.load(K_cache + page[None, :] * stride_k_page + offs_d[:, None] * stride_k_d + slot[None, :] * stride_k_slot,
                    mask=valid[None, :], other=0.0)  # [HEAD_DIM, BLOCK_N]
        qk = tl.dot(q, k) * sm_scale
        qk = tl.where(valid[None, :], qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp(qk - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V_cache + page[:, None] * stride_v_page + slot[:, None] * stride_v_slot + offs_d[None, :],
                    mask=valid[:, None], other=0.0)  # [BLOCK_N, HEAD_DIM]
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    tl.store(Out + offs_m[:, None] * stride_om + offs_d[None, :], acc / l_i[:, None])
