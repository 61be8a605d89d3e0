"""A float atomic add of a tensor-core dot's result (old values unread: split-K partial sums,
the attention backward's dQ) runs in the dot's #mma layout (compiler/passes/PropagateMmaLayout.cpp,
atomicAddOfDot): no conversion through shared memory into the pointers' blocked layout (a
32 KiB store, load and two barriers a step for the backward's 64 x 128 dQ, and the registers
of both copies); on sm_90 each thread's adjacent column pairs go as atom.add.v2.f32. The PTX
emulator runs the sm_80 form against numpy (several CTAs adding into the same C)."""
import re

import numpy as np
import pytest

from lang_support import compile_kernel
from ptx_emulator import GlobalMemory, run_kernel

SIG = "*fp16:16,*fp16:16,*fp32:16,i32,i32:16,i32:16"
BLOCKS = {"BM": 64, "BN": 64, "BK": 32}


def kernel(arch, emit="ptx"):
    return compile_kernel("dot_atomic_add.py", "dot_atomic_add", SIG, BLOCKS, arch=arch, emit=emit,
                          extra=["--num-warps", "4", "--num-stages", "1"])


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_atomic_add_takes_the_dot_layout(arch):
    ir = kernel(arch, "ir-opt")
    atomic = next(line for line in ir.splitlines() if "atomic_rmw" in line)
    layout = atomic.rsplit("#", 1)[1].strip()
    mma = re.search(r"^#" + re.escape(layout) + r" = (.*)$", ir, re.M).group(1)
    assert mma.startswith("#mma<"), (atomic, mma)
    ptx = kernel(arch)
    assert "ld.shared" not in ptx  # no conversion of the result (the operands go by ldmatrix / wgmma)
    if arch == "sm_90a":
        assert ptx.count("atom.relaxed.gpu.global.add.v2.f32") == 16, ptx  # 64 x 64 / 128 threads / 2
    else:
        assert ptx.count("atom.relaxed.gpu.global.add.f32") == 32, ptx


def test_emulated_split_k_sums_match_numpy():
    ptx = kernel("sm_80")
    M, N, K = 80, 64, 96  # ragged M: the masked rows add nothing
    rng = np.random.default_rng(7)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c0 = rng.standard_normal((M, N)).astype(np.float32)
    mem = GlobalMemory()
    c = mem.alloc(c0.copy())
    run_kernel(ptx, grid=(2, 1, K // BLOCKS["BK"]), block=(128,), args=[mem.alloc(a), mem.alloc(b), c, M, N, K],
               memory=mem, shared_bytes=48 * 1024)
    got = mem.read(c, np.float32, M * N).reshape(M, N)
    want = c0.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
