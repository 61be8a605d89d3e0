"""Kernels of tests/gpu/test_lang_ops.py: one small kernel per part of the
triton.language surface (docs/language.md), written as Triton users write them."""
import tessera
import tessera.language as tl
from tessera.language.extra.cuda import libdevice


# ------------------------------------------------------------------ math

@tessera.jit
def unary_kernel(x_ptr, out_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1)
    if FN == "sin":
        r = tl.sin(x)
    elif FN == "cos":
        r = tl.cos(x)
    elif FN == "rsqrt":
        r = tl.rsqrt(x)
    elif FN == "erf":
        r = tl.erf(x)
    elif FN == "floor":
        r = tl.floor(x)
    elif FN == "ceil":
        r = tl.ceil(x)
    elif FN == "sqrt_rn":
        r = tl.sqrt_rn(x)
    elif FN == "sigmoid":
        r = tl.sigmoid(x)
    elif FN == "tanh":
        r = libdevice.tanh(x)
    elif FN == "log1p":
        r = libdevice.log1p(x)
    elif FN == "expm1":
        r = tl.math.expm1(x)
    elif FN == "asin":
        r = libdevice.asin(x)
    elif FN == "round":
        r = libdevice.round(x)
    else:
        r = libdevice.trunc(x)
    tl.store(out_ptr + offs, r, mask=m)


@tessera.jit
def binary_kernel(x_ptr, y_ptr, out_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1)
    y = tl.load(y_ptr + offs, mask=m, other=1)
    if FN == "fma":
        r = tl.fma(x, y, x)
    elif FN == "fdiv":
        r = tl.fdiv(x, y)
    elif FN == "div_rn":
        r = tl.div_rn(x, y)
    elif FN == "pow":
        r = libdevice.pow(x, y)
    elif FN == "atan2":
        r = libdevice.atan2(x, y)
    elif FN == "fmod":
        r = libdevice.fmod(x, y)
    elif FN == "hypot":
        r = libdevice.hypot(x, y)
    else:
        r = tl.clamp(x, -y, y)
    tl.store(out_ptr + offs, r, mask=m)


@tessera.jit
def int_kernel(x_ptr, y_ptr, out_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1)
    y = tl.load(y_ptr + offs, mask=m, other=1)
    if FN == "floordiv":
        r = x // y
    elif FN == "mod":
        r = x % y
    elif FN == "shl":
        r = x << (y & 15)
    elif FN == "shr":
        r = x >> (y & 15)
    elif FN == "and":
        r = x & y
    elif FN == "or":
        r = x | y
    elif FN == "xor":
        r = x ^ y
    elif FN == "not":
        r = ~x
    else:
        r = tl.umulhi(x, y)
    tl.store(out_ptr + offs, r, mask=m)


@tessera.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, ROWS: tl.constexpr, COLS: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, COLS)
    m = cols[None, :] < n_cols
    offs = rows[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=m, other=-float("inf"))
    tl.store(out_ptr + offs, tl.softmax(x), mask=m)


# ------------------------------------------------------------------ shapes

@tessera.jit
def shape_kernel(x_ptr, out_ptr, OP: tl.constexpr, M: tl.constexpr, N: tl.constexpr):
    """x is M x N (row-major); out gets the result, row-major."""
    x = tl.load(x_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    if OP == "trans":
        r = tl.reshape(tl.trans(x), (M * N, ))
    elif OP == "T":
        r = tl.ravel(x.T)
    elif OP == "reshape":
        r = tl.ravel(tl.reshape(x, (N, M)))
    elif OP == "join":
        r = tl.ravel(tl.join(x, x * 2))
    elif OP == "split":
        a, b = tl.split(tl.reshape(x, (M, N // 2, 2)))
        r = tl.ravel(tl.join(b, a))  # swaps neighbours
    elif OP == "cat":
        r = tl.ravel(tl.cat(x, x + 1, can_reorder=True))
    elif OP == "flip":
        r = tl.ravel(tl.flip(x))
    elif OP == "flip0":
        r = tl.ravel(tl.flip(x, 0))
    else:  # broadcast_to / expand_dims
        col = tl.sum(x, axis=1)
        r = tl.ravel(tl.broadcast_to(tl.expand_dims(col, 1), (M, N)))
    tl.store(out_ptr + tl.arange(0, r.shape[0]), r)


@tessera.jit
def permute3_kernel(x_ptr, out_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    offs = tl.arange(0, A)[:, None, None] * (B * C) + tl.arange(0, B)[None, :, None] * C + tl.arange(0, C)[None, None, :]
    x = tl.load(x_ptr + offs)
    y = tl.permute(x, (2, 0, 1))  # C x A x B
    tl.store(out_ptr + tl.arange(0, A * B * C), tl.ravel(y))


# ------------------------------------------------------------------ reductions and scans

@tessera.jit
def _add(a, b):
    return a + b


@tessera.jit
def _mul_add(a0, b0, a1, b1):
    return a0 + a1, b0 * b1


@tessera.jit
def reduce_kernel(x_ptr, out_ptr, idx_ptr, OP: tl.constexpr, AXIS: tl.constexpr, M: tl.constexpr,
                  N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    if OP == "reduce":
        r = tl.reduce(x, AXIS, _add)
        i = r.to(tl.int32)
    elif OP == "argmax":
        r, i = tl.max(x, axis=AXIS, return_indices=True)
    elif OP == "argmin":
        r, i = tl.min(x, axis=AXIS, return_indices=True)
    elif OP == "argmax_only":
        i = tl.argmax(x, AXIS)
        r = i.to(tl.float32)
    else:  # xor_sum of the bits
        i = tl.xor_sum(x.to(tl.int32, bitcast=True), axis=AXIS)
        r = i.to(tl.float32)
    n: tl.constexpr = r.shape[0]  # as in Triton, a plain `n = ...` would make a scalar tensor
    tl.store(out_ptr + tl.arange(0, n), r)
    tl.store(idx_ptr + tl.arange(0, n), i)


@tessera.jit
def scan_kernel(x_ptr, out_ptr, OP: tl.constexpr, AXIS: tl.constexpr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    if OP == "cumsum":
        r = tl.cumsum(x, axis=AXIS)
    elif OP == "cumsum_reverse":
        r = tl.cumsum(x, axis=AXIS, reverse=True)
    elif OP == "cumprod":
        r = tl.cumprod(x, axis=AXIS)
    else:  # two values at once
        s, p = tl.associative_scan((x, x), AXIS, _mul_add)
        r = s + p
    tl.store(out_ptr + offs, r)


@tessera.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
               ACC_IN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    if ACC_IN:
        acc = tl.load(c_ptr + rm[:, None] * N + rn[None, :], mask=(rm[:, None] < M) & (rn[None, :] < N), other=0.0)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K),
                    other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N),
                    other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


# ------------------------------------------------------------------ atomics

@tessera.jit
def histogram_kernel(x_ptr, hist_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    bins = tl.load(x_ptr + offs, mask=m, other=0)
    tl.atomic_add(hist_ptr + bins, 1, mask=m)


@tessera.jit
def atomic_float_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.atomic_max(out_ptr, tl.max(tl.where(m, x, -float("inf")), axis=0))
    tl.atomic_min(out_ptr + 1, tl.min(tl.where(m, x, float("inf")), axis=0))
    tl.atomic_add(out_ptr + 2, tl.sum(x, axis=0), sem="relaxed")
    tl.atomic_max(out_ptr + 3 + offs % 4, x, mask=m)


@tessera.jit
def ticket_kernel(counter_ptr, tickets_ptr, bits_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    t = tl.atomic_add(counter_ptr, 1)  # a scalar: one ticket per program
    tl.store(tickets_ptr + pid, t)
    lanes = tl.arange(0, BLOCK)
    old = tl.atomic_or(bits_ptr + lanes, 1 << (pid % 31))
    tl.atomic_xor(bits_ptr + BLOCK + lanes, 1 << (pid % 31))
    tl.atomic_and(bits_ptr + 2 * BLOCK + lanes, ~(1 << (pid % 31)))
    prev = tl.atomic_cas(bits_ptr + 3 * BLOCK + pid, 0, pid + 1)
    tl.atomic_xchg(bits_ptr + 4 * BLOCK + pid, prev + 7)
    tl.store(bits_ptr + 5 * BLOCK + pid * BLOCK + lanes, old)


# ------------------------------------------------------------------ control flow and block pointers

@tessera.jit
def _clamped(i, n):
    if i >= n:
        return n - 1
    return i


@tessera.jit
def control_kernel(x_ptr, out_ptr, n, limit, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid >= n:
        return
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, ), dtype=tl.float32)
    steps = 0
    for i in range(0, n):
        if i % 3 == 1:
            continue
        v = tl.load(x_ptr + i * BLOCK + offs)
        acc += v
        steps += 1
        if tl.sum(acc, axis=0) > limit:
            break
    tl.store(out_ptr + pid * (BLOCK + 2) + offs, acc)
    tl.store(out_ptr + pid * (BLOCK + 2) + BLOCK, steps.to(tl.float32))
    tl.store(out_ptr + pid * (BLOCK + 2) + BLOCK + 1, _clamped(pid * 7, n).to(tl.float32))


@tessera.jit
def block_ptr_kernel(a_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)
    a = tl.make_block_ptr(a_ptr, shape=(M, N), strides=(N, 1), offsets=(pid * BM, 0), block_shape=(BM, BN),
                          order=(1, 0))
    o = tl.make_block_ptr(out_ptr, shape=(M, N), strides=(N, 1), offsets=(pid * BM, 0), block_shape=(BM, BN),
                          order=(1, 0))
    for k in range(0, N, BN):
        x = tl.load(a, boundary_check=(0, 1), padding_option="zero")
        tl.store(o, x * 2 + 1, boundary_check=(0, 1))
        a = tl.advance(a, (0, BN))
        o = tl.advance(o, (0, BN))


# ------------------------------------------------------------------ random and fp8

@tessera.jit
def random_kernel(out_ptr, iout_ptr, seed, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(iout_ptr + offs, tl.randint(seed, offs), mask=m)
    tl.store(out_ptr + offs, tl.rand(seed, offs), mask=m)
    tl.store(out_ptr + n + offs, tl.randn(seed, offs), mask=m)


@tessera.jit
def fp8_kernel(x_ptr, out_ptr, back_ptr, n, E5: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    y = x.to(tl.float8e5) if E5 else x.to(tl.float8e4nv)
    tl.store(out_ptr + offs, y, mask=m)
    tl.store(back_ptr + offs, y.to(tl.float32), mask=m)
