"""A GEMM written the way users write one after reading a Triton tutorial
(grouped program order, pointer blocks advanced every K step, masks only on
K, rows/columns wrapped with % so loads need no M/N mask) — nothing in it is
tuned for tessera. bench/matmul.py times it next to kernels/matmul.py: the
speed has to come from the compiler."""
import tessera
import tessera.language as tl


@tessera.jit
def user_matmul(a_ptr, b_ptr, c_ptr, M, N, K, s_am, s_ak, s_bk, s_bn, s_cm, s_cn,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    group_start = (pid // per_group) * GROUP_M
    rows_in_group = tl.minimum(tiles_m - group_start, GROUP_M)
    tile_m = group_start + (pid % per_group) % rows_in_group
    tile_n = (pid % per_group) // rows_in_group

    m = (tile_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    n = (tile_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    k = tl.arange(0, BLOCK_K)
    a_tile = a_ptr + m[:, None] * s_am + k[None, :] * s_ak
    b_tile = b_ptr + k[:, None] * s_bk + n[None, :] * s_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for step in range(0, tl.cdiv(K, BLOCK_K)):
        left = K - step * BLOCK_K
        a = tl.load(a_tile, mask=k[None, :] < left, other=0.0)
        b = tl.load(b_tile, mask=k[:, None] < left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += BLOCK_K * s_ak
        b_tile += BLOCK_K * s_bk

    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + rows[:, None] * s_cm + cols[None, :] * s_cn, acc.to(c_ptr.dtype.element_ty),
             mask=(rows[:, None] < M) & (cols[None, :] < N))


@tessera.jit
def user_matmul_residual(a_ptr, b_ptr, c_ptr, r_ptr, M, N, K, s_am, s_ak, s_bk, s_bn, s_cm, s_cn, s_rm, s_rn,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                         GROUP_M: tl.constexpr):
    """user_matmul with a fused residual, written as a user adds one: C = A @ B + R (issue 35's
    acceptance 3: the same rate as tk.matmul(a, b, epilogue=...) with a residual)."""
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    group_start = (pid // per_group) * GROUP_M
    rows_in_group = tl.minimum(tiles_m - group_start, GROUP_M)
    tile_m = group_start + (pid % per_group) % rows_in_group
    tile_n = (pid % per_group) // rows_in_group

    m = (tile_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    n = (tile_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    k = tl.arange(0, BLOCK_K)
    a_tile = a_ptr + m[:, None] * s_am + k[None, :] * s_ak
    b_tile = b_ptr + k[:, None] * s_bk + n[None, :] * s_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for step in range(0, tl.cdiv(K, BLOCK_K)):
        left = K - step * BLOCK_K
        a = tl.load(a_tile, mask=k[None, :] < left, other=0.0)
        b = tl.load(b_tile, mask=k[:, None] < left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += BLOCK_K * s_ak
        b_tile += BLOCK_K * s_bk

    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    acc += tl.load(r_ptr + rows[:, None] * s_rm + cols[None, :] * s_rn, mask=mask)
    tl.store(c_ptr + rows[:, None] * s_cm + cols[None, :] * s_cn, acc.to(c_ptr.dtype.element_ty), mask=mask)


@tessera.jit
def user_persistent_matmul_residual(a_desc, b_desc, c_ptr, r_ptr, M, N, K, s_cm, s_cn, s_rm, s_rn,
                                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                                    GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr, RESIDUAL: tl.constexpr):
    """A persistent GEMM as Triton's tutorial 09 writes one (TMA descriptors, warp_specialize on the
    tile loop), plus one line for a residual (RESIDUAL): C = A @ B (+ R). With num_warps=4 tessera
    runs it as two consumer warpgroups on alternate tiles and a producer (docs/tma.md, ping-pong)."""
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_tiles = num_pid_m * num_pid_n
    num_pid_in_group = GROUP_M * num_pid_n
    for tile_id in tl.range(tl.program_id(0), num_tiles, NUM_SMS, warp_specialize=True):
        group_id = tile_id // num_pid_in_group
        first_pid_m = group_id * GROUP_M
        group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
        pid_m = first_pid_m + (tile_id % group_size_m)
        pid_n = (tile_id % num_pid_in_group) // group_size_m
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(tl.cdiv(K, BLOCK_K)):
            a = a_desc.load([pid_m * BLOCK_M, ki * BLOCK_K])
            b = b_desc.load([ki * BLOCK_K, pid_n * BLOCK_N])
            acc = tl.dot(a, b, acc)
        rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        if RESIDUAL:
            acc += tl.load(r_ptr + rows[:, None] * s_rm + cols[None, :] * s_rn, mask=mask, other=0.0)
        tl.store(c_ptr + rows[:, None] * s_cm + cols[None, :] * s_cn, acc.to(c_ptr.dtype.element_ty), mask=mask)
