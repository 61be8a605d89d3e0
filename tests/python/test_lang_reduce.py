"""tl.reduce / tl.associative_scan with @jit combine functions, argmax/argmin,
max/min with return_indices, xor_sum, cumsum/cumprod, and tl.dot."""
import re

import pytest

from lang_support import ARCHS, compile_and_assemble, compile_kernel

SIG = "*fp32,*fp32,*i32"


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("m, n", [(32, 64), (4, 8), (64, 32), (1, 256)])
def test_reductions_and_scans(tmp_path, arch, m, n):
    compile_and_assemble(tmp_path, "reductions.py", "red_kernel", SIG, {"M": m, "N": n}, arch)


def test_reduce_ir_has_combine_regions():
    ir = compile_kernel("reductions.py", "red_kernel", SIG, {"M": 32, "N": 64}, emit="ir")
    assert "reduce_combine" in ir and "= scan " in ir
    assert "reverse = 1" in ir  # cumprod(reverse=True)
    # argmax: values and indices reduced together (two results)
    assert re.search(r"%\d+, %\d+ = reduce_combine", ir)


@pytest.mark.parametrize("warps", [1, 4, 8])
def test_reductions_across_warps(tmp_path, warps):
    compile_and_assemble(tmp_path, "reductions.py", "red_kernel", SIG, {"M": 2, "N": 512}, "sm_90a",
                         extra=["--num-warps", str(warps)])


DOT_SIG = "*{0},*{0},*{0},i32,i32,i32,i32,i32,i32"


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16", "fp64"])
@pytest.mark.parametrize("bm, bn, bk", [(64, 64, 32), (16, 16, 16), (32, 64, 16), (128, 32, 8)])
def test_dot(tmp_path, arch, dtype, bm, bn, bk):
    ptx = compile_and_assemble(tmp_path, "dot.py", "matmul_kernel", DOT_SIG.format(dtype),
                               {"BM": bm, "BN": bn, "BK": bk}, arch)
    # fp16/bf16 (m16n8k16) and fp32 as tf32 (m16n8k8, tl.dot's default
    # input_precision) with block dims that are multiples of the tile run on
    # tensor cores (with fewer 16x8 tiles than the 4 warps, warps repeat tiles
    # as Triton's: 16x16 on [2, 2]).
    k_step = {"fp16": 16, "bf16": 16, "fp32": 8}.get(dtype)
    on_tensor_cores = k_step is not None and bm % 16 == 0 and bn % 8 == 0 and bk % k_step == 0
    # sm_90a: 16-bit dots whose 64-row slabs fit the 4 warps take wgmma instead.
    wgmma = arch == "sm_90a" and dtype in ("fp16", "bf16") and bm % 64 == 0 and bk % 16 == 0 and bn in (16, 32) + tuple(range(64, 257, 64))
    assert ("wgmma.mma_async" if on_tensor_cores and wgmma else "mma.sync" if on_tensor_cores
            else "fma.rn.f64" if dtype == "fp64" else "fma.rn.f32") in ptx
    if dtype == "fp32" and on_tensor_cores:
        assert "m16n8k8.row.col.f32.tf32.tf32.f32" in ptx


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dtype", ["fp32", "fp16", "i8"])
def test_batched_dot(tmp_path, arch, dtype):
    out = "i32" if dtype == "i8" else "fp32"
    ptx = compile_and_assemble(tmp_path, "dot.py", "batched_dot", f"*{dtype},*{dtype},*{out}",
                               {"B": 4, "M": 16, "N": 8, "K": 32}, arch)
    # 3-D dots take the FMA lowering (one product per batch entry).
    assert "mma.sync" not in ptx
    assert ("mad.lo.s32" if dtype == "i8" else "fma.rn.f32") in ptx


@pytest.mark.parametrize("arch", ARCHS)
def test_int8_dot(tmp_path, arch):
    compile_and_assemble(tmp_path, "dot.py", "dot_int8", "*i8,*i8,*i32", {"BM": 16, "BN": 32, "BK": 32}, arch)
