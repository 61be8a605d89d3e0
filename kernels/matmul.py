"""Matrix multiplication C = A @ B (Triton's tutorial GEMM), fp16/bf16 in,
fp32 accumulation, C in its pointer's element type.

Program ids are grouped GROUP_M rows of tiles at a time (the "super-grouping"
of the Triton tutorial) so that tiles sharing rows of A and columns of B run
close together and hit L2. The K loop masks the ragged last step; loads of
rows/columns past M/N are masked too, so any M, N, K works. On sm_80+ the dot
runs on tensor cores (mma.sync m16n8k16, docs/tensor-cores.md).

matmul_tma_kernel reads A and B through TMA descriptors instead (sm_90a,
docs/tma.md); matmul_epilogue_kernel and matmul_tma_epilogue_kernel are the two
with a fused epilogue (docs/fusion.md). The helpers below hold what they share.
"""
import tessera
import tessera.language as tl


@tessera.jit
def _grouped_tile(M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """This program's tile (pid_m, pid_n), GROUP_M rows of tiles at a time (see above)."""
    return _tile_of(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)


@tessera.jit
def _tile_of(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """Tile number pid as (pid_m, pid_n), GROUP_M rows of tiles at a time."""
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@tessera.jit
def _store_tile(c, c_ptr, stride_cm, stride_cn, pid_m, pid_n, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Tile (pid_m, pid_n) of C, already in C's element type; rows and columns past M, N masked."""
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


@tessera.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr):
    pid_m, pid_n = _grouped_tile(M, N, BLOCK_M, BLOCK_N, GROUP_M)

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
    _store_tile(acc.to(c_ptr.dtype.element_ty), c_ptr, stride_cm, stride_cn, pid_m, pid_n, M, N, BLOCK_M, BLOCK_N)


@tessera.jit
def _epilogue_operand(ptr, stride_m, stride_n, offs_m, offs_n, mask, M, N, KIND: tl.constexpr):
    """Epilogue argument i as the epilogue sees it: KIND 1, a tensor broadcast to the tile
    (strides 0 on broadcast dims) loaded as a [BLOCK_M, BLOCK_N] block; KIND 2, a scalar;
    KIND 3, a row (a bias (N,) or (1, N): one value per column) loaded as a [BLOCK_N] vector
    and broadcast, [1, BLOCK_N]; KIND 4, a column ((M, 1)) likewise, [BLOCK_M, 1]. The fusion
    pass reloads such small broadcast vectors in the accumulator's layout (docs/fusion.md),
    where a [BLOCK_M, BLOCK_N] tile would be converted into it through shared memory."""
    if KIND == 1:
        return tl.load(ptr + offs_m[:, None] * stride_m + offs_n[None, :] * stride_n, mask=mask, other=0.0)
    elif KIND == 3:
        return tl.load(ptr + offs_n * stride_n, mask=offs_n < N, other=0.0)[None, :]
    elif KIND == 4:
        return tl.load(ptr + offs_m * stride_m, mask=offs_m < M, other=0.0)[:, None]
    else:
        return ptr


@tessera.jit
def _store_with_epilogue(acc, c_ptr, stride_cm, stride_cn, pid_m, pid_n, M, N,
                         E0, stride_e0m, stride_e0n, E1, stride_e1m, stride_e1n,
                         E2, stride_e2m, stride_e2n, E3, stride_e3m, stride_e3n,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         EPILOGUE: tl.constexpr, NUM_EPI: tl.constexpr, E0_KIND: tl.constexpr, E1_KIND: tl.constexpr,
                         E2_KIND: tl.constexpr, E3_KIND: tl.constexpr):
    """The store stage of the epilogue kernels: C's tile (pid_m, pid_n) = EPILOGUE(acc, e0, ...,
    e{NUM_EPI-1}) on the fp32 tile `acc` (just `acc` when EPILOGUE is None), e_i as
    _epilogue_operand makes them, cast to C's type and stored with C's masks."""
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    if EPILOGUE is not None:
        if NUM_EPI == 0:
            acc = EPILOGUE(acc)
        elif NUM_EPI == 1:
            e0 = _epilogue_operand(E0, stride_e0m, stride_e0n, offs_m, offs_n, mask, M, N, E0_KIND)
            acc = EPILOGUE(acc, e0)
        elif NUM_EPI == 2:
            e0 = _epilogue_operand(E0, stride_e0m, stride_e0n, offs_m, offs_n, mask, M, N, E0_KIND)
            e1 = _epilogue_operand(E1, stride_e1m, stride_e1n, offs_m, offs_n, mask, M, N, E1_KIND)
            acc = EPILOGUE(acc, e0, e1)
        elif NUM_EPI == 3:
            e0 = _epilogue_operand(E0, stride_e0m, stride_e0n, offs_m, offs_n, mask, M, N, E0_KIND)
            e1 = _epilogue_operand(E1, stride_e1m, stride_e1n, offs_m, offs_n, mask, M, N, E1_KIND)
            e2 = _epilogue_operand(E2, stride_e2m, stride_e2n, offs_m, offs_n, mask, M, N, E2_KIND)
            acc = EPILOGUE(acc, e0, e1, e2)
        else:
            tl.static_assert(NUM_EPI == 4, "at most 4 epilogue arguments")
            e0 = _epilogue_operand(E0, stride_e0m, stride_e0n, offs_m, offs_n, mask, M, N, E0_KIND)
            e1 = _epilogue_operand(E1, stride_e1m, stride_e1n, offs_m, offs_n, mask, M, N, E1_KIND)
            e2 = _epilogue_operand(E2, stride_e2m, stride_e2n, offs_m, offs_n, mask, M, N, E2_KIND)
            e3 = _epilogue_operand(E3, stride_e3m, stride_e3n, offs_m, offs_n, mask, M, N, E3_KIND)
            acc = EPILOGUE(acc, e0, e1, e2, e3)
    c = acc.to(c_ptr.dtype.element_ty)
    tl.store(c_ptr + stride_cm * offs_m[:, None] + stride_cn * offs_n[None, :], c, mask=mask)


@tessera.jit
def matmul_epilogue_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                           stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                           E0, stride_e0m, stride_e0n, E1, stride_e1m, stride_e1n,
                           E2, stride_e2m, stride_e2n, E3, stride_e3m, stride_e3n,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                           GROUP_M: tl.constexpr, EPILOGUE: tl.constexpr = None, NUM_EPI: tl.constexpr = 0,
                           E0_KIND: tl.constexpr = 0, E1_KIND: tl.constexpr = 0,
                           E2_KIND: tl.constexpr = 0, E3_KIND: tl.constexpr = 0):
    """matmul_kernel with a fused epilogue: C = EPILOGUE(A @ B, e0, ..., e{NUM_EPI-1}) in the
    store stage (docs/fusion.md). EPILOGUE is a @jit function (a constexpr: inlined); e_i are
    tiles of tensors E_i broadcast to M x N (their strides, 0 on broadcast dims; KIND 1) or
    scalars (KIND 2). The accumulator reaches EPILOGUE in fp32; its result is cast to C's type."""
    pid_m, pid_n = _grouped_tile(M, N, BLOCK_M, BLOCK_N, GROUP_M)

    offs_am = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_bn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_offs = k * BLOCK_K + offs_k
        a_ptrs = a_ptr + (offs_am[:, None] * stride_am + k_offs[None, :] * stride_ak)
        b_ptrs = b_ptr + (k_offs[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
        a = tl.load(a_ptrs, mask=(offs_am[:, None] < M) & (k_offs[None, :] < K), other=0.0)
        b = tl.load(b_ptrs, mask=(k_offs[:, None] < K) & (offs_bn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)

    _store_with_epilogue(acc, c_ptr, stride_cm, stride_cn, pid_m, pid_n, M, N,
                         E0, stride_e0m, stride_e0n, E1, stride_e1m, stride_e1n,
                         E2, stride_e2m, stride_e2n, E3, stride_e3m, stride_e3n, BLOCK_M, BLOCK_N,
                         EPILOGUE, NUM_EPI, E0_KIND, E1_KIND, E2_KIND, E3_KIND)


@tessera.jit
def _tma_accumulate(a_desc, b_desc, pid_m, pid_n, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    BLOCK_K: tl.constexpr, WARP_SPECIALIZE: tl.constexpr = False):
    """The fp32 tile (pid_m, pid_n) of A @ B, A and B read through TMA tensor descriptors
    (Hopper; docs/tma.md): a_desc over A (M x K, blocks BLOCK_M x BLOCK_K), b_desc over B
    (K x N, blocks BLOCK_K x BLOCK_N), both row-major. The TMA unit fills blocks past the
    edges with zeros, so the loop needs no masks; the pipeline pass stages the blocks in an
    mbarrier-tracked ring that wgmma reads. WARP_SPECIALIZE: a producer warpgroup issues the
    copies (a hint: taken where the loop is at the kernel's top level, docs/tma.md)."""
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BLOCK_K), warp_specialize=WARP_SPECIALIZE):
        a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
        b = b_desc.load([k * BLOCK_K, pid_n * BLOCK_N])
        acc += tl.dot(a, b)
    return acc


@tessera.jit
def matmul_tma_kernel(a_desc, b_desc, c_ptr, M, N, K, stride_cm, stride_cn,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                      GROUP_M: tl.constexpr, WARP_SPECIALIZE: tl.constexpr = False):
    """matmul_kernel with A and B read through TMA tensor descriptors (Hopper; docs/tma.md):
    a_desc over A (M x K, blocks BLOCK_M x BLOCK_K), b_desc over B (K x N, blocks
    BLOCK_K x BLOCK_N), both row-major; the K loop is _tma_accumulate's (WARP_SPECIALIZE: with
    a producer warpgroup, launched as num_warps + 4 warps)."""
    pid_m, pid_n = _grouped_tile(M, N, BLOCK_M, BLOCK_N, GROUP_M)

    acc = _tma_accumulate(a_desc, b_desc, pid_m, pid_n, K, BLOCK_M, BLOCK_N, BLOCK_K, WARP_SPECIALIZE)
    _store_tile(acc.to(c_ptr.dtype.element_ty), c_ptr, stride_cm, stride_cn, pid_m, pid_n, M, N, BLOCK_M, BLOCK_N)


@tessera.jit
def matmul_tma_persistent_kernel(a_desc, b_desc, c_ptr, M, N, K, stride_cm, stride_cn,
                                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                                 GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr, WARP_SPECIALIZE: tl.constexpr = False,
                                 PINGPONG: tl.constexpr = False):
    """matmul_tma_kernel as a persistent kernel (issue 8's option): launched with at most
    NUM_SMS programs (the device's SM count), each loops over the tiles pid, pid + NUM_SMS, ...
    in the grouped order; each tile's K loop is the pipelined TMA ring of _tma_accumulate.
    WARP_SPECIALIZE: a producer warpgroup walks every tile's K loop with one ring, so the next
    tile's first blocks arrive while this tile is stored (docs/tma.md). PINGPONG (num_warps=4):
    two consumer warpgroups take alternate tiles, one's store beside the other's K loop."""
    num_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    for tile in tl.range(tl.program_id(0), num_tiles, NUM_SMS, warp_specialize=PINGPONG):
        pid_m, pid_n = _tile_of(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        acc = _tma_accumulate(a_desc, b_desc, pid_m, pid_n, K, BLOCK_M, BLOCK_N, BLOCK_K, WARP_SPECIALIZE)
        _store_tile(acc.to(c_ptr.dtype.element_ty), c_ptr, stride_cm, stride_cn, pid_m, pid_n, M, N, BLOCK_M, BLOCK_N)


@tessera.jit
def matmul_tma_store_kernel(a_desc, b_desc, c_desc, M, N, K,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                            GROUP_M: tl.constexpr):
    """matmul_tma_kernel with C written through a third descriptor (c_desc over C, blocks
    BLOCK_M x BLOCK_N): the tile goes through shared memory (the ring's space, free after the
    loop) to a TMA store, which skips what lies outside C, so no masks (issue 8's "epilogue
    through shared memory and TMA store"). Not used by tk.matmul yet: bench/matmul.py
    tessera_tma_store_raw times it against matmul_tma_kernel."""
    pid_m, pid_n = _grouped_tile(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    acc = _tma_accumulate(a_desc, b_desc, pid_m, pid_n, K, BLOCK_M, BLOCK_N, BLOCK_K)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_desc.dtype))


@tessera.jit
def matmul_tma_epilogue_kernel(a_desc, b_desc, c_ptr, M, N, K, stride_cm, stride_cn,
                               E0, stride_e0m, stride_e0n, E1, stride_e1m, stride_e1n,
                               E2, stride_e2m, stride_e2n, E3, stride_e3m, stride_e3n,
                               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                               GROUP_M: tl.constexpr, EPILOGUE: tl.constexpr = None, NUM_EPI: tl.constexpr = 0,
                               E0_KIND: tl.constexpr = 0, E1_KIND: tl.constexpr = 0,
                               E2_KIND: tl.constexpr = 0, E3_KIND: tl.constexpr = 0,
                               PERSISTENT: tl.constexpr = False, NUM_SMS: tl.constexpr = 1,
                               WARP_SPECIALIZE: tl.constexpr = False, PINGPONG: tl.constexpr = False):
    """matmul_tma_kernel with matmul_epilogue_kernel's fused epilogue (docs/fusion.md, docs/tma.md):
    the TMA/mbarrier/wgmma K loop (_tma_accumulate), then C = EPILOGUE(acc, e0, ...) in the
    store stage (_store_with_epilogue). PERSISTENT: as matmul_tma_persistent_kernel
    (NUM_SMS programs looping over the tiles; WARP_SPECIALIZE: a producer warpgroup's ring runs
    ahead into the next tile while this tile's epilogue computes and stores; PINGPONG, with
    num_warps=4: two consumer warpgroups take alternate tiles, so one's epilogue runs beside the
    other's wgmmas, docs/tma.md)."""
    if not PERSISTENT:
        pid_m, pid_n = _grouped_tile(M, N, BLOCK_M, BLOCK_N, GROUP_M)
        acc = _tma_accumulate(a_desc, b_desc, pid_m, pid_n, K, BLOCK_M, BLOCK_N, BLOCK_K)
        _store_with_epilogue(acc, c_ptr, stride_cm, stride_cn, pid_m, pid_n, M, N,
                             E0, stride_e0m, stride_e0n, E1, stride_e1m, stride_e1n,
                             E2, stride_e2m, stride_e2n, E3, stride_e3m, stride_e3n, BLOCK_M, BLOCK_N,
                             EPILOGUE, NUM_EPI, E0_KIND, E1_KIND, E2_KIND, E3_KIND)
    else:
        num_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
        for tile in tl.range(tl.program_id(0), num_tiles, NUM_SMS, warp_specialize=PINGPONG):
            pid_m, pid_n = _tile_of(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
            acc = _tma_accumulate(a_desc, b_desc, pid_m, pid_n, K, BLOCK_M, BLOCK_N, BLOCK_K, WARP_SPECIALIZE)
            _store_with_epilogue(acc, c_ptr, stride_cm, stride_cn, pid_m, pid_n, M, N,
                                 E0, stride_e0m, stride_e0n, E1, stride_e1m, stride_e1n,
                                 E2, stride_e2m, stride_e2n, E3, stride_e3m, stride_e3n, BLOCK_M, BLOCK_N,
                                 EPILOGUE, NUM_EPI, E0_KIND, E1_KIND, E2_KIND, E3_KIND)


# ------------------------------------------------------------ scaled fp8 GEMM
#
# Scaled fp8 matrix multiplication: C = (A * scale_a) @ (B * scale_b) (+ bias[n]), A and B in
# e4m3 or e5m2, fp32 accumulation, C in its pointer's element type (tessera.kernels.scaled_matmul).
#
# The scales say how the fp8 codes dequantise (fp32 values):
#
# - SCALING = "outer": A[m, k] * sa[m] and B[k, n] * sb[n]. One scale per tensor is this with
#   stride 0 (every row reads the same value), so per-tensor, per-row of A and per-column of
#   B, and any mix of them, are one kernel: the product of the two scale vectors multiplies
#   the fp32 tile once, after the K loop.
# - SCALING = "block" (DeepSeek-V3's): A[m, k] * sa[m, k // SCALE_K] (1 x SCALE_K blocks of an
#   activation) and B[k, n] * sb[k // SCALE_K, n // SCALE_N] (SCALE_K x SCALE_N blocks of a
#   weight). The scales change along K, so each BLOCK_K step's dot starts from zero and its
#   fp32 result, scaled, is added into the accumulator: BLOCK_K divides SCALE_K. That add is
#   also a promotion of Hopper's reduced-precision fp8 accumulation into fp32 every BLOCK_K
#   products (docs/tensor-cores.md), as DeepSeek-V3 does.
#
# fp8 wgmma (sm_90a) reads both operands K-major. A row-major A is; for B the fast layout is
# column-major (K contiguous, torch._scaled_mm's convention: b = w.t() for a row-major weight
# w of N x K); a row-major B is staged transposed by the dot (correct, slower).
#
# The tile order, the store and the epilogue are the helpers above.


@tessera.jit
def _outer_scales(acc, sa_ptr, stride_sam, sb_ptr, stride_sbn, offs_m, offs_n, M, N):
    """acc * sa[m] * sb[n]: the "outer" scales (stride 0: one value for the whole tensor)."""
    sa = tl.load(sa_ptr + offs_m * stride_sam, mask=offs_m < M, other=0.0)
    sb = tl.load(sb_ptr + offs_n * stride_sbn, mask=offs_n < N, other=0.0)
    return acc * sa[:, None] * sb[None, :]


@tessera.jit
def _with_bias(acc, bias_ptr, stride_bias, pid_n, N, BLOCK_N: tl.constexpr, HAS_BIAS: tl.constexpr):
    """acc + bias[n] (a vector of N, any float dtype, added in fp32) when HAS_BIAS."""
    if HAS_BIAS:
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        acc += tl.load(bias_ptr + offs_n * stride_bias, mask=offs_n < N, other=0.0).to(tl.float32)[None, :]
    return acc


@tessera.jit
def _scaled_step(acc, a, b, k, sa_ptr, sb_ptr, pid_n, offs_am, offs_bn, M, N,
                 stride_sam, stride_sak, stride_sbk, stride_sbn,
                 BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                 SCALING: tl.constexpr, SCALE_K: tl.constexpr, SCALE_N: tl.constexpr):
    """acc plus the K step k's a @ b: block scales applied to this step's product (in fp32),
    other scalings left for after the loop (_outer_scales)."""
    if SCALING == "block":
        tl.static_assert(SCALE_K % BLOCK_K == 0, "block scales need BLOCK_K dividing SCALE_K")
        kb = (k * BLOCK_K) // SCALE_K
        sa = tl.load(sa_ptr + offs_am * stride_sam + kb * stride_sak, mask=offs_am < M, other=0.0)
        if SCALE_N % BLOCK_N == 0:  # one scale of B for the whole tile: a scalar, not 2 registers a column
            sb = tl.load(sb_ptr + kb * stride_sbk + ((pid_n * BLOCK_N) // SCALE_N) * stride_sbn)
            acc += tl.dot(a, b) * (sa * sb)[:, None]
        else:
            sb = tl.load(sb_ptr + kb * stride_sbk + (offs_bn // SCALE_N) * stride_sbn, mask=offs_bn < N,
                         other=0.0)
            acc += tl.dot(a, b) * sa[:, None] * sb[None, :]
    else:
        acc = tl.dot(a, b, acc)
    return acc


@tessera.jit
def _block_scale(sa_ptr, sb_ptr, kb, num_kb, pid_n, offs_am, offs_bn, M, N,
                 stride_sam, stride_sak, stride_sbk, stride_sbn,
                 BLOCK_N: tl.constexpr, SCALE_N: tl.constexpr):
    """The factor of K block kb's product, sa[m, kb] * sb[kb, n]: a column (BLOCK_M, 1) where
    one scale of B covers the tile, else a (BLOCK_M, BLOCK_N) tile; zero past the last block."""
    in_k = kb < num_kb
    sa = tl.load(sa_ptr + offs_am * stride_sam + kb * stride_sak, mask=(offs_am < M) & in_k, other=0.0)
    if SCALE_N % BLOCK_N == 0:
        sb = tl.load(sb_ptr + kb * stride_sbk + ((pid_n * BLOCK_N) // SCALE_N) * stride_sbn, mask=in_k, other=0.0)
        factor = (sa * sb)[:, None]
    else:
        sb = tl.load(sb_ptr + kb * stride_sbk + (offs_bn // SCALE_N) * stride_sbn, mask=(offs_bn < N) & in_k,
                     other=0.0)
        factor = sa[:, None] * sb[None, :]
    return factor


@tessera.jit
def _paired_block_step(acc, a0, b0, a1, b1, k0, num_kb, sa_ptr, sb_ptr, pid_n, offs_am, offs_bn, M, N,
                       stride_sam, stride_sak, stride_sbk, stride_sbn,
                       BLOCK_N: tl.constexpr, SCALE_N: tl.constexpr):
    """acc plus K blocks k0 and k0 + 1, block scales applied (PAIR_K): both dots are issued
    before the first is read, so on wgmma its scaling and promotion (wait_group 1) run while
    the tensor cores do the second's, and only the second's is exposed. A block past K reads
    zeros and its scales are 0, adding 0."""
    p0 = tl.dot(a0, b0)
    p1 = tl.dot(a1, b1)
    f0 = _block_scale(sa_ptr, sb_ptr, k0, num_kb, pid_n, offs_am, offs_bn, M, N,
                      stride_sam, stride_sak, stride_sbk, stride_sbn, BLOCK_N, SCALE_N)
    f1 = _block_scale(sa_ptr, sb_ptr, k0 + 1, num_kb, pid_n, offs_am, offs_bn, M, N,
                      stride_sam, stride_sak, stride_sbk, stride_sbn, BLOCK_N, SCALE_N)
    acc += p0 * f0
    acc += p1 * f1
    return acc


@tessera.jit
def _scaled_accumulate(a_ptr, b_ptr, sa_ptr, sb_ptr, pid_m, pid_n, M, N, K,
                       stride_am, stride_ak, stride_bk, stride_bn,
                       stride_sam, stride_sak, stride_sbk, stride_sbn,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                       SCALING: tl.constexpr, SCALE_K: tl.constexpr, SCALE_N: tl.constexpr,
                       PAIR_K: tl.constexpr = False):
    """The scaled fp32 tile (pid_m, pid_n) of (A * sa) @ (B * sb), pointer loads (any strides);
    PAIR_K: block scales two K blocks a step (_paired_block_step)."""
    offs_am = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_bn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    if SCALING == "block" and PAIR_K:
        tl.static_assert(SCALE_K == BLOCK_K, "PAIR_K takes BLOCK_K = SCALE_K")
        num_kb = tl.cdiv(K, BLOCK_K)
        for kk in range(0, tl.cdiv(num_kb, 2)):
            k0_offs = 2 * kk * BLOCK_K + offs_k
            k1_offs = k0_offs + BLOCK_K
            a0 = tl.load(a_ptr + (offs_am[:, None] * stride_am + k0_offs[None, :] * stride_ak),
                         mask=(offs_am[:, None] < M) & (k0_offs[None, :] < K), other=0.0)
            b0 = tl.load(b_ptr + (k0_offs[:, None] * stride_bk + offs_bn[None, :] * stride_bn),
                         mask=(k0_offs[:, None] < K) & (offs_bn[None, :] < N), other=0.0)
            a1 = tl.load(a_ptr + (offs_am[:, None] * stride_am + k1_offs[None, :] * stride_ak),
                         mask=(offs_am[:, None] < M) & (k1_offs[None, :] < K), other=0.0)
            b1 = tl.load(b_ptr + (k1_offs[:, None] * stride_bk + offs_bn[None, :] * stride_bn),
                         mask=(k1_offs[:, None] < K) & (offs_bn[None, :] < N), other=0.0)
            acc = _paired_block_step(acc, a0, b0, a1, b1, 2 * kk, num_kb, sa_ptr, sb_ptr, pid_n, offs_am, offs_bn,
                                     M, N, stride_sam, stride_sak, stride_sbk, stride_sbn, BLOCK_N, SCALE_N)
    else:
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            k_offs = k * BLOCK_K + offs_k
            a_ptrs = a_ptr + (offs_am[:, None] * stride_am + k_offs[None, :] * stride_ak)
            b_ptrs = b_ptr + (k_offs[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
            a = tl.load(a_ptrs, mask=(offs_am[:, None] < M) & (k_offs[None, :] < K), other=0.0)
            b = tl.load(b_ptrs, mask=(k_offs[:, None] < K) & (offs_bn[None, :] < N), other=0.0)
            acc = _scaled_step(acc, a, b, k, sa_ptr, sb_ptr, pid_n, offs_am, offs_bn, M, N,
                               stride_sam, stride_sak, stride_sbk, stride_sbn, BLOCK_N, BLOCK_K, SCALING, SCALE_K,
                               SCALE_N)
        if SCALING == "outer":
            acc = _outer_scales(acc, sa_ptr, stride_sam, sb_ptr, stride_sbn, offs_am, offs_bn, M, N)
    return acc


@tessera.jit
def scaled_matmul_kernel(a_ptr, b_ptr, c_ptr, sa_ptr, sb_ptr, bias_ptr, M, N, K,
                         stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                         stride_sam, stride_sak, stride_sbk, stride_sbn, stride_bias,
                         E0, stride_e0m, stride_e0n, E1, stride_e1m, stride_e1n,
                         E2, stride_e2m, stride_e2n, E3, stride_e3m, stride_e3n,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                         GROUP_M: tl.constexpr, SCALING: tl.constexpr = "outer",
                         SCALE_K: tl.constexpr = 128, SCALE_N: tl.constexpr = 128, HAS_BIAS: tl.constexpr = False,
                         EPILOGUE: tl.constexpr = None, NUM_EPI: tl.constexpr = 0,
                         E0_KIND: tl.constexpr = 0, E1_KIND: tl.constexpr = 0,
                         E2_KIND: tl.constexpr = 0, E3_KIND: tl.constexpr = 0, PAIR_K: tl.constexpr = False):
    """C = EPILOGUE((A * sa) @ (B * sb) + bias, e0, ...) (without EPILOGUE the scaled product,
    + bias[n] when HAS_BIAS), A and B fp8 with any strides (the cp.async pipeline), the scales
    as the section's comment says; the epilogue slots are matmul_epilogue_kernel's. PAIR_K:
    block scales two K blocks a step."""
    pid_m, pid_n = _grouped_tile(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    acc = _scaled_accumulate(a_ptr, b_ptr, sa_ptr, sb_ptr, pid_m, pid_n, M, N, K,
                             stride_am, stride_ak, stride_bk, stride_bn,
                             stride_sam, stride_sak, stride_sbk, stride_sbn,
                             BLOCK_M, BLOCK_N, BLOCK_K, SCALING, SCALE_K, SCALE_N, PAIR_K)
    acc = _with_bias(acc, bias_ptr, stride_bias, pid_n, N, BLOCK_N, HAS_BIAS)
    _store_with_epilogue(acc, c_ptr, stride_cm, stride_cn, pid_m, pid_n, M, N,
                         E0, stride_e0m, stride_e0n, E1, stride_e1m, stride_e1n,
                         E2, stride_e2m, stride_e2n, E3, stride_e3m, stride_e3n, BLOCK_M, BLOCK_N,
                         EPILOGUE, NUM_EPI, E0_KIND, E1_KIND, E2_KIND, E3_KIND)


@tessera.jit
def _scaled_tma_accumulate(a_desc, bt_desc, sa_ptr, sb_ptr, pid_m, pid_n, M, N, K,
                           stride_sam, stride_sak, stride_sbk, stride_sbn,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                           SCALING: tl.constexpr, SCALE_K: tl.constexpr, SCALE_N: tl.constexpr,
                           WARP_SPECIALIZE: tl.constexpr = False, PAIR_K: tl.constexpr = False):
    """_scaled_accumulate through TMA descriptors (Hopper): a_desc over A (M x K, blocks
    BLOCK_M x BLOCK_K), bt_desc over B's transpose (N x K: a column-major B, blocks
    BLOCK_N x BLOCK_K), both K-major as fp8 wgmma reads them; the block is transposed for
    the dot without moving (docs/tma.md). WARP_SPECIALIZE: a producer warpgroup issues the copies."""
    offs_am = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_bn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    if SCALING == "block" and PAIR_K:
        tl.static_assert(SCALE_K == BLOCK_K, "PAIR_K takes BLOCK_K = SCALE_K")
        num_kb = tl.cdiv(K, BLOCK_K)
        for kk in tl.range(0, tl.cdiv(num_kb, 2), warp_specialize=WARP_SPECIALIZE):
            k0 = 2 * kk
            a0 = a_desc.load([pid_m * BLOCK_M, k0 * BLOCK_K])
            b0 = tl.trans(bt_desc.load([pid_n * BLOCK_N, k0 * BLOCK_K]))
            a1 = a_desc.load([pid_m * BLOCK_M, (k0 + 1) * BLOCK_K])
            b1 = tl.trans(bt_desc.load([pid_n * BLOCK_N, (k0 + 1) * BLOCK_K]))
            acc = _paired_block_step(acc, a0, b0, a1, b1, k0, num_kb, sa_ptr, sb_ptr, pid_n, offs_am, offs_bn, M, N,
                                     stride_sam, stride_sak, stride_sbk, stride_sbn, BLOCK_N, SCALE_N)
    else:
        for k in tl.range(0, tl.cdiv(K, BLOCK_K), warp_specialize=WARP_SPECIALIZE):
            a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
            b = tl.trans(bt_desc.load([pid_n * BLOCK_N, k * BLOCK_K]))
            acc = _scaled_step(acc, a, b, k, sa_ptr, sb_ptr, pid_n, offs_am, offs_bn, M, N,
                               stride_sam, stride_sak, stride_sbk, stride_sbn, BLOCK_N, BLOCK_K, SCALING, SCALE_K, SCALE_N)
        if SCALING == "outer":
            acc = _outer_scales(acc, sa_ptr, stride_sam, sb_ptr, stride_sbn, offs_am, offs_bn, M, N)
    return acc


@tessera.jit
def scaled_matmul_tma_kernel(a_desc, bt_desc, c_ptr, sa_ptr, sb_ptr, bias_ptr, M, N, K, stride_cm, stride_cn,
                             stride_sam, stride_sak, stride_sbk, stride_sbn, stride_bias,
                             E0, stride_e0m, stride_e0n, E1, stride_e1m, stride_e1n,
                             E2, stride_e2m, stride_e2n, E3, stride_e3m, stride_e3n,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                             GROUP_M: tl.constexpr, SCALING: tl.constexpr = "outer",
                             SCALE_K: tl.constexpr = 128, SCALE_N: tl.constexpr = 128,
                             HAS_BIAS: tl.constexpr = False, EPILOGUE: tl.constexpr = None, NUM_EPI: tl.constexpr = 0,
                             E0_KIND: tl.constexpr = 0, E1_KIND: tl.constexpr = 0,
                             E2_KIND: tl.constexpr = 0, E3_KIND: tl.constexpr = 0,
                             WARP_SPECIALIZE: tl.constexpr = False, PAIR_K: tl.constexpr = False):
    """scaled_matmul_kernel with A and B read through TMA descriptors (_scaled_tma_accumulate;
    WARP_SPECIALIZE: a producer warpgroup, PAIR_K: block scales two K blocks a step)."""
    pid_m, pid_n = _grouped_tile(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    acc = _scaled_tma_accumulate(a_desc, bt_desc, sa_ptr, sb_ptr, pid_m, pid_n, M, N, K,
                                 stride_sam, stride_sak, stride_sbk, stride_sbn,
                                 BLOCK_M, BLOCK_N, BLOCK_K, SCALING, SCALE_K, SCALE_N, WARP_SPECIALIZE, PAIR_K)
    acc = _with_bias(acc, bias_ptr, stride_bias, pid_n, N, BLOCK_N, HAS_BIAS)
    _store_with_epilogue(acc, c_ptr, stride_cm, stride_cn, pid_m, pid_n, M, N,
                         E0, stride_e0m, stride_e0n, E1, stride_e1m, stride_e1n,
                         E2, stride_e2m, stride_e2n, E3, stride_e3m, stride_e3n, BLOCK_M, BLOCK_N,
                         EPILOGUE, NUM_EPI, E0_KIND, E1_KIND, E2_KIND, E3_KIND)


@tessera.jit
def scaled_matmul_tma_persistent_kernel(a_desc, bt_desc, c_ptr, sa_ptr, sb_ptr, bias_ptr, M, N, K,
                                        stride_cm, stride_cn, stride_sam, stride_sak, stride_sbk, stride_sbn,
                                        stride_bias,
                                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                                        GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr,
                                        SCALING: tl.constexpr = "outer", SCALE_K: tl.constexpr = 128,
                                        SCALE_N: tl.constexpr = 128, HAS_BIAS: tl.constexpr = False,
                                        WARP_SPECIALIZE: tl.constexpr = False, PAIR_K: tl.constexpr = False):
    """scaled_matmul_tma_kernel as matmul_tma_persistent_kernel is matmul_tma_kernel: NUM_SMS
    programs looping over the tiles, a producer warpgroup (WARP_SPECIALIZE) feeding one ring;
    a bias but no epilogue."""
    num_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    for tile in range(tl.program_id(0), num_tiles, NUM_SMS):
        pid_m, pid_n = _tile_of(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        acc = _scaled_tma_accumulate(a_desc, bt_desc, sa_ptr, sb_ptr, pid_m, pid_n, M, N, K,
                                     stride_sam, stride_sak, stride_sbk, stride_sbn,
                                     BLOCK_M, BLOCK_N, BLOCK_K, SCALING, SCALE_K, SCALE_N, WARP_SPECIALIZE, PAIR_K)
        acc = _with_bias(acc, bias_ptr, stride_bias, pid_n, N, BLOCK_N, HAS_BIAS)
        _store_tile(acc.to(c_ptr.dtype.element_ty), c_ptr, stride_cm, stride_cn, pid_m, pid_n, M, N, BLOCK_M, BLOCK_N)
