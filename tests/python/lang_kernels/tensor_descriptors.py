"""Kernels reading blocks through TMA tensor descriptors (desc.load; docs/tma.md)."""
import tessera
import tessera.language as tl


@tessera.jit
def desc_copy(in_desc, out_ptr, stride_om, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    x = in_desc.load([pid_m * BLOCK_M, pid_n * BLOCK_N])
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(out_ptr + rm[:, None] * stride_om + rn[None, :], x)


@tessera.jit
def desc_scaled_sum(in_desc, out_ptr, n_rows, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # Two loads of one descriptor in a loop: each reuses the scratch tile and its mbarrier.
    pid = tl.program_id(0)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for m in range(0, n_rows, BLOCK_M):
        acc += in_desc.load([m, pid * BLOCK_N]).to(tl.float32) * 2.0
    rm = tl.arange(0, BLOCK_M)
    rn = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(out_ptr + rm[:, None] * (BLOCK_N * tl.num_programs(0)) + rn[None, :], acc)


@tessera.jit
def desc_store_scaled(in_desc, out_desc, scale, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # A block in through one descriptor, out through another (desc.store: the TMA unit
    # writes only the part inside the tensor).
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    x = in_desc.load([pid_m * BLOCK_M, pid_n * BLOCK_N])
    out_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], (x.to(tl.float32) * scale).to(x.dtype))


@tessera.jit
def desc_store_wrong_shape(out_desc, BLOCK_M: tl.constexpr):
    out_desc.store([0, 0], tl.zeros([BLOCK_M, 8], tl.float32))


@tessera.jit
def desc_expert_tile(w_desc, out_desc, expert_ids_ptr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # SGLang's fused MoE: a [1, BLOCK_N, BLOCK_K] block of a stacked [E, N, K] weight tensor, reshaped to 2-D
    # and transposed; written back through a 3-D descriptor of the [E, K, N] output.
    pid_n = tl.program_id(0)
    pid_k = tl.program_id(1)
    e = tl.load(expert_ids_ptr + tl.program_id(2))
    w = w_desc.load([e, pid_n * BLOCK_N, pid_k * BLOCK_K]).reshape(BLOCK_N, BLOCK_K).T
    out_desc.store([tl.program_id(2), pid_k * BLOCK_K, pid_n * BLOCK_N], w.reshape(1, BLOCK_K, BLOCK_N))


@tessera.jit
def desc_stacked_blocks(src_desc, dst_desc, sum_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr):
    # A [B, M, N] block of a 3-D tensor (B > 1: a stack of 2-D tiles in one TMA box), stored doubled
    # through another 3-D descriptor, and summed over its leading dim into sum[i] (M x N, fp32).
    i = tl.program_id(0)
    x = src_desc.load([i * B, 0, 0])
    dst_desc.store([i * B, 0, 0], x * 2)
    s = tl.sum(x.to(tl.float32), axis=0)
    tl.store(sum_ptr + i * M * N + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], s)


@tessera.jit
def desc_stacked_blocks4(src_desc, dst_desc, A: tl.constexpr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr):
    # A [A, B, M, N] block of a 4-D tensor, negated and stored through a 4-D descriptor.
    i = tl.program_id(0)
    j = tl.program_id(1)
    x = src_desc.load([i * A, j * B, 0, 0])
    dst_desc.store([i * A, j * B, 0, 0], -x)