"""int4 dequantisation on the GPU at the real-world check's size (K = N = 4096), bit for bit against numpy: the
GPTQ-shaped act-order kernel (1 warp, 1024 elements a program) and the AWQ-shaped one (triple interleave, 4
warps, shared memory) of tests/python/lang_kernels/int4_dequant.py. Their PTX gives these exact results in the
CPU emulator (tests/python/test_ptx_emulator.py); the inputs are packed by torch ops on the GPU right before
the launch, without a synchronize, as the check's are (the launch must be ordered after them on torch's
stream). Seeded numpy inputs: both processes of a comparison see the same ones."""
import importlib.util
import pathlib

import numpy as np
import pytest

torch = pytest.importorskip("torch")

SPEC = importlib.util.spec_from_file_location(
    "int4_dequant", pathlib.Path(__file__).resolve().parents[1] / "python" / "lang_kernels" / "int4_dequant.py")
K4 = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(K4)


def to_int32(t):
    return t.where(t < 2**31, t - 2**32).to(torch.int32).contiguous()


def test_act_order_dequant_4096():
    K = N = 4096
    group, ng = 128, 32
    rng = np.random.default_rng(11)
    q = torch.from_numpy(rng.integers(0, 16, (K, N))).cuda()
    z = torch.from_numpy(rng.integers(0, 16, (ng, N))).cuda()
    scales_np = (rng.random((ng, N)) * 0.02 + 0.005).astype(np.float16)
    g_np = (np.arange(K) // group).astype(np.int32)[rng.permutation(K)]
    scales, g_idx = torch.from_numpy(scales_np).cuda(), torch.from_numpy(g_np).cuda()
    qw = torch.zeros(K // 8, N, dtype=torch.int64, device="cuda")
    qz = torch.zeros(ng, N // 8, dtype=torch.int64, device="cuda")
    for i in range(8):
        qw |= q[i::8] << (4 * i)
        qz |= z[:, i::8] << (4 * i)
    out = torch.empty(K, N, dtype=torch.float16, device="cuda")
    K4.dequant_act_order[(K * N // 1024,)](g_idx, scales, to_int32(qw), to_int32(qz), out, K * N,
                                           N=N, NUM_GROUPS=ng, BLOCK=1024, num_warps=1, num_stages=1)
    qn, zn = q.cpu().numpy(), z.cpu().numpy()
    want = ((qn - zn[g_np]).astype(np.float32) * scales_np[g_np].astype(np.float32)).astype(np.float16)
    got = out.cpu().numpy()
    bad = got.view(np.uint16) != want.view(np.uint16)
    assert not bad.any(), f"{bad.sum()} elements differ; max |diff| {np.abs(got - want.astype(np.float32)).max()}"


def test_interleaved_dequant_4096():
    rows, N, group = 4096, 4096, 128
    cols, ng = N // 8, rows // group
    order = [0, 4, 1, 5, 2, 6, 3, 7]
    rng = np.random.default_rng(12)
    q = torch.from_numpy(rng.integers(0, 16, (rows, N))).cuda()
    z = torch.from_numpy(rng.integers(0, 16, (ng, N))).cuda()
    scales_np = (rng.random((ng, N)) * 0.02 + 0.005).astype(np.float16)
    scales = torch.from_numpy(scales_np).cuda()
    pack = lambda t: to_int32(sum(t[:, j::8] << (4 * order[j]) for j in range(8)))
    out = torch.empty(rows, N, dtype=torch.float16, device="cuda")
    K4.dequant_interleaved[(cols // 32, rows // 32)](pack(q), scales, pack(z), group, out, cols, rows,
                                                     BLOCK_X=32, BLOCK_Y=32)
    qn, zn = q.cpu().numpy(), z.cpu().numpy()
    diff = (qn - np.repeat(zn, group, 0)).astype(np.float16).astype(np.float64)
    want = (diff * np.repeat(scales_np, group, 0).astype(np.float64)).astype(np.float16)
    got = out.cpu().numpy()
    bad = got.view(np.uint16) != want.view(np.uint16)
    assert not bad.any(), f"{bad.sum()} elements differ; max |diff| {np.abs(got - want.astype(np.float32)).max()}"
