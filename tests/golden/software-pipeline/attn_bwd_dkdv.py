"""The dK/dV part of Triton's tutorial 06 attention backward (_attn_bwd_dkdv, called twice:
the diagonal blocks with a mask, then the rest): K and V are loaded once and read by both
loops; Q^T and dO are each B of one dot as they are and, through tl.trans, of another.
The pipeline pass stages K and V once for both loops (the second loop reads the first
loop's tiles, so K and V are not held in registers across the first loop) and copies Q^T
and dO into one ring each, read by both dots (local_load {transpose = 1} for the
transposed one). Also run by tests/python/test_attention_bwd_pipeline.py."""
import tessera
import tessera.language as tl


@tessera.jit
def _dkdv_steps(dk, dv, Q, k, v, DO, M, D, stride_tok, start_n, start_m, num_steps,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, MASK: tl.constexpr):
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_n = start_n + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, HEAD_DIM)
    qT_ptrs = Q + offs_m[None, :] * stride_tok + offs_k[:, None]
    do_ptrs = DO + offs_m[:, None] * stride_tok + offs_k[None, :]
    curr_m = start_m
    for _ in range(num_steps):
        qT = tl.load(qT_ptrs)
        offs_m = curr_m + tl.arange(0, BLOCK_M)
        m = tl.load(M + offs_m)
        pT = tl.math.exp2(tl.dot(k, qT) - m[None, :])
        if MASK:
            pT = tl.where(offs_m[None, :] >= offs_n[:, None], pT, 0.0)
        do = tl.load(do_ptrs)
        dv += tl.dot(pT.to(tl.float16), do)
        Di = tl.load(D + offs_m)
        dpT = tl.dot(v, tl.trans(do)).to(tl.float32)
        dsT = (pT * (dpT - Di[None, :])).to(tl.float16)
        dk += tl.dot(dsT, tl.trans(qT))
        curr_m += BLOCK_M
        qT_ptrs += BLOCK_M * stride_tok
        do_ptrs += BLOCK_M * stride_tok
    return dk, dv


@tessera.jit
def attn_bwd_dkdv(Q, K, V, DO, DK, DV, M, D, stride_tok, N_CTX,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr):
    start_n = tl.program_id(0) * BLOCK_N
    offs_n = start_n + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, HEAD_DIM)
    k = tl.load(K + offs_n[:, None] * stride_tok + offs_k[None, :])
    v = tl.load(V + offs_n[:, None] * stride_tok + offs_k[None, :])
    dk = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    MASK_BLOCK_M: tl.constexpr = BLOCK_M // 2
    num_steps = BLOCK_N // MASK_BLOCK_M
    dk, dv = _dkdv_steps(dk, dv, Q, k, v, DO, M, D, stride_tok, start_n, start_n, num_steps,
                         MASK_BLOCK_M, BLOCK_N, HEAD_DIM, True)
    start_m = start_n + num_steps * MASK_BLOCK_M
    dk, dv = _dkdv_steps(dk, dv, Q, k, v, DO, M, D, stride_tok, start_n, start_m, (N_CTX - start_m) // BLOCK_M,
                         BLOCK_M, BLOCK_N, HEAD_DIM, False)
    tl.store(DV + offs_n[:, None] * stride_tok + offs_k[None, :], dv)
    tl.store(DK + offs_n[:, None] * stride_tok + offs_k[None, :], dk)
