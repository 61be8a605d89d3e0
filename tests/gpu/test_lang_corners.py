"""Triton 3.6 language corners on the GPU (docs/language.md, "Python in kernels"): propagate_nan=
of tl.minimum / tl.maximum / tl.clamp (PTX min/max against min.NaN/max.NaN, f16 and f32), abs of
fp8 (the sign bit cleared), range() with a negative constexpr step over i64 bounds, a tuple
constexpr as a reshape shape. The CPU tests (tests/python/test_lang_propagate_nan.py, ...) check
the interpreter and the PTX text; these check what the hardware computes."""
import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402
import tessera.language as tl  # noqa: E402


@tessera.jit
def min_max_clamp_kernel(X, Y, OUT, P: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    y = tl.load(Y + offs)
    tl.store(OUT + offs, tl.minimum(x, y, propagate_nan=P))
    tl.store(OUT + BLOCK + offs, tl.maximum(x, y, propagate_nan=P))
    tl.store(OUT + 2 * BLOCK + offs, tl.clamp(x, -y.abs(), y.abs(), propagate_nan=P))


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
@pytest.mark.parametrize("mode", [tl.PropagateNan.NONE, tl.PropagateNan.ALL])
def test_propagate_nan(dtype, mode):
    n = 128
    x = torch.randn(n, device="cuda", dtype=dtype)
    y = torch.randn(n, device="cuda", dtype=dtype)
    x[::5] = float("nan")
    y[::3] = float("nan")
    out = torch.empty(3 * n, device="cuda", dtype=dtype)
    min_max_clamp_kernel[(1,)](x, y, out, mode, n)
    torch.cuda.synchronize()
    if mode == tl.PropagateNan.ALL:
        ref = [torch.minimum(x, y), torch.maximum(x, y), torch.minimum(torch.maximum(x, -y.abs()), y.abs())]
    else:
        ref = [torch.fmin(x, y), torch.fmax(x, y), torch.fmin(torch.fmax(x, -y.abs()), y.abs())]
    torch.testing.assert_close(out, torch.cat(ref), equal_nan=True, rtol=0, atol=0)


@tessera.jit
def abs_kernel(X, Z, SIZE: tl.constexpr):
    off = tl.arange(0, SIZE)
    tl.store(Z + off, tl.abs(tl.load(X + off)))


@pytest.mark.parametrize("dtype", [tl.float8e4nv, tl.float8e5])
def test_abs_fp8(dtype):
    if torch.cuda.get_device_capability() < (8, 9) and dtype == tl.float8e4nv:
        pytest.skip("float8e4nv needs sm_89")
    bits = torch.arange(-128, 128, dtype=torch.int16, device="cuda").to(torch.int8)
    out = torch.empty_like(bits)
    abs_kernel[(1,)](tessera.reinterpret(bits, dtype), tessera.reinterpret(out, dtype), 256)
    torch.cuda.synchronize()
    assert torch.equal(out, bits & 0x7F)  # every byte, NaN and inf patterns included


@tessera.jit
def range_kernel(Out, lo, hi, STEP: tl.constexpr):
    acc = 0
    acc = acc.to(tl.int64)
    for i in range(lo, hi, STEP):
        acc += i
    tl.store(Out, acc)


@pytest.mark.parametrize("lo, hi, step", [(2**35 + 20, 2**35, -1), (2**35 + 20, 2**35, -3), (15, -16, -2),
                                          (2**35, 2**35 + 20, -1), (2**35, 2**35 + 20, 3)])
def test_range_negative_step(lo, hi, step):
    out = torch.zeros(1, dtype=torch.int64, device="cuda")
    range_kernel[(1,)](out, lo, hi, step)
    assert out.item() == sum(range(lo, hi, step))


@tessera.jit
def reshape_kernel(Z, X, OUT_SHAPE: tl.constexpr):
    x = tl.load(X + tl.arange(0, 64))
    z = tl.reshape(x, OUT_SHAPE)
    tl.store(Z + tl.arange(0, OUT_SHAPE[0])[:, None] * OUT_SHAPE[1] + tl.arange(0, OUT_SHAPE[1])[None, :], z)


@pytest.mark.parametrize("shape", [(8, 8), (16, 4), (2, 32)])
def test_tuple_constexpr_reshape(shape):
    x = torch.arange(64, dtype=torch.int32, device="cuda")
    z = torch.zeros(64, dtype=torch.int32, device="cuda")
    reshape_kernel[(1,)](z, x, shape)
    torch.cuda.synchronize()
    assert torch.equal(z, x)
