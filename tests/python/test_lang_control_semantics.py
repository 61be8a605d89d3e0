"""break / continue / early return give Python's results: the same kernels run
through the host interpreter (the specialiser's IR) and as plain Python."""
import numpy as np
import pytest

import tessera
import tessera.language as tl

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")


@tessera.jit(interpret=True)
def loops_kernel(x_ptr, out_ptr, n, limit):
    total = 0
    count = 0
    for i in range(0, n):
        v = tl.load(x_ptr + i)
        if v < 0:
            continue
        if v == 7:
            count += 100
            continue
        total += v
        count += 1
        if total > limit:
            break
    j = 0
    while True:
        j += 3
        if j > limit:
            break
        if j % 2 == 0:
            continue
        total += 1
    k = 0
    found = -1
    while k < n:
        if tl.load(x_ptr + k) == 5:
            found = k
            break
        k += 1
    tl.store(out_ptr, total)
    tl.store(out_ptr + 1, count)
    tl.store(out_ptr + 2, j)
    tl.store(out_ptr + 3, found)


def loops_reference(x, n, limit):
    total = count = 0
    for i in range(n):
        v = x[i]
        if v < 0:
            continue
        if v == 7:
            count += 100
            continue
        total += v
        count += 1
        if total > limit:
            break
    j = 0
    while True:
        j += 3
        if j > limit:
            break
        if j % 2 == 0:
            continue
        total += 1
    found = -1
    for k in range(n):
        if x[k] == 5:
            found = k
            break
    return [total, count, j, found]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("limit", [5, 40, 1000])
def test_break_and_continue(seed, limit):
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 10, 20).astype(np.int32)
    out = np.full(4, -999, np.int32)
    loops_kernel[(1,)](x, out, 20, limit)
    assert out.tolist() == loops_reference(x.tolist(), 20, limit)


@tessera.jit
def classify(v, lo, hi):
    if v < lo:
        return -1, v - lo
    if v > hi:
        return 1, v - hi
    d = v * 0
    return 0, d


@tessera.jit
def first_index_of(x_ptr, n, target):
    i = 0
    while i < n:
        if tl.load(x_ptr + i) == target:
            break
        i += 1
    return i


@tessera.jit(interpret=True)
def returns_kernel(x_ptr, out_ptr, n, lo, hi):
    pid = tl.program_id(0)
    if pid >= n:
        return
    v = tl.load(x_ptr + pid)
    kind, dist = classify(v, lo, hi)
    tl.store(out_ptr + 3 * pid, kind)
    tl.store(out_ptr + 3 * pid + 1, dist)
    for step in range(0, 10):
        if step * v > 20:
            tl.store(out_ptr + 3 * pid + 2, step)
            return
    tl.store(out_ptr + 3 * pid + 2, first_index_of(x_ptr, n, v))


@pytest.mark.parametrize("seed", range(4))
def test_early_returns(seed):
    rng = np.random.default_rng(seed)
    n = 12
    x = rng.integers(-5, 15, n).astype(np.int32)
    out = np.full(3 * (n + 4), -999, np.int32)
    returns_kernel[(n + 4,)](x, out, n, 0, 8)
    for pid in range(n):
        v = int(x[pid])
        kind, dist = (-1, v) if v < 0 else (1, v - 8) if v > 8 else (0, 0)
        third = next((s for s in range(10) if s * v > 20), None)
        if third is None:
            third = x.tolist().index(v)
        assert out[3 * pid:3 * pid + 3].tolist() == [kind, dist, third], pid
    assert (out[3 * n:] == -999).all()  # programs past n returned first


@tessera.jit(interpret=True)
def nested_kernel(out_ptr, n):
    acc = 0
    for i in range(0, n):
        for j in range(0, n):
            if j > i:
                break
            if (i + j) % 3 == 0:
                continue
            acc += i * 10 + j
        if acc > 500:
            break
    for s in tl.static_range(6):
        if s == 4:
            break
        if s == 1:
            continue
        acc += 1000 * s
    tl.store(out_ptr, acc)


@pytest.mark.parametrize("n", [0, 1, 5, 30])
def test_nested_loops(n):
    acc = 0
    for i in range(n):
        for j in range(n):
            if j > i:
                break
            if (i + j) % 3 == 0:
                continue
            acc += i * 10 + j
        if acc > 500:
            break
    acc += 1000 * (0 + 2 + 3)
    out = np.zeros(1, np.int32)
    nested_kernel[(1,)](out, n)
    assert out[0] == acc


@tessera.jit(interpret=True)
def range_sum_kernel(out_ptr, lo, hi, STEP: tl.constexpr):
    acc = 0
    acc = acc.to(tl.int64)
    count = 0
    for i in range(lo, hi, STEP):
        acc += i
        count += 1
    tl.store(out_ptr, acc)
    tl.store(out_ptr + 1, count)


@tessera.jit(interpret=True)
def range_sum_break_kernel(out_ptr, lo, hi, STEP: tl.constexpr, STOP: tl.constexpr):
    acc = 0
    acc = acc.to(tl.int64)
    for i in range(lo, hi, STEP):
        if i == STOP:
            break
        acc += i
    tl.store(out_ptr, acc)


# Triton's test_for_iv cases and more: a negative constexpr step gives Python's range
# (values and trip count), with and without a break in the body.
@pytest.mark.parametrize("lo, hi, step", [(15, -16, -1), (15, -16, -2), (15, -16, -3), (-18, -22, -1), (22, 18, -1),
                                          (18, 22, -1), (5, 5, -2), (7, 0, -7), (7, 0, -8), (2**35 + 20, 2**35, -3),
                                          (2**35, 2**35 + 20, 3), (0, 10, 4)])
def test_range_constexpr_steps(lo, hi, step):
    out = np.zeros(2, np.int64)
    range_sum_kernel[(1,)](out, lo, hi, step)
    assert list(out) == [sum(range(lo, hi, step)), len(range(lo, hi, step))]
    stop = list(range(lo, hi, step))[2] if len(range(lo, hi, step)) > 2 else hi
    ref = 0
    for i in range(lo, hi, step):
        if i == stop:
            break
        ref += i
    out = np.zeros(1, np.int64)
    range_sum_break_kernel[(1,)](out, lo, hi, step, stop)
    assert out[0] == ref


def test_range_zero_step_is_an_error():
    with pytest.raises(tessera.CompilationError, match="range\\(\\) arg 3 must not be zero"):
        range_sum_kernel[(1,)](np.zeros(2, np.int64), 0, 4, 0)


def test_range_negative_step_compiles_to_ptx():
    k = tessera.compile(range_sum_kernel, signature="*i64,i64,i64", constexprs={"STEP": -3}, target="sm_80")
    assert "sub" in k.asm["ir"] and ".entry" in k.asm["ptx"]


@tessera.jit
def return_poison(x):
    a = False  # a scalar tensor (Triton's visit_Assign): the if is a runtime one
    if a:
        return x


@tessera.jit
def return_on_one_path(x, flag):
    if flag > 0:
        return x * 2, x + 1


@tessera.jit(interpret=True)
def poison_kernel(out_ptr, flag):
    # test_core.py's test_poison_return: the path that returns nothing gives an unspecified value
    tl.store(out_ptr, return_poison(0))
    a, b = return_on_one_path(tl.load(out_ptr + 1), flag)
    if flag > 0:
        tl.store(out_ptr + 2, a)
        tl.store(out_ptr + 3, b)


@pytest.mark.parametrize("flag", [0, 1])
def test_value_returned_on_one_path(flag):
    out = np.array([9, 5, 0, 0], np.int32)
    poison_kernel[(1,)](out, flag)
    assert list(out[1:]) == ([5, 10, 6] if flag else [5, 0, 0])


def test_value_returned_on_one_path_compiles_to_ptx():
    k = tessera.compile(poison_kernel, signature="*i32,i32", target="sm_80")
    assert ".entry" in k.asm["ptx"]
