"""Differential testing: the same kernel, the same inputs, run through the
interpreter (tessera._C.Interpreter, on numpy copies) and on the GPU (torch
tensors), must agree — exactly for copies, integer ops, atomics' counts and
Philox integers; within a relative-norm tolerance by dtype for float math.

Covered: the bundled kernels (vector add, softmax and its online variant on
ragged shapes, copy2d, layer norm both ways), the op kernels of
lang_ops_kernels.py, and random elementwise / row-reduction kernels from
kernel_generator.py (emitted as source text, written to a temp .py file and
imported). Skips without torch or a GPU (conftest.py)."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402
import kernel_generator as gen  # noqa: E402
import lang_ops_kernels as k  # noqa: E402
from kernels.copy2d import copy2d_kernel  # noqa: E402
from kernels.layernorm import layer_norm_fwd_kernel, layer_norm_fwd_looped_kernel  # noqa: E402
from kernels.softmax import softmax_kernel, softmax_online_kernel  # noqa: E402
from kernels.vector_add import add_kernel  # noqa: E402

TOL = {np.float32: 1e-5, np.float16: 2e-3, np.int32: 0, np.int64: 0, np.uint32: 0}
_interpreted = {}


def interpreted(kernel):
    """The same kernel in interpret mode (a second JITFunction over the same function)."""
    if id(kernel) not in _interpreted:
        _interpreted[id(kernel)] = tessera.jit(kernel.fn, interpret=True, **{
            o: v for o, v in kernel.options.items() if o != "interpret"})
    return _interpreted[id(kernel)]


def both_ways(kernel, grid, args, meta, outputs):
    """Runs kernel[grid](*args, **meta) on the GPU and in the interpreter from the same numpy
    inputs; returns [(gpu, interpreter)] numpy arrays for the argument indices in outputs."""
    gpu_args = [torch.from_numpy(a.copy()).cuda() if isinstance(a, np.ndarray) else a for a in args]
    kernel[grid](*gpu_args, **meta)
    torch.cuda.synchronize()
    host_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    interpreted(kernel)[grid](*host_args, **meta)
    return [(gpu_args[i].cpu().numpy(), host_args[i]) for i in outputs]


def agree(results, tol=None, what=""):
    for j, (gpu, host) in enumerate(results):
        assert gpu.dtype == host.dtype and gpu.shape == host.shape
        t = TOL.get(gpu.dtype.type, 0) if tol is None else tol
        if t == 0:
            same = (gpu == host) | (np.isnan(gpu) & np.isnan(host)) if gpu.dtype.kind == "f" else gpu == host
            bad = np.flatnonzero(~same)
            assert bad.size == 0, (f"{what} output {j}: {bad.size} elements differ, first at {bad[0]}: "
                                   f"GPU {gpu.flat[bad[0]]} vs interpreter {host.flat[bad[0]]}")
        else:
            err = gen.rel_err(gpu, host)
            assert err <= t, f"{what} output {j}: GPU vs interpreter relative error {err:.3e} > {t:.0e}"


def randn(rng, *shape, dtype=np.float32, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


def nan(*shape, dtype=np.float32):
    return np.full(shape, np.nan, dtype)


# ------------------------------------------------------------------ bundled kernels

@pytest.mark.parametrize("n", [1, 1000, 98435])
def test_vector_add(n):
    rng = np.random.default_rng(n)
    args = [randn(rng, n), randn(rng, n), nan(n), n]
    agree(both_ways(add_kernel, (tessera.cdiv(n, 1024),), args, {"BLOCK_SIZE": 1024}, [2]), tol=0)


SOFTMAX_SHAPES = [(1, 1), (7, 100), (33, 1000), (4, 1025), (130, 37)]


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["fp32", "fp16"])
@pytest.mark.parametrize("rows, cols", SOFTMAX_SHAPES)
def test_softmax_ragged(rows, cols, dtype):
    rng = np.random.default_rng(rows * cols)
    stride = cols + 3  # padded rows
    x = randn(rng, rows * stride, dtype=dtype, scale=4)
    for grid in ((rows,), (min(rows, 3),)):  # one program per row, and a persistent grid
        args = [nan(rows * stride, dtype=dtype), x, stride, stride, rows, cols]
        out = both_ways(softmax_kernel, grid, args, {"BLOCK_SIZE": tessera.next_power_of_2(cols)}, [0])
        agree(out, what=f"softmax {rows}x{cols} grid {grid}")


@pytest.mark.parametrize("rows, cols", [(3, 3000), (5, 257), (1, 1)])
def test_softmax_online(rows, cols):
    rng = np.random.default_rng(cols)
    x = randn(rng, rows, cols, scale=4)
    args = [nan(rows, cols), x, cols, cols, rows, cols]
    agree(both_ways(softmax_online_kernel, (rows,), args, {"BLOCK_SIZE": 256}, [0]), what="online softmax")


@pytest.mark.parametrize("rows, cols", [(37, 45), (1, 1), (64, 200)])
def test_copy2d(rows, cols):
    rng = np.random.default_rng(rows)
    src_stride, dst_stride = cols + 5, cols + 2
    args = [randn(rng, rows * src_stride), nan(rows * dst_stride), rows, cols, src_stride, dst_stride]
    grid = (tessera.cdiv(rows, 16), tessera.cdiv(cols, 32))
    agree(both_ways(copy2d_kernel, grid, args, {"BLOCK_M": 16, "BLOCK_N": 32}, [1]), tol=0)


@pytest.mark.parametrize("rows, n", [(13, 300), (1, 1), (8, 1024)])
def test_layernorm(rows, n):
    rng = np.random.default_rng(n)
    x, w, b = randn(rng, rows, n, scale=3), randn(rng, n), randn(rng, n)
    args = [x, nan(rows, n), w, b, nan(rows), nan(rows), n, n, rows, n, 1e-5]
    agree(both_ways(layer_norm_fwd_kernel, (min(rows, 4),), args,
                    {"BLOCK_SIZE": tessera.next_power_of_2(n)}, [1, 4, 5]), what="layernorm")
    args = [x, nan(rows, n), w, b, nan(rows), nan(rows), n, n, n, 1e-5]
    agree(both_ways(layer_norm_fwd_looped_kernel, (rows,), args, {"BLOCK_SIZE": 128}, [1, 4, 5]),
          what="layernorm looped")


# ------------------------------------------------------------------ lang_ops_kernels.py

UNARY_RANGES = {"sin": (-10, 10), "cos": (-10, 10), "rsqrt": (0.01, 100), "erf": (-3, 3), "floor": (-50, 50),
                "ceil": (-50, 50), "sqrt_rn": (0, 100), "sigmoid": (-20, 20), "tanh": (-5, 5), "log1p": (-0.9, 10),
                "expm1": (-5, 5), "asin": (-1, 1), "round": (-20, 20), "trunc": (-20, 20)}


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["fp32", "fp16"])
@pytest.mark.parametrize("fn", list(UNARY_RANGES))
def test_unary(fn, dtype):
    lo, hi = UNARY_RANGES[fn]
    n = 3001
    x = (np.random.default_rng(1).random(n) * (hi - lo) + lo).astype(dtype)
    tol = 5e-4 if fn == "rsqrt" and dtype == np.float32 else None  # rsqrt.approx on the GPU
    agree(both_ways(k.unary_kernel, (tessera.cdiv(n, 256),), [x, nan(n, dtype=dtype), n],
                    {"FN": fn, "BLOCK": 256}, [1]), tol, fn)


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["fp32", "fp16"])
@pytest.mark.parametrize("fn", ["fma", "fdiv", "div_rn", "pow", "atan2", "fmod", "hypot", "clamp"])
def test_binary(fn, dtype):
    rng = np.random.default_rng(2)
    n = 2001
    x = (rng.standard_normal(n) * 3).astype(dtype)
    y = (rng.random(n) * 2 + 0.5).astype(dtype)
    if fn == "pow":
        x = np.abs(x)
    tol = 1e-4 if fn == "fdiv" and dtype == np.float32 else None  # div.full (approximate) on the GPU
    agree(both_ways(k.binary_kernel, (tessera.cdiv(n, 256),), [x, y, nan(n, dtype=dtype), n],
                    {"FN": fn, "BLOCK": 256}, [2]), tol, fn)


@pytest.mark.parametrize("fn", ["floordiv", "mod", "shl", "shr", "and", "or", "xor", "not", "umulhi"])
def test_integer_ops(fn):
    rng = np.random.default_rng(3)
    n = 1003
    x = rng.integers(-1000, 1000, n).astype(np.int32)
    y = rng.integers(1, 50, n).astype(np.int32) * np.where(rng.random(n) < 0.5, -1, 1).astype(np.int32)
    agree(both_ways(k.int_kernel, (tessera.cdiv(n, 256),), [x, y, np.zeros(n, np.int32), n],
                    {"FN": fn, "BLOCK": 256}, [2]), 0, fn)


@pytest.mark.parametrize("n_cols", [1, 37, 1000])
def test_lang_softmax(n_cols):
    rows = 16
    x = randn(np.random.default_rng(4), rows, n_cols, scale=5)
    agree(both_ways(k.softmax_kernel, (rows // 4,), [x, nan(rows, n_cols), n_cols],
                    {"ROWS": 4, "COLS": tessera.next_power_of_2(n_cols)}, [1]))


@pytest.mark.parametrize("op", ["trans", "T", "reshape", "join", "split", "cat", "flip", "flip0", "bcast"])
def test_shape_ops(op):
    m, n = 16, 32
    x = randn(np.random.default_rng(5), m, n)
    size = 2 * m * n if op in ("join", "cat") else m * n
    tol = 1e-5 if op == "bcast" else 0
    agree(both_ways(k.shape_kernel, (1,), [x, nan(size)], {"OP": op, "M": m, "N": n}, [1]), tol, op)
    x3 = randn(np.random.default_rng(6), 4, 8, 16)
    agree(both_ways(k.permute3_kernel, (1,), [x3, nan(4 * 8 * 16)], {"A": 4, "B": 8, "C": 16}, [1]), 0, "permute")


@pytest.mark.parametrize("m, n, axis", [(16, 64, 1), (16, 64, 0), (4, 1024, 1), (2, 2, 1)])
@pytest.mark.parametrize("op", ["reduce", "argmax", "argmin", "argmax_only", "xor"])
def test_reductions(op, m, n, axis):
    x = np.random.default_rng(7).integers(-20, 20, (m, n)).astype(np.float32)  # ties: first index wins
    size = m if axis == 1 else n
    out = both_ways(k.reduce_kernel, (1,), [x, nan(size), np.full(size, -7, np.int32)],
                    {"OP": op, "AXIS": axis, "M": m, "N": n}, [1, 2])
    agree(out, 0, op)


@pytest.mark.parametrize("m, n, axis", [(16, 64, 1), (16, 64, 0), (2, 1024, 1)])
@pytest.mark.parametrize("op", ["cumsum", "cumsum_reverse", "cumprod", "pair"])
def test_scans(op, m, n, axis):
    rng = np.random.default_rng(8)
    if op in ("cumprod", "pair"):
        x = np.where(rng.random((m, n)) < 0.5, -1.0, 1.0).astype(np.float32)
    else:
        x = rng.integers(-20, 20, (m, n)).astype(np.float32)
    agree(both_ways(k.scan_kernel, (1,), [x, nan(m, n)], {"OP": op, "AXIS": axis, "M": m, "N": n}, [1]), 0, op)


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["fp32", "fp16"])
@pytest.mark.parametrize("mnk, blocks", [((100, 70, 33), (32, 32, 16)), ((16, 16, 16), (16, 16, 16))])
def test_dot(mnk, blocks, dtype):
    (m, n, kk), (bm, bn, bk) = mnk, blocks
    rng = np.random.default_rng(9)
    a, b = randn(rng, m, kk, dtype=dtype), randn(rng, kk, n, dtype=dtype)
    for acc_in in (0, 1):
        c = randn(rng, m, n) if acc_in else nan(m, n)
        agree(both_ways(k.dot_kernel, (tessera.cdiv(m, bm), tessera.cdiv(n, bn)), [a, b, c, m, n, kk],
                        {"BM": bm, "BN": bn, "BK": bk, "ACC_IN": acc_in}, [2]), 1e-5, "dot")


def test_atomics():
    rng = np.random.default_rng(10)
    n = 20_001
    x = rng.integers(0, 64, n).astype(np.int32)
    agree(both_ways(k.histogram_kernel, (tessera.cdiv(n, 256),), [x, np.zeros(64, np.int32), n],
                    {"BLOCK": 256}, [1]), 0, "histogram")
    xf = randn(rng, 5000)
    out = np.array([-np.inf, np.inf, 0.0] + [-np.inf] * 4, np.float32)
    agree(both_ways(k.atomic_float_kernel, (tessera.cdiv(5000, 256),), [xf, out, 5000], {"BLOCK": 256}, [1]),
          1e-5, "float atomics")  # the sum's order differs


def test_control_flow_and_block_pointers():
    n, block = 12, 64
    x = (np.random.default_rng(11).random((n, block)) * 2).astype(np.float32)
    agree(both_ways(k.control_kernel, (n + 3,), [x, nan((n + 3) * (block + 2)), n, 300.0], {"BLOCK": block}, [1]),
          1e-5, "control")
    for m, nn in ((100, 70), (5, 3)):
        a = randn(np.random.default_rng(m), m, nn)
        agree(both_ways(k.block_ptr_kernel, (tessera.cdiv(m, 32),), [a, nan(m, nn), m, nn], {"BM": 32, "BN": 32},
                        [1]), 0, "block pointers")


def test_random():
    n = 3000
    out = both_ways(k.random_kernel, (tessera.cdiv(n, 256),), [nan(2 * n), np.zeros(n, np.int32), 1234, n],
                    {"BLOCK": 256}, [0, 1])
    agree(out[1:], 0, "randint")
    agree(out[:1], 1e-5, "rand/randn")


# ------------------------------------------------------------------ generated kernels

@pytest.mark.parametrize("seed", range(40))
def test_generated(seed, tmp_path):
    spec = gen.generate(seed)
    kernel = getattr(gen.load(spec, tmp_path), spec.name)
    args, grid, meta = gen.make_inputs(spec)
    agree(both_ways(kernel, grid, args, meta, [2]), gen.tolerance(spec), f"{spec.name}:\n{spec.source}")
