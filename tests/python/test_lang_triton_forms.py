"""Triton forms from its own test suite (test_core.py) that tessera accepts with Triton's
meaning: tl.static_range(.., step=..), while tl.condition(..), tl.extra.cuda.num_threads(),
a conditional expression whose arms are calls (only the chosen arm runs), `if` on a
one-element block and x.item(). Each runs in the interpreter and compiles to PTX."""
import numpy as np
import pytest

import tessera
import tessera.language as tl

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")


class DeviceArray:
    """Device memory as __cuda_array_interface__ describes it (compile-only: never launched)."""

    def __init__(self, typestr="<i4", ptr=1 << 20):
        self.__cuda_array_interface__ = {"data": (ptr, False), "typestr": typestr, "shape": (256,), "version": 3}


def run_and_compile(kernel, arrays, *args, typestrs=None, **kwargs):
    """Interprets kernel on numpy arrays, then compiles the same specialisation to PTX."""
    interpreted = tessera.jit(kernel.fn, interpret=True)
    interpreted[(1,)](*arrays, *args, **kwargs)
    devices = [DeviceArray(t) for t in (typestrs or ["<i4"] * len(arrays))]
    return kernel.warmup(*devices, *args, grid=(1,), **kwargs).asm["ptx"]


@tessera.jit
def static_range_step_kernel(Z, N: tl.constexpr, step: tl.constexpr):
    acc = 0
    for i in tl.static_range(0, N, step=step):
        acc += i
    tl.store(Z, acc)


def test_static_range_takes_step_by_keyword():
    out = np.zeros(1, np.int32)
    run_and_compile(static_range_step_kernel, [out], 100, 7)
    assert out[0] == sum(range(0, 100, 7))


@tessera.jit
def condition_kernel(Z, n):
    i = 0
    while tl.condition(i < n, disable_licm=True):
        i = i + 1
    for j in tl.range(0, n, disable_licm=True):
        i = i + 1
    tl.store(Z, i)


def test_while_takes_tl_condition():
    out = np.zeros(1, np.int32)
    run_and_compile(condition_kernel, [out], 10)
    assert out[0] == 20


@tessera.jit
def num_threads_kernel(Out):
    num_threads: tl.constexpr = tl.extra.cuda.num_threads()
    offs = tl.arange(0, num_threads)
    tl.store(Out + offs, 1)


@pytest.mark.parametrize("num_warps", [1, 2, 8])
def test_num_threads_is_the_launch_s_thread_count(num_warps):
    out = np.zeros(256, np.int32)
    run_and_compile(num_threads_kernel, [out], num_warps=num_warps)
    assert out.sum() == 32 * num_warps and (out[:32 * num_warps] == 1).all()


@tessera.jit
def if_expression_kernel(XTrue, XFalse, Ret, pid_value, VOID: tl.constexpr):
    pid = pid_value + tl.program_id(0)
    if VOID:
        tl.store(Ret, tl.load(XTrue)) if pid % 2 == 0 else tl.store(Ret, tl.load(XFalse))
    else:
        val = 3.25 if pid % 2 == 0 else tl.load(XFalse)
        tl.store(Ret, val)


@pytest.mark.parametrize("void", [True, False])
@pytest.mark.parametrize("pid_value", [0, 1])
def test_conditional_expression_runs_only_the_chosen_call(void, pid_value):
    x_true, x_false = np.array([3.5], np.float32), np.array([1.5], np.float32)
    ret = np.zeros(1, np.float32)
    ptx = run_and_compile(if_expression_kernel, [x_true, x_false, ret], pid_value, void, typestrs=["<f4"] * 3)
    assert ret[0] == ((3.5 if void else 3.25) if pid_value % 2 == 0 else 1.5)
    assert "st.global" in ptx


@tessera.jit
def unsplat_kernel(x, explicit: tl.constexpr):
    condition = tl.load(x + tl.arange(0, 1)) > 42  # a one-element block
    if explicit:
        condition = condition.item()
    if condition:
        tl.store(x, 42)


@pytest.mark.parametrize("explicit", [False, True])
@pytest.mark.parametrize("value, expected", [(41, 41), (43, 42)])
def test_if_on_a_one_element_block(explicit, value, expected):
    x = np.full(1, value, np.int32)
    run_and_compile(unsplat_kernel, [x], explicit)
    assert x[0] == expected


@tessera.jit
def index_scalar_pointer_kernel(X, Z):
    x = tl.load(X + tl.arange(0, 2))[:, None, None]      # <2x1x1>
    z = tl.sum(x, axis=0, keep_dims=True)                  # <1x1x1>
    z_ptr = Z[None, None, None, :]                         # a scalar pointer indexed like Triton's test_reduce
    tl.store(z_ptr, z)


def test_colon_past_the_last_dim_keeps_nothing():
    x, z = np.array([3, 4], np.int32), np.zeros(1, np.int32)
    run_and_compile(index_scalar_pointer_kernel, [x, z])
    assert z[0] == 7


@tessera.jit
def interleave_kernel(Z, X, Y, N: tl.constexpr):
    z = tl.interleave(tl.arange(0, N), tl.arange(N, 2 * N))
    tl.store(Z + tl.arange(0, 2 * N), z)
    pair = tl.interleave(tl.load(X), tl.load(Y))  # two scalars: a block of 2
    tl.store(Z + 2 * N + tl.arange(0, 2), pair)


def test_interleave():
    n = 64
    z, x, y = np.zeros(2 * n + 2, np.int32), np.array([10], np.int32), np.array([20], np.int32)
    run_and_compile(interleave_kernel, [z, x, y], n)
    assert (z[:2 * n] == np.stack([np.arange(n), np.arange(n, 2 * n)], axis=-1).reshape(-1)).all()
    assert list(z[2 * n:]) == [10, 20]


@tessera.jit
def isinstance_kernel(X, Z, N: tl.constexpr):
    x = tl.load(X + tl.arange(0, 2))
    a, b = tl.split(x)
    tl.static_assert(isinstance(a, tl.tensor))
    tl.static_assert(not isinstance(N, tl.tensor) and isinstance(N, tl.constexpr))
    tl.static_assert(isinstance(x.dtype, (tl.tensor, tl.dtype)))
    tl.store(Z, a + b)


def test_isinstance_in_kernels():
    x, z = np.array([3, 4], np.int32), np.zeros(1, np.int32)
    run_and_compile(isinstance_kernel, [x, z], 8)
    assert z[0] == 7


@tessera.jit
def isinstance_of_unknown_class_kernel(Z, N: tl.constexpr):
    tl.static_assert(isinstance(N, tl.program_id))
    tl.store(Z, N)


def test_isinstance_of_other_classes_is_an_error():
    with pytest.raises(tessera.CompilationError, match="isinstance"):
        isinstance_of_unknown_class_kernel.warmup(DeviceArray(), 8, grid=(1,))


@tessera.jit
def where_pointers_kernel(cond_ptr, a_ptr, b_ptr, output_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    decide = tl.load(cond_ptr + offsets)
    a = tl.load(a_ptr + offsets).to(tl.pi32_t)  # int64 addresses as pointers (test_core.py::test_where)
    b = tl.load(b_ptr + offsets).to(tl.pi32_t)
    tl.store(output_ptr + offsets, tl.where(decide, a, b))


def test_pi32_t_is_a_pointer_to_int32():
    # int64 addresses become pointers with .to(tl.pi32_t), are selected, and stored back as int64.
    cond = np.array([True, False] * 32)
    a, b = np.arange(64, dtype=np.int64) + 1000, np.arange(64, dtype=np.int64) + 5000
    out = np.zeros(64, np.int64)
    run_and_compile(where_pointers_kernel, [cond, a, b, out], BLOCK=64, typestrs=["|b1", "<i8", "<i8", "<i8"])
    assert (out == np.where(cond, a, b)).all()
