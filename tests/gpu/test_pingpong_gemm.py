"""Ping-pong consumer warpgroups (issue 35, docs/tma.md): the persistent TMA GEMMs with PINGPONG
(num_warps=4 per group, launched as 12 warps: two consumer warpgroups on alternate tiles, taking
turns at the K loop, and the producer warpgroup) against torch in float64, outputs poisoned with
NaN: the plain kernel on 1, 2, 3 and 7 programs (one group without tiles, odd and even tile
counts a program, so every end of the turn-taking), ragged M/N/K, K of one block and of many;
tk.matmul with a '/pingpong' config, with and without every epilogue the fusion benchmark times.
Needs sm_90."""
import importlib
import os

import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402
import tessera.kernels as tk  # noqa: E402
import tessera.language as tl  # noqa: E402
from gpu_helpers import assert_rel_err, poisoned  # noqa: E402
from kernels.matmul import matmul_tma_persistent_kernel  # noqa: E402

MM = importlib.import_module("tessera.kernels.matmul")
DT = {"fp16": torch.float16, "bf16": torch.bfloat16}
SHAPES = [(4096, 4096, 256), (1000, 777, 333), (129, 520, 72), (1, 300, 45), (2048, 1024, 4096), (384, 256, 64)]
PINGPONG = "128x128x64/w4/s4/pingpong"


@pytest.fixture(autouse=True, scope="module")
def hopper():
    if torch.cuda.get_device_capability() < (9, 0):
        pytest.fail("ping-pong needs sm_90a (this GPU is sm_%d%d)" % torch.cuda.get_device_capability())
    saved = os.environ.get("TESSERA_CACHE")
    os.environ["TESSERA_CACHE"] = "0"
    yield
    if saved is None:
        os.environ.pop("TESSERA_CACHE", None)
    else:
        os.environ["TESSERA_CACHE"] = saved


@pytest.mark.parametrize("dtype", list(DT))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("programs", [1, 2, 3, 7, 132])
@pytest.mark.parametrize("blocks", [(128, 128, 64, 4), (128, 128, 64, 3), (64, 128, 64, 4)], ids=str)
def test_pingpong_persistent_matmul_matches_float64(shape, dtype, programs, blocks):
    M, N, K = shape
    bm, bn, bk, stages = blocks
    torch.manual_seed(M + N + K + programs)
    a = torch.randn((M, K), device="cuda").to(DT[dtype])
    b = torch.randn((K, N), device="cuda").to(DT[dtype])
    c = poisoned((M, N), a.dtype)
    a_desc = tessera.TensorDescriptor.from_tensor(a, [bm, bk])
    b_desc = tessera.TensorDescriptor.from_tensor(b, [bk, bn])
    grid = max(1, min(tessera.cdiv(M, bm) * tessera.cdiv(N, bn), programs))
    k = matmul_tma_persistent_kernel[(grid,)](a_desc, b_desc, c, M, N, K, c.stride(0), c.stride(1), BLOCK_M=bm,
                                              BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, NUM_SMS=grid, WARP_SPECIALIZE=True,
                                              PINGPONG=True, num_warps=4, num_stages=stages)
    torch.cuda.synchronize()
    assert k.metadata.num_warps == 12  # two consumer warpgroups and the producer
    assert_rel_err(c, a.double() @ b.double(), 1e-2, f"pingpong {blocks} {shape} on {grid}")


@pytest.mark.parametrize("dtype", list(DT))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_tk_matmul_pingpong_config(shape, dtype):
    """tk.matmul(..., persistent=True, config='.../pingpong'): the plain persistent kernel's form."""
    M, N, K = shape
    torch.manual_seed(M + N + K + 5)
    a = torch.randn((M, K), device="cuda").to(DT[dtype])
    b = torch.randn((K, N), device="cuda").to(DT[dtype])
    c = poisoned((M, N), a.dtype)
    tk.matmul(a, b, c, persistent=True, config=PINGPONG)
    torch.cuda.synchronize()
    assert_rel_err(c, a.double() @ b.double(), 1e-2, f"tk pingpong {shape}")


@tessera.jit
def ep_bias_gelu(acc, bias):
    y = acc + bias
    return 0.5 * y * (1.0 + tl.erf(y * 0.7071067811865476))


@tessera.jit
def ep_residual(acc, residual, alpha):
    return acc * alpha + residual


@tessera.jit
def ep_row_scale(acc, scale):
    return acc * scale


@pytest.mark.parametrize("dtype", list(DT))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("epilogue", ["bias_gelu", "residual", "row_scale"])
def test_tk_matmul_epilogue_pingpong(epilogue, shape, dtype):
    M, N, K = shape
    torch.manual_seed(M * 7 + N + K)
    t = DT[dtype]
    a = torch.randn((M, K), device="cuda", dtype=t)
    b = torch.randn((K, N), device="cuda", dtype=t)
    bias = torch.randn((N,), device="cuda", dtype=t)
    res = torch.randn((M, N), device="cuda", dtype=t)
    scale = torch.rand((M, 1), device="cuda", dtype=torch.float32) + 0.5
    F = torch.nn.functional
    fn, args, ref_of = {
        "bias_gelu": (ep_bias_gelu, (bias,), lambda p: F.gelu(p + bias.double())),
        "residual": (ep_residual, (res, 0.5), lambda p: p * 0.5 + res.double()),
        "row_scale": (ep_row_scale, (scale,), lambda p: p * scale.double()),
    }[epilogue]
    out = poisoned((M, N), t)
    tk.matmul(a, b, out=out, epilogue=fn, epilogue_args=args, config=PINGPONG)
    torch.cuda.synchronize()
    assert_rel_err(out, ref_of(a.double() @ b.double()), 2e-2 if dtype == "bf16" else 4e-3,
                   f"{epilogue} {shape} {dtype} pingpong")
