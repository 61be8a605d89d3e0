"""tl.make_tensor_descriptor on the GPU against torch (docs/tma.md, "Descriptors made in
the kernel"): test_core.py's test_trans_4d (every permutation, both shapes, int32 and
int8), a ragged 2-D copy through two descriptors whose stores must stay inside the
tensor, zero and NaN padding, and a descriptor carried by a loop. The descriptors
become masked loads and stores, so any GPU runs them; with triton.set_allocator unset,
as no global scratch is needed. Passed on an H100 on 2026-11-28."""
import itertools
import math
import os
import sys

import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python", "lang_kernels"))
import made_descriptors as kernels  # noqa: E402

DTYPES = {"int32": torch.int32, "int8": torch.int8}


@pytest.mark.parametrize("dtype_str", ["int32", "int8"])
@pytest.mark.parametrize("shape", [(2, 2, 8, 64), (4, 4, 4, 16)])
@pytest.mark.parametrize("perm", list(itertools.permutations([0, 1, 2, 3])))
def test_trans_4d(dtype_str, shape, perm):
    dtype = DTYPES[dtype_str]
    x = torch.arange(math.prod(shape), device="cuda").remainder(127).to(dtype).reshape(shape)
    expected = torch.permute(x, perm)
    actual = torch.zeros(expected.shape, dtype=dtype, device="cuda")
    kernels.trans_4d_kernel[(1, )](x, actual, *shape, *[shape[i] for i in perm], *perm, num_warps=8)
    torch.testing.assert_close(actual, expected.contiguous(), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("shape,block", [((200, 296), (64, 128)), ((45, 40), (16, 16)), ((256, 512), (128, 64))])
def test_ragged_copy_stays_inside_the_tensor(dtype, shape, block):
    M, N = shape
    stride = N + 8  # rows padded: the descriptor sees only the first N columns
    x = torch.randn((M, stride), device="cuda").to(dtype)
    out = torch.full((M, stride), -7.0, device="cuda", dtype=dtype)
    grid = (tessera.cdiv(M, block[0]), tessera.cdiv(N, block[1]))
    kernels.made_desc_copy[grid](x, out, M, N, stride, block[0], block[1])
    torch.testing.assert_close(out[:, :N], x[:, :N].abs() + 1, rtol=0, atol=0)
    assert (out[:, N:] == -7).all(), "a store wrote outside the descriptor's tensor"


@pytest.mark.parametrize("padding", ["zero", "nan"])
def test_padding(padding):
    M, N, BM, BN = 24, 16, 16, 16
    x = torch.arange(M * N, device="cuda", dtype=torch.float32).reshape(M, N)
    out = torch.zeros((BM, BN), device="cuda", dtype=torch.float32)
    kernels.made_desc_padded_load[(1, )](x, out, M, N, BM, BN, padding)
    torch.testing.assert_close(out[:BM // 2], x[M - BM // 2:], rtol=0, atol=0)
    rest = out[BM // 2:]
    assert (rest == 0).all() if padding == "zero" else rest.isnan().all()


def test_descriptor_carried_by_a_loop():
    M, N = 70, 12
    x = torch.randn((M, N), device="cuda", dtype=torch.float32)
    out = torch.zeros(16, device="cuda", dtype=torch.float32)
    kernels.made_desc_in_loop[(1, )](x, out, M, N, 16, 16)
    torch.testing.assert_close(out[:N], x.sum(dim=0), rtol=1e-5, atol=1e-5)


def test_descriptor_functions_and_atomics():
    M, N, BM = 40, 16, 16
    x = torch.randint(-50, 50, (M, N), device="cuda", dtype=torch.int32)
    acc = torch.zeros((2, N), device="cuda", dtype=torch.int32)
    acc[1] = -1000
    doubled = x.clone()
    kernels.made_desc_functions_and_atomics[(tessera.cdiv(M, BM), )](doubled, acc, M, N, BM, N)
    torch.testing.assert_close(acc[0], x.sum(dim=0).to(torch.int32), rtol=0, atol=0)
    torch.testing.assert_close(acc[1], x.max(dim=0).values, rtol=0, atol=0)
    torch.testing.assert_close(doubled, 2 * x, rtol=0, atol=0)
