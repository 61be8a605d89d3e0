"""reshape(load(p, mask, other)) that only adds or drops dims of size 1 is the load computed in the
reshaped shape (canonicalize, compiler/passes/Canonicalize.cpp): a [1, BN, BK] block of a 3-D
descriptor made in the kernel (Unsloth's MoE grouped GEMM with USE_TMA_LOAD_W) then reaches its
dot without a reshape, so the pipeline pass stages it by cp.async like any 2-D block (before: an
ordinary load in every iteration, not overlapped). Results through the interpreter (which runs the
canonicalized IR) against numpy, with ragged edges; the IR and the PTX for sm_90a."""
import importlib.util
import re

import numpy as np
import pytest

import tessera
from conftest import ROOT
from lang_support import compile_and_assemble, compile_kernel

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")

FILE = "unit_reshaped_loads.py"
MATMUL_SIG = "*bf16:16,*bf16:16,*bf16:16,i32,i32,i32"
MATMUL_CX = {"N": 256, "K": 256, "BM": 64, "BN": 128, "BK": 64}


def kernels():
    spec = importlib.util.spec_from_file_location("unit_reshaped_loads", ROOT / "tests/python/lang_kernels" / FILE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_no_reshape_is_left_after_canonicalize():
    ir = compile_kernel(FILE, "expert_matmul", MATMUL_SIG, MATMUL_CX, emit="ir-opt",
                        extra=["--stop-after", "dead-code-elimination"])
    assert "reshape" not in ir
    assert re.search(r"= load [^\n]*: <128x64xbf16>", ir)


@pytest.mark.parametrize("warps", [4, 8])
def test_the_weight_block_is_staged_by_cp_async(tmp_path, warps):
    ptx = compile_and_assemble(tmp_path, FILE, "expert_matmul", MATMUL_SIG, MATMUL_CX,
                               extra=["--num-warps", str(warps), "--num-stages", "3"])
    copies = re.findall(r"cp\.async\.cg\.shared\.global[^;]*;", ptx)
    # x (64 x 64) and w (128 x 64) bf16 blocks in 16-byte runs, 3 stages
    assert len(copies) == 3 * (64 * 64 + 128 * 64) // (8 * 32 * warps), len(copies)
    assert not re.search(r"ld\.global(\.nc)?\.v4", ptx)  # no block load is left in the loop


@pytest.mark.parametrize("M, N", [(64, 256), (45, 200)])
def test_expert_matmul_interpreted(M, N):
    mod = kernels()
    E, K, expert = 3, 128, 2
    rng = np.random.default_rng(M)
    x = rng.standard_normal((M, K)).astype(np.float32)
    w = rng.standard_normal((E, N, K)).astype(np.float32)
    y = np.full((M, N), np.nan, np.float32)
    kernel = tessera.jit(mod.expert_matmul.fn, interpret=True)
    kernel[(-(-M // 32), -(-N // 64))](x, w, y, M, E, expert, N=N, K=K, BM=32, BN=64, BK=32)
    np.testing.assert_allclose(y, x.astype(np.float64) @ w[expert].astype(np.float64).T, rtol=1e-4, atol=1e-4)


def test_unit_dim_gather_interpreted():
    mod = kernels()
    M, N, stride, BM, BN = 5, 6, 9, 8, 8
    x = np.arange(M * stride, dtype=np.float32).reshape(M, stride)
    out = np.zeros((BM, BN), np.float32)
    tessera.jit(mod.unit_dim_gather.fn, interpret=True)[(1,)](x, out, M, N, stride, BM=BM, BN=BN)
    want = np.full((BM, BN), -1.0, np.float32)
    want[:M, :N] = x[:, :N]
    np.testing.assert_array_equal(out, want * 2)
    ir = compile_kernel(FILE, "unit_dim_gather", "*fp32:16,*fp32:16,i32,i32,i32", {"BM": BM, "BN": BN},
                        emit="ir-opt", extra=["--stop-after", "dead-code-elimination"])
    assert "reshape" not in ir and "<8x1x8x" not in ir
