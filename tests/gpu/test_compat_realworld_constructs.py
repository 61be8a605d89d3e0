"""On the GPU, the constructs fixed for real-world libraries (vLLM, flash-linear-attention, Inductor):
a constexpr negative range step with runtime bounds, propagate_nan=tl.PropagateNan.ALL, and the
libdevice functions written in the language (ilogb / ldexp, popc / clz / brev / ffs / mulhi),
against torch / numpy. Their CPU tests: tests/python/test_compat_{linear_attention,propagate_nan,
inductor,libdevice_int}.py."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402
import tessera.language as tl  # noqa: E402
from tessera.language.extra import libdevice  # noqa: E402


@tessera.jit
def reverse_chunks_kernel(x_ptr, out_ptr, T, BT: tl.constexpr, D: tl.constexpr):
    NT = tl.cdiv(T, BT)
    b_h = tl.zeros([BT, D], dtype=tl.float32)
    o_d = tl.arange(0, D)
    for i_t in range(NT - 1, -1, -1):
        o_t = i_t * BT + tl.arange(0, BT)
        m = (o_t < T)[:, None]
        b_h = 0.5 * b_h + tl.load(x_ptr + o_t[:, None] * D + o_d[None, :], mask=m, other=0.0)
        tl.store(out_ptr + o_t[:, None] * D + o_d[None, :], b_h, mask=m)


@pytest.mark.parametrize("T", [1, 45, 300])
def test_reverse_chunk_loop(T):
    BT, D = 16, 32
    x = torch.randn(T, D, device="cuda")
    out = torch.zeros_like(x)
    reverse_chunks_kernel[(1,)](x, out, T, BT=BT, D=D)
    nt = (T + BT - 1) // BT
    xp = torch.zeros(nt * BT, D, device="cuda", dtype=torch.float64)
    xp[:T] = x.double()
    want = torch.zeros_like(xp)
    h = torch.zeros(BT, D, device="cuda", dtype=torch.float64)
    for c in range(nt - 1, -1, -1):
        h = 0.5 * h + xp[c * BT:(c + 1) * BT]
        want[c * BT:(c + 1) * BT] = h
    torch.testing.assert_close(out.double(), want[:T], rtol=1e-5, atol=1e-5)


@tessera.jit
def nan_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(out_ptr + 0 * BLOCK + offs, tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL))
    tl.store(out_ptr + 1 * BLOCK + offs, tl.minimum(x, y, propagate_nan=tl.PropagateNan.ALL))
    tl.store(out_ptr + 2 * BLOCK + offs, tl.maximum(x, y))
    tl.store(out_ptr + 3 * BLOCK + offs, tl.clamp(x, -1.0, 1.0, propagate_nan=tl.PropagateNan.ALL))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_propagate_nan(dtype):
    x = torch.tensor([1.0, float("nan"), -3.0, 0.5, float("nan"), 2.0, -0.5, 4.0], dtype=dtype, device="cuda")
    y = torch.tensor([0.0, 2.0, float("nan"), 0.25, float("nan"), 3.0, -1.5, -4.0], dtype=dtype, device="cuda")
    out = torch.zeros(32, dtype=dtype, device="cuda")
    nan_kernel[(1,)](x, y, out, BLOCK=8)
    out = out.view(4, 8)
    torch.testing.assert_close(out[0], torch.maximum(x, y), equal_nan=True)
    torch.testing.assert_close(out[1], torch.minimum(x, y), equal_nan=True)
    torch.testing.assert_close(out[2], torch.fmax(x, y), equal_nan=True)
    torch.testing.assert_close(out[3], torch.clamp(x, -1.0, 1.0), equal_nan=True)


@tessera.jit
def frexp_like_kernel(x_ptr, mant_ptr, exp_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = libdevice.ilogb(x) + 1
    tl.store(exp_ptr + offs, tl.where(x == 0, 0, y))
    tl.store(mant_ptr + offs, tl.where(x == 0, 0.0, libdevice.ldexp(x, -y)))


def test_ilogb_ldexp_give_frexp():
    x = torch.tensor([0.0, 1.0, -3.5, 1e-40, -2e-45, 3e38, 0.1, 1e-38, 6.0, -1e-30, 2.5e-39, 65504.0, 7.0, -7.0,
                      1e-3, 123.0], device="cuda")
    m, e = torch.zeros_like(x), torch.zeros(16, dtype=torch.int32, device="cuda")
    frexp_like_kernel[(1,)](x, m, e, BLOCK=16)
    want_m, want_e = torch.frexp(x.cpu())
    assert torch.equal(m.cpu(), want_m) and torch.equal(e.cpu(), want_e)


@tessera.jit
def int_functions_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(out_ptr + 0 * BLOCK + offs, libdevice.popc(x).to(x.dtype))
    tl.store(out_ptr + 1 * BLOCK + offs, libdevice.clz(x).to(x.dtype))
    tl.store(out_ptr + 2 * BLOCK + offs, libdevice.brev(x))
    tl.store(out_ptr + 3 * BLOCK + offs, libdevice.ffs(x).to(x.dtype))
    tl.store(out_ptr + 4 * BLOCK + offs, libdevice.mulhi(x, y))


@pytest.mark.parametrize("np_dtype, torch_dtype", [(np.int32, torch.int32), (np.int64, torch.int64)])
def test_integer_libdevice_functions(np_dtype, torch_dtype):
    info = np.iinfo(np_dtype)
    width = info.bits
    rng = np.random.default_rng(width)
    x = rng.integers(info.min, info.max, 64, dtype=np_dtype, endpoint=True)
    y = rng.integers(info.min, info.max, 64, dtype=np_dtype, endpoint=True)
    x[:4] = [0, info.max, info.min, 1]
    out = torch.zeros(5 * 64, dtype=torch_dtype, device="cuda")
    int_functions_kernel[(1,)](torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda(), out, BLOCK=64)
    got = out.cpu().numpy().reshape(5, 64)
    mask = (1 << width) - 1
    for i in range(64):
        xi, yi = int(x[i]), int(y[i])
        u = xi & mask
        want = [bin(u).count("1"), width - u.bit_length(), int(format(u, f"0{width}b")[::-1], 2),
                0 if u == 0 else (u & -u).bit_length(), (xi * yi) >> width]
        assert [int(v) & mask for v in got[:, i]] == [w & mask for w in want], (i, xi, yi)
