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
