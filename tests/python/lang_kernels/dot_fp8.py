import tessera
import tessera.language as tl


@tessera.jit
def as_fp8(x, E5: tl.constexpr):
    if E5:
        return x.to(tl.float8e5, bitcast=True)
    else:
        return x.to(tl.float8e4nv, bitcast=True)


@tessera.jit
def dot_fp8_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                   A_E5: tl.constexpr, B_E5: tl.constexpr, OUT_F16: tl.constexpr, IMPRECISE: tl.constexpr,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # fp8 operands arrive as bytes (*u8: numpy has no fp8 dtype) or as fp8 (*fp8e4nv, *fp8e5);
    # A_E5 / B_E5: e5m2, else e4m3. OUT_F16: out_dtype float16, else float32.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    if OUT_F16:
        acc = tl.zeros((BM, BN), dtype=tl.float16)
    else:
        acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a_mask = (rm[:, None] < M) & (k0 + rk[None, :] < K)
        b_mask = (k0 + rk[:, None] < K) & (rn[None, :] < N)
        a = as_fp8(tl.load(a_ptr + rm[:, None] * stride_am + (k0 + rk[None, :]), mask=a_mask, other=0.0), A_E5)
        b = as_fp8(tl.load(b_ptr + (k0 + rk[:, None]) * stride_bk + rn[None, :], mask=b_mask, other=0.0), B_E5)
        acc = tl.dot(a, b, acc, max_num_imprecise_acc=IMPRECISE, out_dtype=acc.dtype)
    c_mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc, mask=c_mask)


@tessera.jit
def widen_fp8_kernel(x_ptr, h_ptr, f_ptr, E5: tl.constexpr, BLOCK: tl.constexpr):
    # Every code of an fp8 type to f16 and to f32 (x holds the 256 bytes).
    offs = tl.arange(0, BLOCK)
    x = as_fp8(tl.load(x_ptr + offs), E5)
    tl.store(h_ptr + offs, x.to(tl.float16))
    tl.store(f_ptr + offs, x.to(tl.float32))


@tessera.jit
def dot_out_bf16_kernel(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :]
    a = as_fp8(tl.load(a_ptr + offs), 1)
    c = tl.dot(a, a, out_dtype=tl.bfloat16)
    tl.store(c_ptr + offs, c.to(tl.float32))


@tessera.jit
def chain_dot_fp8_kernel(X, Y, W, Z, E5: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         BLOCK_K: tl.constexpr):
    # Triton's test_dot 'chain-dot' fp8 case: z = x @ y in f32, narrowed to fp8, then z @ w.
    off_m = tl.arange(0, BLOCK_M)
    off_n = tl.arange(0, BLOCK_N)
    off_k = tl.arange(0, BLOCK_K)
    x = as_fp8(tl.load(X + off_m[:, None] * BLOCK_K + off_k[None, :]), E5)
    y = as_fp8(tl.load(Y + off_k[:, None] * BLOCK_N + off_n[None, :]), E5)
    w = as_fp8(tl.load(W + off_n[:, None] * BLOCK_N + off_n[None, :]), E5)
    z = tl.dot(x, y, input_precision="ieee", out_dtype=tl.float32)
    z = tl.dot(z.to(w.dtype), w, input_precision="ieee", out_dtype=tl.float32)
    tl.store(Z + off_m[:, None] * BLOCK_N + off_n[None, :], z)


@tessera.jit
def chain_dot_fp8_p_kernel(X, Y, W, P, Z, E5: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                           BLOCK_K: tl.constexpr):
    # The chain dot that also stores its fp8 P (widened to f32): the second dot is then checked
    # against the P the kernel computed, apart from how the first dot rounded.
    off_m = tl.arange(0, BLOCK_M)
    off_n = tl.arange(0, BLOCK_N)
    off_k = tl.arange(0, BLOCK_K)
    x = as_fp8(tl.load(X + off_m[:, None] * BLOCK_K + off_k[None, :]), E5)
    y = as_fp8(tl.load(Y + off_k[:, None] * BLOCK_N + off_n[None, :]), E5)
    w = as_fp8(tl.load(W + off_n[:, None] * BLOCK_N + off_n[None, :]), E5)
    p = tl.dot(x, y, input_precision="ieee", out_dtype=tl.float32).to(w.dtype)
    tl.store(P + off_m[:, None] * BLOCK_N + off_n[None, :], p.to(tl.float32))
    z = tl.dot(p, w, input_precision="ieee", out_dtype=tl.float32)
    tl.store(Z + off_m[:, None] * BLOCK_N + off_n[None, :], z)
