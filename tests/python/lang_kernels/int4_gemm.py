"""An int4 weight-only GEMM shaped as AWQ's Triton GEMM (tests/python/test_int4_gemm.py): the
packed int32 words of B are widened eight-fold by a triple tl.interleave and unpacked with
shifts in AWQ's nibble order, the zero row the same way from a [1, BN/8] block, and the dot
accumulates in fp16 (out_dtype = the output's type); SPLIT_K > 1 adds the partial sums with
atomic_add."""
import tessera.language as tl
from tessera import jit


@jit
def int4_gemm(a_ptr, qw_ptr, c_ptr, qz_ptr, s_ptr, M, N, K, group_size,
              BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, SPLIT_K: tl.constexpr):
    pid = tl.program_id(0)
    pid_k = tl.program_id(1)
    tiles_n = tl.cdiv(N, BN)
    pid_m, pid_n = pid // tiles_n, pid % tiles_n
    acc_type = c_ptr.type.element_ty
    acc = tl.zeros((BM, BN), dtype=acc_type)
    # nibble j of each word is the column at position order[j] = [0, 4, 1, 5, 2, 6, 3, 7]
    order = ((tl.arange(0, 2) * 4)[None, :] + tl.arange(0, 4)[:, None]).reshape(8)
    shifts = tl.reshape(tl.broadcast_to((order * 4)[None, :], (BK * (BN // 8), 8)), (BK, BN))
    rows = pid_m * BM + tl.arange(0, BM)
    words = pid_n * (BN // 8) + tl.arange(0, BN // 8)
    cols = pid_n * BN + tl.arange(0, BN)
    ks = pid_k * BK + tl.arange(0, BK)
    a_ptrs = a_ptr + K * rows[:, None] + ks[None, :]
    q_ptrs = qw_ptr + (N // 8) * ks[:, None] + words[None, :]
    for k in range(0, tl.cdiv(K, BK * SPLIT_K)):
        a = tl.load(a_ptrs, mask=(rows < M)[:, None] & (ks < K)[None, :])
        q = tl.load(q_ptrs, mask=(ks < K)[:, None] & (words < N // 8)[None, :])
        q = tl.interleave(q, q)
        q = tl.interleave(q, q)
        q = tl.interleave(q, q)
        group = (BK * SPLIT_K * k + pid_k * BK) // group_size + tl.arange(0, 1)
        z = tl.load(qz_ptr + (N // 8) * group[:, None] + words[None, :],
                    mask=(group < K // group_size)[:, None] & (words < N // 8)[None, :])
        z = tl.interleave(z, z)
        z = tl.interleave(z, z)
        z = tl.interleave(z, z)
        z = tl.broadcast_to(z, (BK, BN))
        s = tl.load(s_ptr + N * group[:, None] + cols[None, :],
                    mask=(group < K // group_size)[:, None] & (cols < N)[None, :])
        s = tl.broadcast_to(s, (BK, BN))
        b = ((((q >> shifts) & 0xF) - ((z >> shifts) & 0xF)) * s).to(acc_type)
        acc = tl.dot(a, b, acc, out_dtype=acc_type)
        ks += BK * SPLIT_K
        a_ptrs += BK * SPLIT_K
        q_ptrs += BK * SPLIT_K * (N // 8)
    c_ptrs = c_ptr + N * rows[:, None] + cols[None, :]
    c_mask = (rows < M)[:, None] & (cols < N)[None, :]
    if SPLIT_K == 1:
        tl.store(c_ptrs, acc.to(acc_type), mask=c_mask)
    else:
        tl.atomic_add(c_ptrs, acc.to(acc_type), mask=c_mask)


@jit
def int4_gemv(a_ptr, qw_ptr, c_ptr, s_ptr, z_ptr, N, K, group_size: tl.constexpr,
              BN: tl.constexpr, BK: tl.constexpr):
    """gemlite's GEMV shape: one program per (N block, K block), eight 4-bit values a word along K,
    the activations a [BK, 1] column, the partial dot a sum over K added to c with atomic_add."""
    pid_n = tl.program_id(0)
    pid_k = tl.program_id(1)
    ks = pid_k * BK + tl.arange(0, BK)
    cols = pid_n * BN + tl.arange(0, BN)
    a = tl.load(a_ptr + ks[None, :]).reshape((BK, 1))
    q = tl.load(qw_ptr + (ks[:, None] // 8) * N + cols[None, :])
    group = pid_k * BK // group_size
    s = tl.load(s_ptr + group * N + cols[None, :])
    z = tl.load(z_ptr + group * N + cols[None, :])
    b = (((q >> ((ks % 8) * 4)[:, None]) & 0xF).to(tl.float16) - z) * s
    acc = tl.sum(a.to(tl.float32) * b.to(tl.float32), axis=0, keep_dims=True)
    tl.atomic_add(c_ptr + cols[None, :], acc.to(tl.float16), sem="relaxed")


@jit
def int4_gemm_small_m(x_ptr, qw_ptr, s_ptr, qz_ptr, g_idx_ptr, out_ptr, m, K: tl.constexpr, N: tl.constexpr,
                      GROUPS: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """GPTQ's small-M GEMM shape: act-order groups read per K row (g_idx), weight words, zero words
    and scales gathered by them, one BM x BN block of a few rows (16 x 16 on 4 warps)."""
    rows_m = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), tl.float32)
    for chunk in range(tl.cdiv(K, BK)):
        ks = chunk * BK + tl.arange(0, BK)
        g = tl.load(g_idx_ptr + ks, ks < K, other=0)
        wmask = (ks < K)[:, None] & (cols < N)[None, :]
        words = tl.load(qw_ptr + (ks[:, None] // 8) * N + cols[None, :], wmask, other=0)
        zwords = tl.load(qz_ptr + g[:, None] * (N // 8) + cols[None, :] // 8, wmask, other=0)
        s = tl.load(s_ptr + g[:, None] * N + cols[None, :], wmask, other=0).to(tl.float32)
        codes = (words >> ((ks[:, None] % 8) * 4)) & 15
        zeros = (zwords >> ((cols[None, :] % 8) * 4)) & 15
        w = ((codes - zeros).to(tl.float32) * s).to(tl.float16)
        x = tl.load(x_ptr + rows_m[:, None] * K + ks[None, :], (rows_m < m)[:, None] & (ks < K)[None, :], other=0)
        acc = tl.dot(x, w, acc)
    tl.store(out_ptr + rows_m[:, None] * N + cols[None, :], acc.to(tl.float16), (rows_m < m)[:, None] & (cols < N)[None, :])
