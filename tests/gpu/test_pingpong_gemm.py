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
# TMA shapes (16-byte aligned rows of A and B): ragged against the 128 x 128 tiles and 64-wide K steps.
SHAPES = [(4096, 4096, 256), (1000, 776, 328), (129, 520, 72), (1, 264, 40), (2048, 1024, 4096), (384, 256, 64)]
# tk.matmul with an epilogue also takes rows TMA cannot read (the '/pingpong' config's tiles, one a program).
EPILOGUE_SHAPES = SHAPES + [(1000, 777, 333), (1, 300, 45)]
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
@pytest.mark.parametrize("shape", EPILOGUE_SHAPES, ids=lambda s: "x".join(map(str, s)))
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


@tessera.jit
def user_persistent_matmul(a_desc, b_desc, c_ptr, M, N, K, stride_cm, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                           BLOCK_K: tl.constexpr, NUM_SMS: tl.constexpr, WARP_SPECIALIZE: tl.constexpr):
    """A user's persistent TMA GEMM as Triton's tutorial 09 spells it (warp_specialize on the tile
    loop): with 4 warps it takes the ping-pong form (tests/python/test_tma_ptx.py)."""
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_tiles = tl.cdiv(M, BLOCK_M) * num_pid_n
    for tile_id in tl.range(tl.program_id(0), num_tiles, NUM_SMS, warp_specialize=WARP_SPECIALIZE):
        pid_m = tile_id // num_pid_n
        pid_n = tile_id % num_pid_n
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(tl.cdiv(K, BLOCK_K)):
            a = a_desc.load([pid_m * BLOCK_M, ki * BLOCK_K])
            b = b_desc.load([ki * BLOCK_K, pid_n * BLOCK_N])
            acc = tl.dot(a, b, acc)
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
        tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], acc.to(tl.float16), mask=mask)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("programs", [1, 3, 132])
def test_user_persistent_gemm_pingpong(shape, programs):
    M, N, K = shape
    torch.manual_seed(M + 2 * N + K)
    a = torch.randn((M, K), device="cuda", dtype=torch.float16)
    b = torch.randn((K, N), device="cuda", dtype=torch.float16)
    c = poisoned((M, N), torch.float16)
    grid = max(1, min(tessera.cdiv(M, 128) * tessera.cdiv(N, 128), programs))
    k = user_persistent_matmul[(grid,)](tessera.TensorDescriptor.from_tensor(a, [128, 64]),
                                        tessera.TensorDescriptor.from_tensor(b, [64, 128]), c, M, N, K, c.stride(0),
                                        BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, NUM_SMS=grid, WARP_SPECIALIZE=True,
                                        num_warps=4, num_stages=4)
    torch.cuda.synchronize()
    assert k.metadata.num_warps == 12
    assert_rel_err(c, a.double() @ b.double(), 1e-2, f"user pingpong {shape} on {grid}")
