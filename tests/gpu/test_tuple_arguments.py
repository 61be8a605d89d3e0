"""On the GPU, tuple kernel arguments as Triton's test_tuple.py passes them: tuples of tensors indexed in a
static_range, nested tuples with None and tl.constexpr leaves, NamedTuples (built in the kernel too) holding
a @jit function, tuples of strides given to tl.make_tensor_descriptor with a @builtin helper, and many
values through one compiled kernel. The CPU tests (tests/python/test_tuple_arguments.py, the fake driver's
tests/fake_driver/test_launch.py) check the interpreter, ptxas and the launch's parameter bytes; these check
what the hardware computes through the launch path."""
from typing import NamedTuple

import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402
import tessera.language as tl  # noqa: E402


@tessera.jit
def _plus_one(values):
    return tl.tuple([v + 1 for v in values])


@tessera.jit
def _store_each(ptrs, values):
    for i in tl.static_range(len(values)):
        tl.store(ptrs[i], values[i])


@tessera.jit
def index_kernel(_0, ptrs, _1: tl.constexpr, values, _2, _3: tl.constexpr, _4):
    _store_each(ptrs, _plus_one(values))


@pytest.mark.parametrize("size", [0, 1, 2, 3, 4])
def test_index(size):
    vals = tuple(i + 1 for i in range(size))
    rets = tuple(torch.zeros((1,), dtype=torch.float32, device="cuda") for _ in vals)
    index_kernel[(1,)](0, rets, 0, vals, 0, 0, 0)
    assert vals == tuple(x.item() - 1 for x in rets)


@tessera.jit
def assign_kernel(XPtrs, YPtrs, values):
    X0, X1 = XPtrs
    x0, x1, _ = values
    tl.store(X0, x0)
    tl.store(X1, x1)
    Y0, Y1, Y2 = YPtrs
    Y = Y0, Y1, Y2
    y = x0, 10, x1
    tl.store(Y[0], y[0])
    tl.store(Y[1], y[1])
    tl.store(Y[2], y[2])


def test_assign():
    vals = (2., 3., None)
    x = tuple(torch.zeros((1,), dtype=torch.float32, device="cuda") for _ in range(2))
    y = tuple(torch.zeros((1,), dtype=torch.float32, device="cuda") for _ in range(3))
    assign_kernel[(1,)](x, y, vals)
    assert x[0].item() == 2.0 and x[1].item() == 3.0
    assert [t.item() for t in y] == [2.0, 10.0, 3.0]


@tessera.jit
def _fn0(Ptr, cst2: tl.constexpr, tuple1):
    tl.static_assert(tuple1[1] is None)
    tl.store(Ptr + 5, cst2)
    tl.store(Ptr + 6, tuple1[0])
    tl.store(Ptr + 7, tl.load(tuple1[2][0]))
    tl.store(Ptr + 8, tuple1[2][1][0])
    tl.store(Ptr + 9, tl.load(tuple1[2][1][2]))


@tessera.jit
def serialize_kernel(Ptr, N1, tuple1, cst1: tl.constexpr, val1, tuple2):
    tl.static_assert(N1 is None)
    tl.static_assert(tuple1[1][1] is None)
    tl.static_assert(tuple1[1][3] == 4)
    tl.store(Ptr + 0, tl.load(tuple1[0]))
    tl.store(Ptr + 1, tuple1[1][0])
    tl.store(Ptr + 2, tl.load(tuple1[1][2]))
    tl.store(Ptr + 3, cst1 + val1)
    tl.store(Ptr + 4, tl.load(tuple2[0]))
    _fn0(Ptr, 15, (-1, None, tuple1))


def test_serialize():
    x0 = torch.tensor([8], dtype=torch.int32, device="cuda")
    x1 = torch.tensor([12], dtype=torch.int32, device="cuda")
    y0 = torch.tensor([10], dtype=torch.int32, device="cuda")
    z = torch.empty((10,), dtype=torch.int32, device="cuda")
    serialize_kernel[(1,)](z, None, (x0, (1, None, x1, tl.constexpr(4))), 20, 1, (y0,))
    assert z.tolist() == [8, 1, 12, 21, 10, 15, -1, 8, 1, 12]


class Function(NamedTuple):
    fn: tl.constexpr
    captured: tuple


class Tensor(NamedTuple):
    ptr: any
    shape: tuple
    stride: tuple


@tessera.jit
def _make_tensor(shape, ptr, stride):
    return Tensor(shape=shape, ptr=ptr, stride=stride)


@tessera.jit
def _mask_of(t, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    return (tl.arange(0, BLOCK_M)[:, None] < t.shape[0]) & (tl.arange(0, BLOCK_N)[None, :] < t.shape[1])


@tessera.jit
def _mul(x, a):
    return x * tl.load(a)


@tessera.jit
def namedtuple_kernel(closure, _X, Y, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    offs_m = tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    X = _make_tensor(_X.shape, _X.ptr, _X.stride)
    Y = _make_tensor(Y.shape, Y.ptr, Y.stride)
    Xs = X.ptr + offs_m[:, None] * X.stride[0] + offs_n[None, :] * X.stride[1]
    Ys = Y.ptr + offs_m[:, None] * Y.stride[0] + offs_n[None, :] * Y.stride[1]
    x = tl.load(Xs, mask=_mask_of(X, BLOCK_M, BLOCK_N), other=0)
    y = closure.fn(x, *closure.captured)
    tl.store(Ys, y, mask=_mask_of(Y, BLOCK_M, BLOCK_N))


def test_namedtuple():
    x = torch.randn((32, 32), dtype=torch.float32, device="cuda")
    y = torch.empty((16, 16), dtype=torch.float32, device="cuda")
    a = torch.tensor([5.2], dtype=torch.float32, device="cuda")
    namedtuple_kernel[(1,)](Function(_mul, (a,)), Tensor(x, x.shape, x.stride()), Tensor(y, y.shape, y.stride()),
                            64, 64)
    torch.testing.assert_close(y, x[:16, :16] * a)


@tessera.jit
def m_to_the_n(X, shape: tl.constexpr, strides, m_n):
    Xs = X + tl.arange(0, shape[0])[:, None] * strides[0] + tl.arange(0, shape[1])[None, :] * strides[1]
    data = tl.load(Xs)
    for i in tl.range(0, m_n[1]):
        data = m_n[0] * data
    tl.store(Xs, data)


def test_passing_tuple_with_constexpr():
    x = torch.arange(0, 64, device="cuda").reshape(8, 8)
    expected = 8 * x.clone()
    m_to_the_n[(1,)](x, x.shape, x.stride(), (2, 3))
    torch.testing.assert_close(x, expected, rtol=0, atol=0)


@tl.core.builtin
def is_constexpr(v, _semantic=None):
    return isinstance(v, tl.constexpr)


@tessera.jit
def m_to_the_n_desc(X_base, shape, strides, m_n, BLOCK_DIM: tl.constexpr):
    tl.static_assert(is_constexpr(strides[1]))
    X = tl.make_tensor_descriptor(X_base, shape=shape, strides=strides, block_shape=[BLOCK_DIM, BLOCK_DIM])
    tl.static_assert(is_constexpr(strides[1]))
    data = X.load([0, 0])
    for i in tl.range(0, m_n[1]):
        data = m_n[0] * data
    X.store([0, 0], data)


def test_passing_tuple_to_make_tensor_descriptor():
    x = torch.arange(0, 16, device="cuda").reshape(4, 4)
    expected = 8 * x.clone()
    m_to_the_n_desc[(1,)](x, x.size(), x.stride(), (2, 3), x.size(0))
    torch.testing.assert_close(x, expected, rtol=0, atol=0)


@tessera.jit
def strided_copy(X, OUT, strides, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + tl.program_id(0) * strides[0] + offs * strides[1], mask=offs < n)
    tl.store(OUT + tl.program_id(0) * n + offs, x, mask=offs < n)


def test_many_tuple_values_share_one_compiled_kernel():
    x = torch.randn((8, 64), device="cuda")
    for cols in (16, 32, 48, 64):
        out = torch.zeros((8, cols), device="cuda")
        strided_copy[(8,)](x, out, (x.stride(0), x.stride(1)), cols, BLOCK=64)
        torch.testing.assert_close(out, x[:, :cols], rtol=0, atol=0)
    t = x.t().contiguous().t()  # column-major: strides (1, 8); other hints, another kernel
    out = torch.zeros((8, 64), device="cuda")
    strided_copy[(8,)](t, out, (t.stride(0), t.stride(1)), 64, BLOCK=64)
    torch.testing.assert_close(out, x, rtol=0, atol=0)
    assert strided_copy.cache_info()["compiled"] == 2
