"""Whole kernels through the host interpreter against numpy (no GPU): the
bundled kernels (vector add, softmax fp32/bf16, the 2-D masked copy, layer
norm), loops, if/while, grids, and how interpret mode is switched on
(@tessera.jit(interpret=True), TESSERA_INTERPRET=1, kernel.interpret)."""
import sys

import numpy as np
import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT))

import tessera  # noqa: E402
import tessera.language as tl  # noqa: E402
from kernels import copy2d, softmax, vector_add  # noqa: E402

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")


def interpreted(kernel):
    """A bundled kernel (decorated for the GPU) in interpret mode."""
    return tessera.jit(kernel.fn, interpret=True)


def bf16_bits(x):
    """float32 → bfloat16 bit patterns (uint16), round to nearest even."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return (((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16)).astype(np.uint16)


def bf16_to_f32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


# ------------------------------------------------------------------ bundled kernels

@pytest.mark.parametrize("n", [1, 1000, 4096, 12345])
@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["f32", "f16"])
def test_vector_add(n, dtype):
    add = interpreted(vector_add.add_kernel)
    rng = np.random.default_rng(n)
    x, y = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    out = np.full(n, np.nan, dtype)
    add[lambda meta: (tessera.cdiv(n, meta["BLOCK_SIZE"]),)](x, y, out, n, BLOCK_SIZE=1024)
    np.testing.assert_array_equal(out, x + y)  # f16 adds round once, as numpy's


@pytest.mark.parametrize("shape", [(1, 1), (7, 100), (64, 1024), (3, 1000)])
@pytest.mark.parametrize("programs", [None, 2], ids=["per-row", "persistent"])
def test_softmax_fp32(shape, programs):
    kernel = interpreted(softmax.softmax_kernel)
    rows, cols = shape
    x = np.random.default_rng(rows * cols).standard_normal((rows, cols)).astype(np.float32) * 4
    out = np.full_like(x, np.nan)
    block = tessera.next_power_of_2(cols)
    kernel[(programs or rows,)](out, x, x.strides[0] // 4, out.strides[0] // 4, rows, cols, BLOCK_SIZE=block)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_softmax_bf16_through_uint16_views():
    """bf16 in and out: numpy has no bfloat16, so the arrays are uint16 bit patterns
    handed to the kernel as *bf16 through a bfloat16-typed view (ml_dtypes) — or, as
    here, a kernel that bitcasts them."""
    @tessera.jit(interpret=True)
    def softmax_bf16_bits(out_ptr, in_ptr, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        mask = offs < n_cols
        bits = tl.load(in_ptr + row * n_cols + offs, mask=mask, other=0xFF80)  # bf16 -inf
        x = bits.to(tl.bfloat16, bitcast=True).to(tl.float32)
        e = tl.exp(x - tl.max(x, axis=0))
        y = (e / tl.sum(e, axis=0)).to(tl.bfloat16)
        tl.store(out_ptr + row * n_cols + offs, y.to(tl.uint16, bitcast=True), mask=mask)

    rows, cols = 5, 300
    x = np.random.default_rng(1).standard_normal((rows, cols)).astype(np.float32) * 3
    xb = bf16_bits(x)
    out = np.zeros_like(xb)
    softmax_bf16_bits[(rows,)](out, xb, cols, BLOCK=512)
    xf = bf16_to_f32(xb).astype(np.float64)
    e = np.exp(xf - xf.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(bf16_to_f32(out), want, rtol=1e-2, atol=1e-6)


def test_softmax_bf16_float32_round_trip():
    """bf16 storage emulated with a float32 round trip inside the kernel."""
    @tessera.jit(interpret=True)
    def softmax_rt(out_ptr, in_ptr, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        mask = offs < n_cols
        x = tl.load(in_ptr + row * n_cols + offs, mask=mask, other=-float("inf")).to(tl.bfloat16)
        x = x.to(tl.float32)
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(out_ptr + row * n_cols + offs, (e / tl.sum(e, axis=0)).to(tl.bfloat16), mask=mask)

    x = np.random.default_rng(2).standard_normal((3, 100)).astype(np.float32)
    out = np.zeros_like(x)
    softmax_rt[(3,)](out, x, 100, BLOCK=128)
    assert np.array_equal(bf16_bits(out), out.view(np.uint32) >> 16), "results are bf16 values"
    xf = bf16_to_f32(bf16_bits(x)).astype(np.float64)
    e = np.exp(xf - xf.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-2)


@pytest.mark.parametrize("shape", [(1, 1), (33, 65), (100, 1), (64, 64), (70, 37)])
@pytest.mark.parametrize("blocks", [(32, 64), (16, 16)], ids=lambda b: f"{b[0]}x{b[1]}")
def test_copy2d_masked_strided(shape, blocks):
    kernel = interpreted(copy2d.copy2d_kernel)
    n_rows, n_cols = shape
    src_big = np.random.default_rng(3).standard_normal((n_rows + 2, n_cols + 11)).astype(np.float32)
    src = src_big[1:1 + n_rows, 3:3 + n_cols]  # a strided view, not 16-byte aligned
    dst_big = np.full((n_rows + 5, n_cols + 7), np.nan, np.float32)
    dst = dst_big[:n_rows, :n_cols]
    grid = (tessera.cdiv(n_rows, blocks[0]), tessera.cdiv(n_cols, blocks[1]))
    kernel[grid](src, dst, n_rows, n_cols, src.strides[0] // 4, dst.strides[0] // 4,
                 BLOCK_M=blocks[0], BLOCK_N=blocks[1])
    np.testing.assert_array_equal(dst, src)
    untouched = np.ones(dst_big.shape, bool)
    untouched[:n_rows, :n_cols] = False
    assert np.isnan(dst_big[untouched]).all(), "the kernel wrote outside the tile"


def test_layer_norm():
    layernorm = pytest.importorskip("kernels.layernorm")
    kernel = interpreted(layernorm.layer_norm_fwd_kernel)
    rows, n = 6, 200
    rng = np.random.default_rng(4)
    x = rng.standard_normal((rows, n)).astype(np.float32)
    w, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    y = np.zeros_like(x)
    mean, rstd = np.zeros(rows, np.float32), np.zeros(rows, np.float32)
    kernel[(rows,)](x, y, w, b, mean, rstd, n, n, rows, n, 1e-5, BLOCK_SIZE=256)
    xd = x.astype(np.float64)
    mu = xd.mean(axis=1)
    r = 1 / np.sqrt(xd.var(axis=1) + 1e-5)
    np.testing.assert_allclose(mean, mu, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rstd, r, rtol=1e-5)
    np.testing.assert_allclose(y, (xd - mu[:, None]) * r[:, None] * w + b, rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------------ control flow

@tessera.jit(interpret=True)
def loops_kernel(x_ptr, out_ptr, n, steps, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n, BLOCK):             # a runtime loop with a carried block
        cols = start + offs
        acc += tl.load(x_ptr + cols, mask=cols < n, other=0.0)
    total = tl.sum(acc, axis=0)
    count = 0
    i = 1
    while i < steps:                             # a while loop carrying two scalars
        i = i * 2
        count += 1
    if total > 0:                                # a runtime if with results
        sign = 1
    else:
        sign = -1
    for k in tl.static_range(3):                 # unrolled
        count += k
    tl.store(out_ptr, total)
    tl.store(out_ptr + 1, count.to(tl.float32))
    tl.store(out_ptr + 2, sign.to(tl.float32))


@pytest.mark.parametrize("n,steps", [(1, 1), (100, 5), (1000, 1000), (64, 0)])
def test_loops_if_while(n, steps):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    out = np.zeros(3, np.float32)
    loops_kernel[(1,)](x, out, n, steps, BLOCK=64)
    count, i = 0, 1
    while i < steps:
        i, count = i * 2, count + 1
    assert out[0] == pytest.approx(float(x.astype(np.float64).sum()), rel=1e-5, abs=1e-5)
    assert out[1] == count + 3
    assert out[2] == (1 if out[0] > 0 else -1)


@tessera.jit(interpret=True)
def stepped_loop_kernel(out_ptr, lo, hi, STEP: tl.constexpr):
    total = 0
    iterations = 0
    for i in range(lo, hi, STEP):
        total += i
        iterations += 1
    tl.store(out_ptr, total)
    tl.store(out_ptr + 1, iterations)


@pytest.mark.parametrize("lo,hi,step", [(0, 10, 1), (-5, 7, 3), (3, 3, 1), (5, 2, 1), (-20, -3, 4)])
def test_for_loop_bounds(lo, hi, step):
    out = np.zeros(2, np.int32)
    stepped_loop_kernel[(1,)](out, lo, hi, STEP=step)
    r = range(lo, hi, step)
    assert list(out) == [sum(r), len(r)]


@tessera.jit(interpret=True)
def grid_kernel(out_ptr):
    x = tl.program_id(0)
    y = tl.program_id(1)
    z = tl.program_id(2)
    nx = tl.num_programs(0)
    ny = tl.num_programs(1)
    nz = tl.num_programs(2)
    idx = (z * ny + y) * nx + x
    tl.store(out_ptr + idx * 4 + tl.arange(0, 4), tl.where(tl.arange(0, 4) == 0, x, 0) + tl.where(tl.arange(0, 4) == 1, y, 0) + tl.where(tl.arange(0, 4) == 2, z, 0) + tl.where(tl.arange(0, 4) == 3, nx * ny * nz, 0))


@pytest.mark.parametrize("grid", [(3,), (2, 3), (2, 3, 4), 5])
def test_grid_program_ids(grid):
    dims = (grid,) if isinstance(grid, int) else grid
    dims = tuple(dims) + (1,) * (3 - len(dims))
    total = dims[0] * dims[1] * dims[2]
    out = np.full((total, 4), -1, np.int32)
    grid_kernel[grid](out)
    want = [(x, y, z, total) for z in range(dims[2]) for y in range(dims[1]) for x in range(dims[0])]
    np.testing.assert_array_equal(out, np.array(want, np.int32))


def test_empty_grid_runs_nothing():
    out = np.full((1, 4), -1, np.int32)
    grid_kernel[(0,)](out)
    assert (out == -1).all()


# ------------------------------------------------------------------ switching interpret mode on

def test_environment_variable_turns_interpret_mode_on(monkeypatch):
    monkeypatch.setenv("TESSERA_INTERPRET", "1")
    add = tessera.jit(vector_add.add_kernel.fn)
    assert add.interpret
    x = np.arange(10, dtype=np.float32)
    out = np.zeros(10, np.float32)
    add[(1,)](x, x, out, 10, BLOCK_SIZE=16)
    np.testing.assert_array_equal(out, 2 * x)
    assert not tessera.jit(vector_add.add_kernel.fn, interpret=False).interpret
    monkeypatch.setenv("TESSERA_INTERPRET", "0")
    assert not tessera.jit(vector_add.add_kernel.fn).interpret


def test_interpret_attribute_and_run_spelling():
    add = tessera.jit(vector_add.add_kernel.fn)
    add.interpret = True
    x = np.arange(10, dtype=np.float32)
    out = np.zeros(10, np.float32)
    add.run(x, x, out, 10, grid=(1,), BLOCK_SIZE=16)
    np.testing.assert_array_equal(out, 2 * x)


def test_keyword_arguments_defaults_and_launch_options():
    @tessera.jit(interpret=True)
    def scale(x_ptr, out_ptr, n, factor=2.0, BLOCK: tl.constexpr = 16):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * factor, mask=offs < n)

    x = np.arange(10, dtype=np.float32)
    out = np.zeros(10, np.float32)
    scale[(1,)](x, out, n=10, num_warps=8, num_stages=2)
    np.testing.assert_array_equal(out, 2 * x)
    scale[(1,)](x_ptr=x, out_ptr=out, n=10, factor=3)
    np.testing.assert_array_equal(out, 3 * x)
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        scale[(1,)](x, out, 10, bogus=1)


def test_specialisations_are_cached():
    add = tessera.jit(vector_add.add_kernel.fn, interpret=True)
    x = np.arange(32, dtype=np.float32)
    out = np.zeros(32, np.float32)
    for n in (17, 18, 32):
        add[(2,)](x, x, out, n, BLOCK_SIZE=16)
    assert add._interpreter.cache_size == 2  # n=32 is divisible by 16: its own specialisation
    add[(2,)](x.astype(np.float16), x.astype(np.float16), out.astype(np.float16), 17, BLOCK_SIZE=16)
    assert add._interpreter.cache_size == 3
    assert add._interpreter.ir().count("kernel @add_kernel") == 3


def test_arrays_are_written_in_place_and_scalars_follow_gpu_rules():
    @tessera.jit(interpret=True)
    def fill(out_ptr, value, flag, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.where(flag, value, -value) + tl.zeros([BLOCK], tl.float32))

    out = np.zeros(8, np.float64)
    fill[(1,)](out, 1.5, True, BLOCK=8)  # float -> fp32, bool -> i1
    np.testing.assert_array_equal(out, 1.5)
    fill[(1,)](out, np.float32(2.5), np.bool_(False), BLOCK=8)  # numpy scalars
    np.testing.assert_array_equal(out, -2.5)
    fill[(1,)](out, 7, 0, BLOCK=8)  # ints: i32 (an int flag is compared with 0)
    np.testing.assert_array_equal(out, -7.0)


def test_torch_cpu_tensors():
    torch = pytest.importorskip("torch")
    add = interpreted(vector_add.add_kernel)
    x = torch.randn(1000)
    y = torch.randn(1000)
    out = torch.empty(1000)
    add[(tessera.cdiv(1000, 256),)](x, y, out, 1000, BLOCK_SIZE=256)
    assert torch.equal(out, x + y)
    xb, yb = x.bfloat16(), y.bfloat16()
    outb = torch.empty(1000, dtype=torch.bfloat16)
    add[(tessera.cdiv(1000, 256),)](xb, yb, outb, 1000, BLOCK_SIZE=256)
    assert torch.equal(outb, xb + yb)


def test_explicit_specialisation_through_the_extension():
    """tessera._C.interpret: source + signature + constexprs, like tessera.compile()."""
    path = ROOT / "kernels" / "vector_add.py"
    x = np.arange(100, dtype=np.float32)
    out = np.zeros(100, np.float32)
    tessera._C.interpret(path.read_text(), str(path), 1, "add_kernel", "*fp32,*fp32,*fp32,i32",
                         {"BLOCK_SIZE": 64}, (2,), [x, x, out, 100])
    np.testing.assert_array_equal(out, 2 * x)
    with pytest.raises(TypeError, match="is a \\*fp16 but the signature says \\*fp32"):
        tessera._C.interpret(path.read_text(), str(path), 1, "add_kernel", "*fp32,*fp32,*fp32,i32",
                             {"BLOCK_SIZE": 64}, (2,), [x.astype(np.float16), x, out, 100])
    with pytest.raises(ValueError, match="does not fit in i32"):
        tessera._C.interpret(path.read_text(), str(path), 1, "add_kernel", "*fp32,*fp32,*fp32,i32",
                             {"BLOCK_SIZE": 64}, (2,), [x, x, out, 2**40])


# ------------------------------------------------------------------ break, continue, early return

def _helper(x, lim):
    if x > lim:
        return lim
    y = x * 2
    if y > lim:
        return y - lim
    return y


def _pair(x):
    return (-x, 1) if x < 0 else (x, 0)


def _cf_reference(x, n, block, pid):
    """tests/python/lang_kernels/control_flow.py's cf_kernel in Python (None: no store)."""
    if pid >= n:
        return None
    acc = np.zeros(block, np.float64)
    for i in range(0, n):
        if i == 3:
            continue
        v = x[i * block:(i + 1) * block].astype(np.float64)
        if v.sum() > 100.0:
            break
        acc += v
    j = 0
    while True:
        j += 1
        if j >= n:
            break
    k = 0
    while k < n:
        k += 2
        if k == 7:
            continue
        acc += 1.0
    for q in range(0, 10):
        if q > n:
            return None
        acc += q
    for s in range(4):
        if s == 2:
            break
        acc += s
    a, sgn = _pair(pid - 3)
    return acc + _helper(pid, n) + j + a + sgn


@pytest.mark.parametrize("n", [2, 9, 10, 12])
def test_break_continue_and_early_return(n):
    import importlib.util
    spec = importlib.util.spec_from_file_location("control_flow", ROOT / "tests/python/lang_kernels/control_flow.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kernel = interpreted(module.cf_kernel)
    block, programs = 16, 12
    rng = np.random.default_rng(n)
    x = (rng.random(n * block) * 2).astype(np.float32)
    x[5 * block:6 * block] += 10  # row 5's sum passes 100: the first loop breaks there
    out = np.full(programs * block, -1.0, np.float32)
    kernel[(programs,)](x, out, n, BLOCK=block)
    for pid in range(programs):
        want = _cf_reference(x, n, block, pid)
        got = out[pid * block:(pid + 1) * block]
        if want is None:
            assert (got == -1).all(), f"program {pid} should have returned before its store"
        else:
            np.testing.assert_allclose(got, want, rtol=1e-5, err_msg=f"program {pid}")


class _FakeCpuTensor:
    """What interpret mode reads from a torch CPU tensor, backed by a numpy array
    (torch is not needed to test the path)."""

    class _Dtype:
        def __init__(self, name):
            self.name = name

        def __str__(self):
            return "torch." + self.name

    class _Device:
        def __init__(self, type):
            self.type = type

    def __init__(self, array, dtype=None, device="cpu"):
        self.array = array
        self.dtype = self._Dtype(dtype or array.dtype.name)
        self.device = self._Device(device)
        self.shape = array.shape

    def data_ptr(self):
        return self.array.__array_interface__["data"][0]

    def stride(self):
        return tuple(s // self.array.itemsize for s in self.array.strides)

    def element_size(self):
        return self.array.itemsize


def test_torch_like_cpu_tensors_without_torch():
    add = interpreted(vector_add.add_kernel)
    x = np.arange(100, dtype=np.float32)
    out = np.zeros(100, np.float32)
    add[(1,)](_FakeCpuTensor(x), _FakeCpuTensor(x), _FakeCpuTensor(out), 100, BLOCK_SIZE=128)
    np.testing.assert_array_equal(out, 2 * x)
    # bfloat16 storage: uint16 bit patterns described as torch.bfloat16.
    xb = (np.arange(8, dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)
    outb = np.zeros(8, np.uint16)
    add[(1,)](_FakeCpuTensor(xb, "bfloat16"), _FakeCpuTensor(xb, "bfloat16"), _FakeCpuTensor(outb, "bfloat16"), 8,
              BLOCK_SIZE=8)
    np.testing.assert_array_equal((outb.astype(np.uint32) << 16).view(np.float32), 2 * np.arange(8))
    with pytest.raises(tessera.CompilationError, match=r"a torch.float32 tensor of shape \(100,\)"):
        add[(1,)](_FakeCpuTensor(x), _FakeCpuTensor(x), _FakeCpuTensor(out), 101, BLOCK_SIZE=128)
    with pytest.raises(TypeError, match="is a cuda tensor; interpret mode runs on the host"):
        add[(1,)](_FakeCpuTensor(x, device="cuda"), x, out, 100, BLOCK_SIZE=128)
