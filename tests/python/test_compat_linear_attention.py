"""Constructs of flash-linear-attention's kernels (fla/ops) in kernels written here in their style:
an autotune key that lists names the kernel does not have (left out, as Triton does), a grid given
as `kernel[n, m]`, heuristics on None arguments, a boolean block added to a float block,
fp_downcast_rounding on a block pointer's store, and backward recurrences over chunks in reverse
(`for i_t in range(NT - 1, -1, -1)`: a constexpr negative step with runtime bounds)."""
import subprocess
import sys
import warnings

import numpy as np
import pytest

import tessera
import tessera.compat
import tessera.language as tl
from conftest import PTXAS

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")


KERNELS = '''
import triton
import triton.language as tl


@triton.heuristics({'USE_SCALE': lambda args: args['scale'] is not None})
@triton.autotune(
    configs=[triton.Config({}, num_warps=w) for w in [1, 2]],
    key=['H', 'K', 'BT'],  # K and BT name no parameter: left out of the key
)
@triton.jit(do_not_specialize=['T'])
def unit_lower_kernel(A, out, scale, T, H: tl.constexpr, USE_SCALE: tl.constexpr):
    i_t, i_h = tl.program_id(0), tl.program_id(1)
    o = tl.arange(0, 16)
    p_A = tl.make_block_ptr(A + i_h * T * 16, (T, 16), (16, 1), (i_t * 16, 0), (16, 16), (1, 0))
    p_o = tl.make_block_ptr(out + i_h * T * 16, (T, 16), (16, 1), (i_t * 16, 0), (16, 16), (1, 0))
    b_A = tl.load(p_A, boundary_check=(0, 1))
    b_A = -tl.where(o[:, None] > o[None, :], b_A, 0)
    if USE_SCALE:
        b_A *= scale
    b_A += o[:, None] == o[None, :]
    tl.store(p_o, b_A.to(p_o.dtype.element_ty, fp_downcast_rounding="rtne"), boundary_check=(0, 1))
'''


@pytest.fixture
def fla_like(tmp_path, monkeypatch):
    (tmp_path / "flalike").mkdir()
    (tmp_path / "flalike" / "__init__.py").write_text("")
    (tmp_path / "flalike" / "kernels.py").write_text(KERNELS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("TESSERA_INTERPRET", "1")
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path / "cache"))
    tessera.compat.install()
    import importlib
    try:
        yield importlib.import_module("flalike.kernels")
    finally:
        tessera.compat.uninstall()
        for name in ["flalike.kernels", "flalike"]:
            sys.modules.pop(name, None)


@pytest.mark.parametrize("scale", [None, 0.5])
def test_stale_autotune_keys_and_subscript_grid(fla_like, scale):
    T, H = 40, 2
    A = np.random.default_rng(0).standard_normal((H, T, 16)).astype(np.float32)
    out = np.zeros((H, T, 16), np.float16)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fla_like.unit_lower_kernel[tessera.cdiv(T, 16), H](A=A, out=out, scale=scale, T=T, H=H)
    assert any("key 'K' is not a parameter of unit_lower_kernel" in str(w.message) for w in caught)
    rows = np.arange(T) % 16
    want = np.where(rows[None, :, None] > np.arange(16)[None, None, :], -A * (scale or 1.0), 0.0)
    want += rows[None, :, None] == np.arange(16)[None, None, :]
    np.testing.assert_array_equal(out, want.astype(np.float16))


@tessera.jit(interpret=True)
def reverse_chunks_kernel(x_ptr, out_ptr, T, BT: tl.constexpr, D: tl.constexpr):
    # out[t] = x[t] + 0.5 * out[t + BT] chunk by chunk from the last chunk back (a backward recurrence)
    NT = tl.cdiv(T, BT)
    b_h = tl.zeros([BT, D], dtype=tl.float32)
    o_d = tl.arange(0, D)
    for i_t in range(NT - 1, -1, -1):
        o_t = i_t * BT + tl.arange(0, BT)
        m = (o_t < T)[:, None]
        b_h = 0.5 * b_h + tl.load(x_ptr + o_t[:, None] * D + o_d[None, :], mask=m, other=0.0)
        tl.store(out_ptr + o_t[:, None] * D + o_d[None, :], b_h, mask=m)


def test_reverse_chunk_loop():
    T, BT, D = 45, 16, 8
    x = np.random.default_rng(1).standard_normal((T, D)).astype(np.float32)
    out = np.zeros_like(x)
    reverse_chunks_kernel[(1,)](x, out, T, BT=BT, D=D)
    xp = np.zeros((48, D)); xp[:T] = x
    want = np.zeros((48, D)); h = np.zeros((BT, D))
    for c in range(2, -1, -1):
        h = 0.5 * h + xp[c * BT:(c + 1) * BT]
        want[c * BT:(c + 1) * BT] = h
    np.testing.assert_allclose(out, want[:T], rtol=1e-6)


def test_reverse_chunk_loop_compiles_for_the_gpu(tmp_path):
    k = tessera.compile(reverse_chunks_kernel, signature="*bf16,*fp32,i32", constexprs={"BT": 64, "D": 64},
                        target="sm_90a")
    (tmp_path / "k.ptx").write_text(k.asm["ptx"])
    subprocess.run([str(PTXAS), "-arch=sm_90a", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")], check=True)


@tessera.jit(interpret=True)
def sum_range_kernel(out_ptr, lo, hi, STEP: tl.constexpr, BREAK_BELOW: tl.constexpr):
    acc = tl.zeros([], tl.int64)
    for i in range(lo, hi, STEP):
        if i < BREAK_BELOW:
            break
        acc += i
    tl.store(out_ptr, acc)


@tessera.jit(interpret=True)
def sum_range_for_kernel(out_ptr, lo, hi, STEP: tl.constexpr):
    acc = tl.zeros([], tl.int64)
    for i in range(lo, hi, STEP):
        acc += i
    tl.store(out_ptr, acc)


@pytest.mark.parametrize("lo, hi, step", [(15, -16, -1), (15, -16, -2), (15, -16, -3), (-18, -22, -1), (22, 18, -1),
                                          (3, 9, -1), (2**35, 2**35 - 20, -3)])
@pytest.mark.parametrize("break_below", [-(2**40), 0])
def test_negative_constexpr_steps_count_down(lo, hi, step, break_below):
    out = np.zeros(1, np.int64)
    if break_below == 0:  # a loop with a break takes the while-loop form
        sum_range_kernel[(1,)](out, lo, hi, STEP=step, BREAK_BELOW=break_below)
    else:
        sum_range_for_kernel[(1,)](out, lo, hi, STEP=step)
    want = 0
    for i in range(lo, hi, step):
        if i < break_below:
            break
        want += i
    assert out[0] == want


@tessera.jit(interpret=True)
def zero_step_kernel(out_ptr, n):
    for i in range(0, n, 0):
        tl.store(out_ptr, i)


def test_zero_step_is_one_clear_error():
    with pytest.raises(tessera.CompilationError, match="range\\(\\) arg 3 must not be zero"):
        zero_step_kernel[(1,)](np.zeros(1, np.int32), 4)
