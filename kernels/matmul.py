"""Matrix multiplication C = A @ B (Triton's tutorial GEMM), fp16/bf16 in,
fp32 accumulation, C in its pointer's element type.

Program ids are grouped GROUP_M rows of tiles at a time (the "super-grouping"
of the Triton tutorial) so that tiles sharing rows of A and columns of B run
close together and hit L2. The K loop masks the ragged last step; loads of
rows/columns past M/N are masked too, so any M, N, K works. On sm_80+ the dot
runs on tensor cores (mma.sync m16n8k16, docs/tensor-cores.md).
"""
import tessera
import tessera.language as tl


@tessera.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_am = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_bn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        # Addresses from offsets each step (not loop-carried pointer blocks: those
        # cost two 64-bit registers per element and a layout conversion per step).
        k_offs = k * BLOCK_K + offs_k
        a_ptrs = a_ptr + (offs_am[:, None] * stride_am + k_offs[None, :] * stride_ak)
        b_ptrs = b_ptr + (k_offs[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
        a = tl.load(a_ptrs, mask=(offs_am[:, None] < M) & (k_offs[None, :] < K), other=0.0)
        b = tl.load(b_ptrs, mask=(k_offs[:, None] < K) & (offs_bn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    c = acc.to(c_ptr.dtype.element_ty)

    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)
