"""dot(a, w.T) of a loaded [BN x BK] weight block (Unsloth's MoE grouped GEMM) on the GPU:
the pipeline pass copies the block into a transposed tile (async_copy transpose = 1,
compiler/codegen/AsyncCopy.cpp swaps the block's coordinates), read by mma.sync
(64-row block, 8 warps) or wgmma (sm_90a, 128-row block) and, with num_stages >= 3 on
wgmma, the copies issued after the async dot. Against torch in float64, ragged shapes
(masked rows, columns and K), output poisoned with NaN first."""
import os
import sys

import pytest

torch = pytest.importorskip("torch")

from conftest import ROOT  # noqa: E402
from gpu_helpers import assert_rel_err, poisoned  # noqa: E402

sys.path.insert(0, str(ROOT / "tests" / "golden" / "software-pipeline"))
from trans_b import trans_b_matmul  # noqa: E402


@pytest.fixture(autouse=True, scope="module")
def tensor_cores():
    saved = os.environ.get("TESSERA_CACHE")
    os.environ["TESSERA_CACHE"] = "0"
    yield
    if saved is None:
        os.environ.pop("TESSERA_CACHE", None)
    else:
        os.environ["TESSERA_CACHE"] = saved


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("bm, bn, bk, warps, stages", [(64, 128, 64, 8, 3), (128, 128, 64, 8, 3), (64, 64, 32, 4, 4),
                                                       (128, 256, 64, 8, 3), (64, 128, 64, 8, 2)])
@pytest.mark.parametrize("M, N, K", [(512, 1024, 1024), (1000, 777, 333)])
def test_transposed_weight_matmul(dtype, bm, bn, bk, warps, stages, M, N, K):
    g = torch.Generator().manual_seed(M + N + K)
    a = torch.randn(M, K, generator=g).to(dtype).cuda()
    w = torch.randn(N, K, generator=g).to(dtype).cuda()
    c = poisoned((M, N), torch.float32)
    grid = ((M + bm - 1) // bm, (N + bn - 1) // bn)
    trans_b_matmul[grid](a, w, c, M, N, K, a.stride(0), w.stride(0), c.stride(0), BM=bm, BN=bn, BK=bk,
                         num_warps=warps, num_stages=stages)
    torch.cuda.synchronize()
    ref = a.double() @ w.double().T
    assert_rel_err(c.double(), ref, 1e-2, f"{M}x{N}x{K} {bm}x{bn}x{bk}/w{warps}/s{stages}")
