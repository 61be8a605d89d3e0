"""tl.associative_scan / tl.cumsum on the GPU for the layouts the scan lowering follows
(compiler/codegen/Scan.cpp): runs inside a thread, lanes along the axis (shfl.up / shfl.down),
warps along it (one round through shared memory), several chunks per thread, and layouts that
wrap (fewer elements along the axis than lanes or warps). The affine combine is associative but
not commutative, so each element must be combined in order; the values are small integers and
every result is exact."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402
import tessera.language as tl  # noqa: E402
from gpu_helpers import poisoned  # noqa: E402


@tessera.jit
def _affine(a1, b1, a2, b2):
    return a1 * a2, b1 * a2 + b2


@tessera.jit
def affine_scan(a_ptr, b_ptr, out_a_ptr, out_b_ptr, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr,
                REVERSE: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    a, b = tl.associative_scan((tl.load(a_ptr + offs), tl.load(b_ptr + offs)), AXIS, _affine, reverse=REVERSE)
    tl.store(out_a_ptr + offs, a)
    tl.store(out_b_ptr + offs, b)


@tessera.jit
def cumsum_strided(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, STRIDE: tl.constexpr,
                   REVERSE: tl.constexpr):
    # fla's chunk_local_cumsum_scalar: a 1-D block read with a stride (one element per thread)
    offs = tl.arange(0, M) * STRIDE
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.cumsum(x, axis=0, reverse=REVERSE))


def affine_reference(a, b, axis, reverse):
    a, b = a.astype(np.int64), b.astype(np.int64)
    if reverse:
        a, b = np.flip(a, axis), np.flip(b, axis)
    ra, rb = np.empty_like(a), np.empty_like(b)
    n = a.shape[axis]
    ca, cb = None, None
    for i in range(n):
        ea, eb = np.take(a, i, axis), np.take(b, i, axis)
        if ca is None:
            ca, cb = ea, eb
        else:
            ca, cb = ca * ea, cb * ea + eb
        idx = [slice(None)] * 2
        idx[axis] = i
        ra[tuple(idx)], rb[tuple(idx)] = ca, cb
    if reverse:
        ra, rb = np.flip(ra, axis), np.flip(rb, axis)
    return ra, rb


SHAPES = [(64, 32, 0), (64, 32, 1), (16, 128, 1), (128, 4, 0), (2, 8, 0), (4, 256, 1), (256, 2, 0), (1, 64, 1),
          (32, 1, 0), (8, 8, 1)]


@pytest.mark.parametrize("dtype", ["int32", "float32"])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("num_warps", [1, 4, 8])
@pytest.mark.parametrize("m, n, axis", SHAPES)
def test_affine_scan_in_order(m, n, axis, num_warps, reverse, dtype):
    g = np.random.default_rng(m * 1000 + n * 10 + axis)
    a = g.choice([-1, 1], size=(m, n))
    b = g.integers(-9, 10, size=(m, n))
    tdt = getattr(torch, dtype)
    ta, tb = torch.tensor(a, dtype=tdt, device="cuda"), torch.tensor(b, dtype=tdt, device="cuda")
    if dtype == "float32":
        oa, ob = poisoned((m, n), tdt), poisoned((m, n), tdt)
    else:  # no NaN in int32: a value no scan of these inputs reaches
        oa, ob = (torch.full((m, n), -(2 ** 30), dtype=tdt, device="cuda") for _ in range(2))
    affine_scan[(1,)](ta, tb, oa, ob, M=m, N=n, AXIS=axis, REVERSE=reverse, num_warps=num_warps)
    torch.cuda.synchronize()
    ra, rb = affine_reference(a, b, axis, reverse)
    assert (oa.cpu().numpy().astype(np.int64) == ra).all()
    assert (ob.cpu().numpy().astype(np.int64) == rb).all()


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
@pytest.mark.parametrize("m", [16, 64, 256])
def test_strided_cumsum(m, num_warps, reverse):
    x = torch.randint(-20, 20, (m * 16,), device="cuda").float()
    out = torch.full_like(x, float("nan"))
    cumsum_strided[(1,)](x, out, M=m, N=1, STRIDE=16, REVERSE=reverse, num_warps=num_warps)
    torch.cuda.synchronize()
    v = x[::16]
    ref = torch.cumsum(v.flip(0), 0).flip(0) if reverse else torch.cumsum(v, 0)
    torch.testing.assert_close(out[::16], ref, rtol=0, atol=0)
