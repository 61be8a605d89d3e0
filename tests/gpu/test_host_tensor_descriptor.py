"""Tensor descriptor arguments on the GPU against torch (docs/tma.md, "Descriptor arguments"),
mirroring Triton's test_tensor_descriptor.py host-descriptor tests: a block at offsets with
desc.shape / desc.strides checked by device asserts (test_host_tensor_descriptor_load), the
descriptor matmul (test_host_tensor_descriptor_matmul), NaN padding
(test_tensor_descriptor_padding), the six atomics (test_tensor_descriptor_reduce, host
variant) and a store with a downcast (test_tensor_descriptor_store_downcast); both
tessera.TensorDescriptor and a Triton-style dataclass. On sm_90 loads and stores go through
the TMA unit, elsewhere (and the atomics) through masked pointers.
Passed on an H100 on 2026-11-28."""
import dataclasses
import os
import sys
from typing import Any, List

import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402
from tessera import TensorDescriptor  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python", "lang_kernels"))
import host_descriptors as K  # noqa: E402


@dataclasses.dataclass
class TritonDescriptor:
    """Triton's triton.tools.tensor_descriptor.TensorDescriptor, field for field."""
    base: Any
    shape: List[int]
    strides: List[int]
    block_shape: List[int]
    padding: str = "zero"


TritonDescriptor.__name__ = "TensorDescriptor"

DTYPES = {"int8": torch.int8, "uint8": torch.uint8, "int16": torch.int16, "int32": torch.int32,
          "int64": torch.int64, "float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
          "float64": torch.float64}


def random(shape, dtype_str, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    dtype = DTYPES[dtype_str]
    if dtype.is_floating_point:
        return torch.randn(shape, device="cuda", generator=g).to(dtype)
    return torch.randint(-100 if dtype != torch.uint8 else 0, 100, shape, device="cuda", generator=g).to(dtype)


@pytest.mark.parametrize("make", [TensorDescriptor, TritonDescriptor])
@pytest.mark.parametrize("dtype_str", list(DTYPES))
@pytest.mark.parametrize("M_BLOCK,N_BLOCK", [(2, 16), (8, 16), (8, 32), (8, 128)])
def test_host_tensor_descriptor_load(make, dtype_str, M_BLOCK, N_BLOCK):
    M, N = M_BLOCK * 3, N_BLOCK * 4
    inp = random((M, N), dtype_str)
    out = inp.new_empty((M_BLOCK, N_BLOCK))
    desc = make(inp, list(inp.shape), list(inp.stride()), [M_BLOCK, N_BLOCK])
    tessera.jit(K.host_desc_block.fn, debug=True)[(1,)](out, desc, M, N, M_BLOCK, N_BLOCK)
    torch.testing.assert_close(out, inp[M_BLOCK:2 * M_BLOCK, 2 * N_BLOCK:3 * N_BLOCK], rtol=0, atol=0)


@pytest.mark.parametrize("BLOCK_M,BLOCK_N,BLOCK_K,num_stages", [
    (128, 128, 16, 1), (256, 64, 32, 2), (64, 512, 32, 2), (128, 128, 16, 4), (64, 128, 32, 4), (32, 32, 32, 4),
    (256, 128, 32, 4)])
def test_host_tensor_descriptor_matmul(BLOCK_M, BLOCK_N, BLOCK_K, num_stages):
    M, N, K_ = 1024, 512, 256
    torch.manual_seed(42)
    A = torch.randn((M, K_), dtype=torch.float16, device="cuda")
    B = torch.randn((K_, N), dtype=torch.float16, device="cuda")
    C = torch.empty((M, N), dtype=torch.float16, device="cuda")
    grid = (tessera.cdiv(M, BLOCK_M), tessera.cdiv(N, BLOCK_N), 1)
    K.host_desc_matmul[grid](TensorDescriptor(A, A.shape, A.stride(), [BLOCK_M, BLOCK_K]),
                             TensorDescriptor(B, B.shape, B.stride(), [BLOCK_K, BLOCK_N]),
                             TensorDescriptor(C, C.shape, C.stride(), [BLOCK_M, BLOCK_N]),
                             num_warps=8, num_stages=num_stages)
    ref = torch.matmul(A.to(torch.float32), B.to(torch.float32)).to(torch.float16)
    torch.testing.assert_close(C, ref, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("make", [TensorDescriptor, TritonDescriptor])
@pytest.mark.parametrize("padding", ["zero", "nan"])
def test_tensor_descriptor_padding(make, padding):
    IM = IN = 48
    OM = ON = 64
    inp = torch.arange(IM * IN, device="cuda", dtype=torch.float32).reshape(IM, IN)
    out = torch.zeros((OM, ON), device="cuda", dtype=torch.float32)
    desc = make(inp, list(inp.shape), list(inp.stride()), [32, 32], padding)
    K.host_desc_tile_copy[(2, 2)](desc, out, ON, 32, 32)
    expected = torch.full((OM, ON), float("nan") if padding == "nan" else 0.0, device="cuda")
    expected[:IM, :IN] = inp
    torch.testing.assert_close(out, expected, equal_nan=True, rtol=0, atol=0)


REDUCE = {"add": lambda a, b: a + b, "min": torch.minimum, "max": torch.maximum, "and": torch.bitwise_and,
          "or": torch.bitwise_or, "xor": torch.bitwise_xor}
# The element types Triton's descriptor atomics take without native TMA reductions.
SUPPORTED = {"add": ["int32", "float32", "float16", "bfloat16"], "min": ["int32", "int64"], "max": ["int32", "int64"],
             "and": ["int32", "int64"], "or": ["int32", "int64"], "xor": ["int32", "int64"]}


@pytest.mark.parametrize("kind,dtype_str", [(k, d) for k, ds in SUPPORTED.items() for d in ds])
@pytest.mark.parametrize("M_BLOCK,N_BLOCK", [(2, 16), (8, 16), (8, 32), (8, 128), (512, 32), (1, 1024)])
def test_tensor_descriptor_reduce(kind, dtype_str, M_BLOCK, N_BLOCK):
    M, N = M_BLOCK * 2, N_BLOCK * 2
    inp, out = random((M, N), dtype_str, 1), random((M, N), dtype_str, 2)
    expected = REDUCE[kind](out.to(torch.float32) if kind == "add" and dtype_str in ("float16", "bfloat16") else out,
                            inp.to(torch.float32) if kind == "add" and dtype_str in ("float16", "bfloat16") else inp)
    K.host_desc_reduce[(2, 2)](TensorDescriptor.from_tensor(out, [M_BLOCK, N_BLOCK]), inp, M, N, M_BLOCK, N_BLOCK,
                               kind)
    tol = dict(rtol=1e-2, atol=1e-2) if dtype_str in ("float16", "bfloat16") else {}
    torch.testing.assert_close(out, expected.to(out.dtype), check_dtype=False, **tol)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_tensor_descriptor_store_downcast(dtype):
    M, N = 32, 128
    out = torch.empty((M, N), dtype=dtype, device="cuda")
    K.host_desc_store_downcast[(M // 8, N // 32)](TensorDescriptor(out, out.shape, out.stride(), [8, 32]), M, N,
                                                  M_BLOCK=8, N_BLOCK=32)
    ref = torch.arange(M * N, dtype=torch.float32, device="cuda").reshape(M, N).to(dtype)
    torch.testing.assert_close(out, ref, rtol=0, atol=0)


def test_shape_and_strides_are_the_tensors():
    x = torch.zeros((40, 64), device="cuda")[:, :48]
    out = torch.zeros(4, dtype=torch.int64, device="cuda")
    K.host_desc_shape_out[(1,)](TensorDescriptor(x, x.shape, x.stride(), [8, 16]), out)
    assert out.tolist() == [40, 48, 64, 1]


@pytest.mark.parametrize("kind", ["min", "max"])
@pytest.mark.parametrize("dtype_str", ["float16", "bfloat16"])
@pytest.mark.parametrize("M_BLOCK,N_BLOCK", [(2, 16), (8, 16), (8, 32), (8, 128)])
def test_half_min_max_are_tma_reductions(kind, dtype_str, M_BLOCK, N_BLOCK):
    """fp16 / bf16 atomic_min / atomic_max: cp.reduce.async.bulk.tensor on sm_90 (Triton's native
    reductions), which the pointer path does not have."""
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("TMA reductions need sm_90")
    M, N = M_BLOCK * 2, N_BLOCK * 2
    inp, out = random((M, N), dtype_str, 1), random((M, N), dtype_str, 2)
    expected = REDUCE[kind](out, inp)
    K.host_desc_reduce[(2, 2)](TensorDescriptor.from_tensor(out, [M_BLOCK, N_BLOCK]), inp, M, N, M_BLOCK, N_BLOCK,
                               kind)
    torch.testing.assert_close(out, expected, rtol=0, atol=0)
