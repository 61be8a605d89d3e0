"""Tuple constructs of Triton 3.6's front-end (code_generator.py) that Triton's test_tuple.py and
test_frontend.py use: tuple comprehensions ([f(v) for v in t], with `if` filters over compile-time
conditions), f(*t) in calls, tl.tuple(...), and `and` / `or` over tuples (a tuple is true when not
empty). Each was a parse or compile error before."""
import numpy as np
import pytest

import tessera
import tessera.language as tl

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")


@tessera.jit
def _incremented(values):
    return tl.tuple([v + 1 for v in values])


@tessera.jit
def _sum3(a, b, c):
    return a + b * 10 + c * 100


@tessera.jit(interpret=True)
def comprehension_kernel(out_ptr, x, y, z):
    values = _incremented((x, y, z))
    for i in tl.static_range(len(values)):
        tl.store(out_ptr + i, values[i])
    big: tl.constexpr = [v * 2 for v in (1, 2, 3, 4, 5) if v >= 3 if v != 4]
    tl.static_assert(len(big) == 2)
    tl.store(out_ptr + 3, big[0] + big[1] * 100)
    pairs = [a * b for a, (b, _) in ((2, (3, 0)), (4, (5, 0)))]
    tl.store(out_ptr + 4, pairs[0] + pairs[1] * 100)
    v = 7
    squares = [v * v for v in (x, y)]
    tl.store(out_ptr + 5, squares[0] + squares[1] * 100 + v * 10000)  # v is 7 again after the comprehension
    t = (x, y, z)
    tl.store(out_ptr + 6, _sum3(*t))
    tl.store(out_ptr + 7, _sum3(x, *(y, z)))
    empty = tl.tuple()
    tl.store(out_ptr + 8, len(empty) + len(tl.tuple((1, 2)) + (3, )) * 10)
    tl.static_assert(((3, 4) or (5, 6)) == (3, 4))
    tl.static_assert(((3, 4) and (5, 6)) == (5, 6))
    tl.static_assert((() or (5, 6)) == (5, 6))
    tl.static_assert(((1, 2) and (3, 4) and (5, 6)) == (5, 6))
    tl.static_assert((() and tl.program_id(0)) == ())


def test_tuple_constructs():
    out = np.zeros(9, np.int32)
    comprehension_kernel[(1,)](out, 1, 2, 3)
    assert out.tolist() == [2, 3, 4, 6 + 10 * 100, 6 + 20 * 100, 1 + 4 * 100 + 7 * 10000, 321, 321, 30]


@tessera.jit(interpret=True)
def runtime_condition_kernel(out_ptr, x):
    vals = [v for v in (1, 2) if x > v]
    tl.store(out_ptr, len(vals))


@tessera.jit(interpret=True)
def starred_scalar_kernel(out_ptr, x):
    tl.store(out_ptr, _sum3(*x))


@tessera.jit(interpret=True)
def comprehension_over_scalar_kernel(out_ptr, x):
    vals = [v for v in x]
    tl.store(out_ptr, len(vals))


@pytest.mark.parametrize("kernel, message", [
    (runtime_condition_kernel, "a comprehension's condition must be a compile-time value"),
    (starred_scalar_kernel, "argument after \\* must be a tuple"),
    (comprehension_over_scalar_kernel, "only tuple comprehensions are supported"),
])
def test_bad_tuple_constructs_are_errors(kernel, message):
    with pytest.raises(tessera.CompilationError, match=message):
        kernel[(1,)](np.zeros(1, np.int32), 5)
