"""The triton.language surface on the GPU against torch (docs/language.md):
math and libdevice functions, integer ops with C semantics, softmax, shape
ops, reduce/scan with combine functions, argmax/argmin, dot, atomics,
break/continue/return, block pointers, Philox random numbers and fp8 casts.
Kernels: lang_ops_kernels.py. Outputs start as NaN (gpu_helpers.poisoned)."""
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402
import lang_ops_kernels as k  # noqa: E402
from gpu_helpers import assert_rel_err, poisoned  # noqa: E402

FLOATS = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16, "fp64": torch.float64}
# ||out - ref|| / ||ref|| per dtype (16-bit results are rounded once more than the f32 reference).
TOL = {torch.float32: 2e-6, torch.float64: 1e-12, torch.float16: 2e-3, torch.bfloat16: 1e-2}


def run(kernel, grid, *args, **meta):
    kernel[grid](*args, **meta)
    torch.cuda.synchronize()


# ------------------------------------------------------------------ math

UNARY = {
    "sin": (torch.sin, -10, 10), "cos": (torch.cos, -10, 10), "rsqrt": (torch.rsqrt, 0.01, 100),
    "erf": (torch.erf, -3, 3), "floor": (torch.floor, -50, 50), "ceil": (torch.ceil, -50, 50),
    "sqrt_rn": (torch.sqrt, 0, 100), "sigmoid": (torch.sigmoid, -20, 20), "tanh": (torch.tanh, -5, 5),
    "log1p": (torch.log1p, -0.9, 10), "expm1": (torch.expm1, -5, 5), "asin": (torch.asin, -1, 1),
    "round": (lambda x: torch.sign(x) * torch.floor(x.abs() + 0.5), -20, 20), "trunc": (torch.trunc, -20, 20),
}


@pytest.mark.parametrize("dtype", list(FLOATS), ids=list(FLOATS))
@pytest.mark.parametrize("fn", list(UNARY))
def test_unary_math(fn, dtype):
    ref_fn, lo, hi = UNARY[fn]
    n = 3000
    t = FLOATS[dtype]
    x = (torch.rand(n, device="cuda", dtype=torch.float64) * (hi - lo) + lo).to(t)
    out = poisoned(n, t)
    run(k.unary_kernel, (tessera.cdiv(n, 256),), x, out, n, FN=fn, BLOCK=256)
    ref = ref_fn(x.double())
    tol = 5e-4 if fn == "rsqrt" and t == torch.float32 else TOL[t]  # rsqrt.approx, as Triton
    assert_rel_err(out, ref, max(tol, 1e-6 if t == torch.float32 else tol), f"{fn} {dtype}")


BINARY = {
    "fma": lambda x, y: x * y + x, "fdiv": lambda x, y: x / y, "div_rn": lambda x, y: x / y,
    "pow": lambda x, y: torch.pow(x.abs(), y), "atan2": torch.atan2, "fmod": torch.fmod,
    "hypot": torch.hypot, "clamp": lambda x, y: torch.maximum(torch.minimum(x, y), -y),
}


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16", "fp64"])
@pytest.mark.parametrize("fn", list(BINARY))
def test_binary_math(fn, dtype):
    n = 2000
    t = FLOATS[dtype]
    x = (torch.randn(n, device="cuda", dtype=torch.float64) * 3).to(t)
    y = (torch.rand(n, device="cuda", dtype=torch.float64) * 2 + 0.5).to(t)
    if fn == "pow":
        x = x.abs()
    out = poisoned(n, t)
    run(k.binary_kernel, (tessera.cdiv(n, 256),), x, y, out, n, FN=fn, BLOCK=256)
    assert_rel_err(out, BINARY[fn](x.double(), y.double()), TOL[t], f"{fn} {dtype}")


def c_div(x, y):
    return torch.div(x, y, rounding_mode="trunc")


INTS = {
    "floordiv": c_div, "mod": lambda x, y: x - c_div(x, y) * y, "shl": lambda x, y: x << (y & 15),
    "shr": lambda x, y: x >> (y & 15), "and": torch.bitwise_and, "or": torch.bitwise_or,
    "xor": torch.bitwise_xor, "not": lambda x, y: ~x,
}


@pytest.mark.parametrize("fn", list(INTS) + ["umulhi"])
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_integer_ops_have_c_semantics(fn, dtype):
    """// and % truncate toward zero (like C and Triton), >> is arithmetic for signed ints."""
    n = 4000
    x = torch.randint(-100000, 100000, (n,), device="cuda", dtype=dtype)
    y = torch.randint(1, 50, (n,), device="cuda", dtype=dtype) * torch.where(torch.rand(n, device="cuda") < 0.5, -1, 1).to(dtype)
    if fn in ("shl", "shr"):
        y = y.abs()
    out = torch.zeros(n, device="cuda", dtype=dtype)
    run(k.int_kernel, (tessera.cdiv(n, 256),), x, y, out, n, FN=fn, BLOCK=256)
    if fn == "umulhi":
        bits = 32 if dtype == torch.int32 else 64
        xs, ys = x.cpu().numpy().astype(object), y.cpu().numpy().astype(object)
        mask = (1 << bits) - 1
        ref = [(((a & mask) * (b & mask)) >> bits) for a, b in zip(xs, ys)]
        ref = [r - (1 << bits) if r >= 1 << (bits - 1) else r for r in ref]
        assert out.cpu().tolist() == ref
        return
    torch.testing.assert_close(out, INTS[fn](x, y), rtol=0, atol=0)


@pytest.mark.parametrize("n_cols", [1, 37, 128, 1000])
def test_softmax_over_the_last_axis(n_cols):
    rows = 64
    x = torch.randn(rows, n_cols, device="cuda") * 5
    out = poisoned((rows, n_cols), torch.float32)
    run(k.softmax_kernel, (rows // 4,), x, out, n_cols, ROWS=4, COLS=tessera.next_power_of_2(n_cols))
    assert_rel_err(out, torch.softmax(x.double(), dim=1), 1e-5, f"softmax {n_cols}")


# ------------------------------------------------------------------ shapes

def shape_reference(op, x):
    m, n = x.shape
    if op in ("trans", "T"):
        return x.t().reshape(-1)
    if op == "reshape":
        return x.reshape(-1)
    if op == "join":
        return torch.stack([x, x * 2], dim=-1).reshape(-1)
    if op == "split":
        pairs = x.reshape(m, n // 2, 2)
        return torch.stack([pairs[..., 1], pairs[..., 0]], dim=-1).reshape(-1)
    if op == "cat":
        return torch.cat([x, x + 1], dim=0).reshape(-1)
    if op == "flip":
        return x.flip(1).reshape(-1)
    if op == "flip0":
        return x.flip(0).reshape(-1)
    return x.sum(1, keepdim=True).expand(m, n).reshape(-1)


@pytest.mark.parametrize("num_warps", [1, 4, 8])
@pytest.mark.parametrize("m, n", [(16, 32), (64, 64), (2, 4), (128, 8)])
@pytest.mark.parametrize("op", ["trans", "T", "reshape", "join", "split", "cat", "flip", "flip0", "bcast"])
def test_shape_ops(op, m, n, num_warps):
    x = torch.randn(m, n, device="cuda")
    ref = shape_reference(op, x)
    out = poisoned(ref.numel(), torch.float32)
    run(k.shape_kernel, (1,), x, out, OP=op, M=m, N=n, num_warps=num_warps)
    tol = 1e-5 if op == "bcast" else 0
    torch.testing.assert_close(out, ref, rtol=tol, atol=tol)


def test_permute_3d():
    a, b, c = 4, 8, 16
    x = torch.randn(a, b, c, device="cuda")
    out = poisoned(a * b * c, torch.float32)
    run(k.permute3_kernel, (1,), x, out, A=a, B=b, C=c)
    torch.testing.assert_close(out, x.permute(2, 0, 1).reshape(-1), rtol=0, atol=0)


# ------------------------------------------------------------------ reductions and scans

@pytest.mark.parametrize("num_warps", [1, 4, 8])
@pytest.mark.parametrize("m, n, axis", [(16, 64, 1), (16, 64, 0), (4, 1024, 1), (256, 4, 0), (2, 2, 1)])
@pytest.mark.parametrize("op", ["reduce", "argmax", "argmin", "argmax_only", "xor"])
def test_reductions(op, m, n, axis, num_warps):
    # Small integers as floats: sums are exact, and ties test the first-index rule.
    x = torch.randint(-20, 20, (m, n), device="cuda").float()
    size = m if axis == 1 else n
    out = poisoned(size, torch.float32)
    idx = torch.full((size,), -7, device="cuda", dtype=torch.int32)
    run(k.reduce_kernel, (1,), x, out, idx, OP=op, AXIS=axis, M=m, N=n, num_warps=num_warps)
    if op == "reduce":
        torch.testing.assert_close(out, x.sum(axis), rtol=0, atol=0)
        return
    if op == "xor":
        bits = x.view(torch.int32).cpu().numpy()
        ref = np.bitwise_xor.reduce(bits, axis=axis)
        assert (idx.cpu().numpy() == ref).all()
        return
    values = x.cpu().numpy()
    first = np.argmin(values, axis=axis) if op == "argmin" else np.argmax(values, axis=axis)  # first of ties
    assert (idx.cpu().numpy() == first).all(), op
    if op in ("argmax", "argmin"):
        best = values.min(axis=axis) if op == "argmin" else values.max(axis=axis)
        assert (out.cpu().numpy() == best).all()


@pytest.mark.parametrize("num_warps", [1, 4])
@pytest.mark.parametrize("m, n, axis", [(16, 64, 1), (16, 64, 0), (2, 1024, 1), (128, 2, 0)])
@pytest.mark.parametrize("op", ["cumsum", "cumsum_reverse", "cumprod", "pair"])
def test_scans(op, m, n, axis, num_warps):
    if op == "cumprod" or op == "pair":
        x = torch.where(torch.rand(m, n, device="cuda") < 0.5, -1.0, 1.0)  # exact products
    else:
        x = torch.randint(-20, 20, (m, n), device="cuda").float()
    out = poisoned((m, n), torch.float32)
    run(k.scan_kernel, (1,), x, out, OP=op, AXIS=axis, M=m, N=n, num_warps=num_warps)
    if op == "cumsum":
        ref = torch.cumsum(x, axis)
    elif op == "cumsum_reverse":
        ref = torch.cumsum(x.flip(axis), axis).flip(axis)
    elif op == "cumprod":
        ref = torch.cumprod(x, axis)
    else:
        ref = torch.cumsum(x, axis) + torch.cumprod(x, axis)
    torch.testing.assert_close(out, ref, rtol=0, atol=0)


@pytest.mark.parametrize("acc_in", [0, 1])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("mnk, blocks", [((128, 128, 64), (64, 64, 32)), ((100, 70, 33), (32, 32, 16)),
                                         ((16, 16, 16), (16, 16, 16)), ((256, 64, 512), (128, 32, 64))])
def test_dot(mnk, blocks, dtype, acc_in):
    m, n, kk = mnk
    bm, bn, bk = blocks
    a = torch.randn(m, kk, device="cuda").to(dtype)
    b = torch.randn(kk, n, device="cuda").to(dtype)
    c = torch.randn(m, n, device="cuda") if acc_in else poisoned((m, n), torch.float32)
    ref = a.double() @ b.double() + (c.double() if acc_in else 0)
    run(k.dot_kernel, (tessera.cdiv(m, bm), tessera.cdiv(n, bn)), a, b, c, m, n, kk, BM=bm, BN=bn, BK=bk,
        ACC_IN=acc_in)
    assert_rel_err(c, ref, 1e-5, f"dot {mnk} {dtype}")


# ------------------------------------------------------------------ atomics

def test_histogram_with_atomic_add():
    n, bins = 100_000, 64
    x = torch.randint(0, bins, (n,), device="cuda", dtype=torch.int32)
    hist = torch.zeros(bins, device="cuda", dtype=torch.int32)
    run(k.histogram_kernel, (tessera.cdiv(n, 256),), x, hist, n, BLOCK=256)
    torch.testing.assert_close(hist, torch.bincount(x, minlength=bins).int(), rtol=0, atol=0)


@pytest.mark.parametrize("sign", [1, -1, 0])
def test_float_atomic_max_min_add(sign):
    n = 5000
    x = torch.randn(n, device="cuda")
    if sign:
        x = x.abs() * sign
    out = torch.tensor([-math.inf, math.inf, 0.0] + [-math.inf] * 4, device="cuda")
    run(k.atomic_float_kernel, (tessera.cdiv(n, 256),), x, out, n, BLOCK=256)
    assert out[0].item() == x.max().item() and out[1].item() == x.min().item()
    assert abs(out[2].item() - x.double().sum().item()) < 1e-3 * n ** 0.5
    lanes = torch.arange(n, device="cuda") % 4
    for j in range(4):
        assert out[3 + j].item() == x[lanes == j].max().item()


def test_atomics_return_old_values_and_cas_xchg_bitwise():
    programs, block = 40, 64
    counter = torch.zeros(1, device="cuda", dtype=torch.int32)
    tickets = torch.full((programs,), -1, device="cuda", dtype=torch.int32)
    bits = torch.zeros(5 * block + programs * block, device="cuda", dtype=torch.int32)
    bits[2 * block:3 * block] = -1
    run(k.ticket_kernel, (programs,), counter, tickets, bits, BLOCK=block)
    assert counter.item() == programs
    assert sorted(tickets.tolist()) == list(range(programs))  # each program got a distinct old value
    expect_or = 0
    expect_xor = 0
    for p in range(programs):
        expect_or |= 1 << (p % 31)
        expect_xor ^= 1 << (p % 31)
    as_i32 = lambda v: v - (1 << 32) if v >= 1 << 31 else v  # noqa: E731
    assert bits[:block].tolist() == [as_i32(expect_or)] * block
    assert bits[block:2 * block].tolist() == [as_i32(expect_xor)] * block
    assert bits[2 * block:3 * block].tolist() == [as_i32(~expect_or & 0xFFFFFFFF)] * block
    assert bits[3 * block:3 * block + programs].tolist() == [p + 1 for p in range(programs)]  # cas from 0
    assert bits[4 * block:4 * block + programs].tolist() == [7] * programs  # xchg(cas's old value 0 + 7)
    # atomic_or's old values: some of the bits set before, never more than the final value
    olds = bits[5 * block:].view(programs, block).cpu().numpy().view(np.uint32)
    assert ((olds & ~np.uint32(expect_or)) == 0).all()


# ------------------------------------------------------------------ control flow and block pointers

def test_break_continue_and_early_return():
    n, block, limit = 12, 64, 300.0
    x = torch.rand(n, block, device="cuda") * 2
    out = poisoned((n + 3) * (block + 2), torch.float32)
    run(k.control_kernel, (n + 3,), x, out, n, limit, BLOCK=block)  # programs >= n return at once
    acc = torch.zeros(block, device="cuda", dtype=torch.float64)
    steps = 0
    for i in range(n):
        if i % 3 == 1:
            continue
        acc += x[i].double()
        steps += 1
        if acc.sum().item() > limit:
            break
    rows = out.view(n + 3, block + 2)
    for pid in range(n):
        assert_rel_err(rows[pid, :block], acc, 1e-6, "loop with break/continue")
        assert rows[pid, block].item() == steps
        assert rows[pid, block + 1].item() == min(pid * 7, n - 1)  # _clamped's early return
    assert torch.isnan(rows[n:]).all(), "programs past n must return before storing"


@pytest.mark.parametrize("m, n", [(100, 70), (64, 64), (5, 3)])
def test_block_pointers_with_boundary_checks(m, n):
    a = torch.randn(m, n, device="cuda")
    out = poisoned((m, n), torch.float32)
    run(k.block_ptr_kernel, (tessera.cdiv(m, 32),), a, out, m, n, BM=32, BN=32)
    torch.testing.assert_close(out, a * 2 + 1, rtol=0, atol=0)


# ------------------------------------------------------------------ random and fp8

PHILOX_ROUND_A, PHILOX_ROUND_B = 0xD2511F53, 0xCD9E8D57
PHILOX_KEY_A, PHILOX_KEY_B = 0x9E3779B9, 0xBB67AE85


def philox_reference(seed, offsets, rounds=10):
    """Philox-4x32-10 on the host for 32-bit counters (c0 = offset, c1 = c2 = c3 = 0)."""
    mask = 0xFFFFFFFF
    c0 = offsets.astype(np.uint64) & mask
    c1 = np.zeros_like(c0)
    c2 = np.zeros_like(c0)
    c3 = np.zeros_like(c0)
    seed &= 0xFFFFFFFFFFFFFFFF
    k0, k1 = np.uint64(seed & mask), np.uint64((seed >> 32) & mask)
    for _ in range(rounds):
        prev0, prev2 = c0, c2
        c0 = ((np.uint64(PHILOX_ROUND_B) * prev2) >> np.uint64(32)) ^ c1 ^ k0
        c2 = ((np.uint64(PHILOX_ROUND_A) * prev0) >> np.uint64(32)) ^ c3 ^ k1
        c1 = (np.uint64(PHILOX_ROUND_B) * prev2) & np.uint64(mask)
        c3 = (np.uint64(PHILOX_ROUND_A) * prev0) & np.uint64(mask)
        k0 = (k0 + np.uint64(PHILOX_KEY_A)) & np.uint64(mask)
        k1 = (k1 + np.uint64(PHILOX_KEY_B)) & np.uint64(mask)
    return c0.astype(np.uint32), c1.astype(np.uint32)


def uniform_reference(bits):
    x = bits.view(np.int32)
    x = np.where(x < 0, -x - 1, x)
    return x.astype(np.float32) * np.float32(4.6566127342e-10)


@pytest.mark.parametrize("seed", [0, 42, 123456789, -5])
def test_random_matches_triton_philox(seed):
    n = 5000
    out = poisoned(2 * n, torch.float32)
    ints = torch.zeros(n, device="cuda", dtype=torch.int32)
    run(k.random_kernel, (tessera.cdiv(n, 256),), out, ints, seed, n, BLOCK=256)
    r0, r1 = philox_reference(seed, np.arange(n))
    assert (ints.cpu().numpy().view(np.uint32) == r0).all()
    np.testing.assert_array_equal(out[:n].cpu().numpy(), uniform_reference(r0))
    u1, u2 = np.maximum(uniform_reference(r0), 1e-7), uniform_reference(r1)
    normal = np.sqrt(-2.0 * np.log(u1.astype(np.float64))) * np.cos(2 * np.pi * u2.astype(np.float64))
    np.testing.assert_allclose(out[n:].cpu().numpy(), normal, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("e5", [0, 1])
def test_fp8_casts(e5):
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("fp8 conversions need sm_90")
    dtype = torch.float8_e5m2 if e5 else torch.float8_e4m3fn
    n = 4096
    x = torch.randn(n, device="cuda") * (1000 if e5 else 100)
    out = torch.zeros(n, device="cuda", dtype=dtype)
    back = poisoned(n, torch.float32)
    run(k.fp8_kernel, (tessera.cdiv(n, 256),), x, out, back, n, E5=e5, BLOCK=256)
    limit = 57344.0 if e5 else 448.0
    ref = x.clamp(-limit, limit).to(dtype)  # satfinite
    assert (out.view(torch.uint8) == ref.view(torch.uint8)).all()
    torch.testing.assert_close(back, ref.float(), rtol=0, atol=0)


# ------------------------------------------------------------------ loop-carried sums

LANE_SUMS = ["online", "read_in_loop", "from_one", "plus_one", "squared"]


def _lane_sums_kernel():
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).resolve().parents[1] / "python" / "lang_kernels" / "lane_sums.py"
    spec = importlib.util.spec_from_file_location("lane_sums", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.row_sums


@pytest.mark.parametrize("block", [16, 32, 64])
@pytest.mark.parametrize("variant", LANE_SUMS)
def test_loop_carried_row_sums(variant, block):
    """Online-softmax row sums over the loop (tests/python/lang_kernels/lane_sums.py): "online"
    keeps per-lane partial sums through its loop at BLOCK 16 and 32 (defer-lane-reductions),
    the other variants and BLOCK 64 (a sum across warps) reduce whole each step; all against
    float64."""
    kernel = _lane_sums_kernel()
    n = 4 * block
    x = torch.randn(128, n, device="cuda", dtype=torch.float32) * 4
    out = poisoned(256, torch.float32)
    run(kernel, (1,), x, out, n, BLOCK=block, VARIANT=variant, num_warps=4)
    xd = x.double() * 1.0
    blocks = xd.view(128, 4, block)
    m = torch.full((128,), -math.inf, dtype=torch.float64, device="cuda")
    l = torch.full((128,), 1.0 if variant == "from_one" else 0.0, dtype=torch.float64, device="cuda")
    for j in range(4):
        m_new = torch.maximum(m, blocks[:, j].max(dim=1).values)
        s = torch.exp2(blocks[:, j] - m_new[:, None]).sum(dim=1)
        l = l * torch.exp2(m - m_new) + (s * s if variant == "squared" else s) + (1.0 if variant == "plus_one" else 0.0)
        m = m_new
    assert_rel_err(out[:128], l, 1e-5, f"{variant} sums")
    assert_rel_err(out[128:], m, 1e-7, f"{variant} maxima")
