import tessera
import tessera.language as tl


@tessera.jit
def expert_matmul(x_ptr, w_ptr, y_ptr, M, E, expert, N: tl.constexpr, K: tl.constexpr, BM: tl.constexpr,
                  BN: tl.constexpr, BK: tl.constexpr):
    # Unsloth's MoE grouped GEMM's TMA form: the expert's [BN, BK] weight block comes from a 3-D
    # descriptor over [E, N, K] as [1, BN, BK] and is reshaped to 2-D before tl.dot(x, w.T).
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    w_desc = tl.make_tensor_descriptor(w_ptr, shape=[E, N, K], strides=[N * K, K, 1], block_shape=[1, BN, BK])
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        x = x_desc.load([pid_m * BM, k])
        w = w_desc.load([expert, pid_n * BN, k])
        w = tl.reshape(w, (BN, BK))
        acc += tl.dot(x, w.T)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    tl.store(y_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(y_ptr.dtype.element_ty),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@tessera.jit
def unit_dim_gather(x_ptr, out_ptr, M, N, stride, BM: tl.constexpr, BN: tl.constexpr):
    # a [BM, 1, BN] pointer block read with a broadcast mask, then reshaped to [BM, BN]
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    ptrs = x_ptr + offs_m[:, None, None] * stride + offs_n[None, None, :]
    mask = (offs_m[:, None, None] < M) & (offs_n[None, None, :] < N)
    block = tl.load(ptrs, mask=mask, other=-1.0).reshape(BM, BN)
    tl.store(out_ptr + offs_m[:, None] * BN + offs_n[None, :], block * 2.0)
