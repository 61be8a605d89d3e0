"""int4 dequantisation launched as GPTQ's and AWQ's host functions launch it (compatibility mode: constexpr dtype
argument among the positional ones, num_warps=1 / num_stages=1, a grid lambda over META), then the launch the fake
driver recorded -- the PTX, grid, block, dynamic shared bytes and parameter values -- run in the PTX emulator
(tests/python/ptx_emulator.py) on numpy data at the fake tensors' addresses: the whole path from the call to
the kernel's stores, compared bit for bit with numpy."""
import importlib
import pathlib
import sys

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))
from ptx_emulator import GlobalMemory, run_kernel  # noqa: E402

SOURCE = '''
import triton
import triton.language as tl


@triton.jit
def dequant_kernel(g_idx_ptr, scales_ptr, qweight_ptr, qzeros_ptr, out_ptr, out_dtype: tl.constexpr, numels,
                   pack_bits: tl.constexpr, maxq: tl.constexpr, bits: tl.constexpr, out_features: tl.constexpr,
                   num_groups: tl.constexpr, X_BLOCK: tl.constexpr):
    x = tl.program_id(0) * X_BLOCK + tl.arange(0, X_BLOCK)
    mask = x < numels
    row = x // out_features
    col = x % out_features
    per_word: tl.constexpr = pack_bits // bits
    g = tl.load(g_idx_ptr + row, mask=mask, eviction_policy="evict_last")
    g = tl.where(g < 0, g + num_groups, g)
    scale = tl.load(scales_ptr + col + out_features * g, mask=mask, eviction_policy="evict_last").to(tl.float32)
    qz = tl.load(qzeros_ptr + (out_features // per_word) * g + col // per_word, mask=mask, other=0)
    zero = (qz >> ((col % per_word) * bits)) & maxq
    qw = tl.load(qweight_ptr + col + out_features * (row // per_word), mask=mask, other=0)
    weight = (qw >> ((row % per_word) * bits)) & maxq
    value = (weight.to(tl.float32) - zero.to(tl.float32)) * scale
    tl.store(out_ptr + x, value.to(out_dtype), mask=mask)


def dequant(out, qweight, scales, qzeros, g_idx):
    numels = out.shape[0] * out.shape[1]
    return dequant_kernel[(triton.cdiv(numels, 1024),)](
        g_idx, scales, qweight, qzeros, out, tl.float16, numels, pack_bits=32, maxq=15, bits=4,
        out_features=scales.shape[1], num_groups=scales.shape[0], X_BLOCK=1024, num_warps=1, num_stages=1)


@triton.jit
def interleaved_kernel(qweight_ptr, scales_ptr, zeros_ptr, group_size, result_ptr, num_cols, num_rows,
                       BLOCK_SIZE_X: tl.constexpr, BLOCK_SIZE_Y: tl.constexpr):
    rows = tl.program_id(1) * BLOCK_SIZE_Y + tl.arange(0, BLOCK_SIZE_Y)
    cols = tl.program_id(0) * BLOCK_SIZE_X + tl.arange(0, BLOCK_SIZE_X)
    mask = (rows < num_rows)[:, None] & (cols < num_cols)[None, :]
    w = tl.load(qweight_ptr + num_cols * rows[:, None] + cols[None, :], mask)
    w = tl.interleave(w, w)
    w = tl.interleave(w, w)
    w = tl.interleave(w, w)
    order = ((tl.arange(0, 2) * 4)[None, :] + tl.arange(0, 4)[:, None]).reshape(8)
    shifts = tl.reshape(tl.broadcast_to((order * 4)[None, :], (BLOCK_SIZE_Y * BLOCK_SIZE_X, 8)),
                        (BLOCK_SIZE_Y, BLOCK_SIZE_X * 8))
    w = (w >> shifts) & 0xF
    zrow = tl.program_id(1) * BLOCK_SIZE_Y // group_size + tl.arange(0, 1)
    zmask = (zrow < num_rows // group_size)[:, None] & (cols < num_cols)[None, :]
    z = tl.load(zeros_ptr + num_cols * zrow[:, None] + cols[None, :], zmask)
    z = tl.interleave(z, z)
    z = tl.interleave(z, z)
    z = tl.interleave(z, z)
    z = (tl.broadcast_to(z, (BLOCK_SIZE_Y, BLOCK_SIZE_X * 8)) >> shifts) & 0xF
    ocols = tl.program_id(0) * BLOCK_SIZE_X * 8 + tl.arange(0, BLOCK_SIZE_X * 8)
    smask = (zrow < num_rows // group_size)[:, None] & (ocols < num_cols * 8)[None, :]
    s = tl.broadcast_to(tl.load(scales_ptr + num_cols * 8 * zrow[:, None] + ocols[None, :], smask),
                        (BLOCK_SIZE_Y, BLOCK_SIZE_X * 8))
    omask = (rows < num_rows)[:, None] & (ocols < num_cols * 8)[None, :]
    tl.store(result_ptr + 8 * num_cols * rows[:, None] + ocols[None, :],
             ((w - z) * s).to(result_ptr.type.element_ty), omask)


def dequant_interleaved(result, qweight, scales, zeros):
    Y, X = qweight.shape
    grid = lambda META: (triton.cdiv(X, META["BLOCK_SIZE_X"]), triton.cdiv(Y, META["BLOCK_SIZE_Y"]))
    return interleaved_kernel[grid](qweight, scales, zeros, Y // scales.shape[0], result, X, Y,
                                    BLOCK_SIZE_X=32, BLOCK_SIZE_Y=32)
'''


def library(tmp_path):
    import tessera.compat
    (tmp_path / "int4_host.py").write_text(SOURCE)
    tessera.compat.install()
    sys.path.insert(0, str(tmp_path))
    try:
        return importlib.import_module("int4_host")
    finally:
        sys.path.remove(str(tmp_path))
        tessera.compat.uninstall()


def placed(mem, array, dtype):
    return torch.Tensor(mem.alloc(array), dtype=dtype, shape=array.shape)


def replay(fake, pgm, mem):
    """The recorded launch, run in the emulator."""
    last = fake.last()
    assert last["kernel"] == pgm.name and last["params"] is not None
    run_kernel(pgm.asm["ptx"], grid=last["grid"], block=last["block"], args=[v for _, v in last["params"]],
               memory=mem, shared_bytes=last["shared_bytes"])
    return last


def to_int32(words):
    return np.where(words < 2**31, words, words - 2**32).astype(np.int32)


def test_act_order_dequant_as_gptq_launches_it(fake, tmp_path):
    lib = library(tmp_path)
    K, N, group = 128, 512, 32
    rng = np.random.default_rng(7)
    q, z = rng.integers(0, 16, (K, N)), rng.integers(0, 16, (K // group, N))
    scales = (rng.random((K // group, N)) * 0.02 + 0.005).astype(np.float16)
    g_idx = (np.arange(K) // group).astype(np.int32)[rng.permutation(K)]
    mem = GlobalMemory()
    qw = placed(mem, to_int32(sum(q[i::8] << (4 * i) for i in range(8))), torch.int32)
    qz = placed(mem, to_int32(sum(z[:, i::8] << (4 * i) for i in range(8))), torch.int32)
    s, g = placed(mem, scales, torch.float16), placed(mem, g_idx, torch.int32)
    out = placed(mem, np.full((K, N), np.nan, np.float16), torch.float16)
    pgm = lib.dequant(out, qw, s, qz, g)
    last = replay(fake, pgm, mem)
    assert last["grid"] == (K * N // 1024, 1, 1) and last["block"] == (32, 1, 1)
    want = ((q - z[g_idx]).astype(np.float32) * scales[g_idx].astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(mem.read(out.data_ptr(), np.uint16, K * N).reshape(K, N), want.view(np.uint16))


def test_interleaved_dequant_as_awq_launches_it(fake, tmp_path):
    lib = library(tmp_path)
    rows, cols, group = 96, 40, 32
    N = cols * 8
    order = [0, 4, 1, 5, 2, 6, 3, 7]
    rng = np.random.default_rng(8)
    q, z = rng.integers(0, 16, (rows, N)), rng.integers(0, 16, (rows // group, N))
    scales = (rng.random((rows // group, N)) * 0.02 + 0.005).astype(np.float16)
    pack = lambda t: to_int32(sum(t[:, j::8] << (4 * order[j]) for j in range(8)))
    mem = GlobalMemory()
    qw, qz = placed(mem, pack(q), torch.int32), placed(mem, pack(z), torch.int32)
    s = placed(mem, scales, torch.float16)
    out = placed(mem, np.full((rows, N), np.nan, np.float16), torch.float16)
    pgm = lib.dequant_interleaved(out, qw, s, qz)
    last = replay(fake, pgm, mem)
    assert last["grid"] == (2, 3, 1) and last["block"] == (128, 1, 1) and last["shared_bytes"] == pgm.metadata.shared
    diff = (q - np.repeat(z, group, 0)).astype(np.float16).astype(np.float64)
    want = (diff * np.repeat(scales, group, 0).astype(np.float64)).astype(np.float16)
    np.testing.assert_array_equal(mem.read(out.data_ptr(), np.uint16, rows * N).reshape(rows, N),
                                  want.view(np.uint16))
