"""A broadcast takes its operand's layout unless that layout would give each thread more of the
result than the kernel's anchor layout (layout assignment, compiler/passes/LayoutAssignment.cpp).
The [XBLOCK, 1] target column of Inductor's cross-entropy backward (lang_kernels/broadcast_rows.py)
is loaded with its lanes along dim 0; with XBLOCK = 1 that layout made every thread hold and sum
the whole 1024-wide one-hot row (1033 compares a thread, 7x Triton's time on an H200)."""
import re

import numpy as np
import pytest

from lang_support import assemble, compile_kernel
from ptx_emulator import GlobalMemory, run_kernel

SIG = "*fp32:16,*i64:16,*fp32:16,*fp32:16,i32"


def ptx_for(arch, xblock, rblock, warps=4):
    return compile_kernel("broadcast_rows.py", "nll_grad_kernel", SIG, {"XBLOCK": xblock, "RBLOCK": rblock},
                          arch=arch, extra=["--num-warps", str(warps)])


@pytest.mark.parametrize("warps", [4, 8])
def test_each_thread_holds_its_share_of_the_row(warps, tmp_path):
    ptx = ptx_for("sm_90a", 1, 1024, warps)
    per_thread = 1024 // (32 * warps)
    assert len(re.findall(r"\bex2\.approx", ptx)) == per_thread
    # the one-hot compares: a few an element (1,033 a thread before)
    assert len(re.findall(r"\bsetp\.eq\.s64", ptx)) <= 4 * per_thread
    assemble(ptx, "sm_90a", tmp_path)


@pytest.mark.parametrize("xblock", [1, 2])
def test_emulated_ptx_matches_numpy(xblock):
    rows, rblock = 3, 256
    rng = np.random.default_rng(3)
    logits = rng.standard_normal((rows, rblock)).astype(np.float32)
    target = np.array([5, -100, 200], np.int64)
    lse = np.log(np.exp(logits.astype(np.float64)).sum(1))
    scale = np.float32(0.25)
    keep = target != -100
    weight = np.where(np.where(keep, target, 0)[:, None] == np.arange(rblock)[None, :], -1.0, 0.0) * \
        np.where(keep, scale, 0.0)[:, None]
    want = weight - np.exp(logits - lse[:, None]) * weight.sum(1, keepdims=True)
    mem = GlobalMemory()
    grad = mem.alloc(logits.copy())
    args = [grad, mem.alloc(target), mem.alloc(np.array([scale], np.float32)), mem.alloc(lse.astype(np.float32)), rows]
    run_kernel(ptx_for("sm_80", xblock, rblock), grid=(-(-rows // xblock),), block=(128,), args=args, memory=mem,
               shared_bytes=4096)
    got = mem.read(grad, np.float32, rows * rblock).reshape(rows, rblock)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
