"""Tensor descriptor arguments (tessera.TensorDescriptor and Triton's TensorDescriptor, which
the launch adopts; docs/tma.md, "Descriptor arguments"): the interpreter against numpy (a block,
desc.shape / desc.strides, zero and NaN padding, a store with a downcast, the six atomics, the
functional forms, a matmul), PTX for sm_90a (TMA) and sm_80 (masked pointers) that ptxas takes,
and the hidden parameters the kernel declares. Launch packing: tests/fake_driver/test_tensor_descriptor.py;
on the GPU: tests/gpu/test_host_tensor_descriptor.py."""
import dataclasses
import os
import re
import sys
from typing import Any, List

import ml_dtypes
import numpy as np
import pytest

import tessera
from tessera import TensorDescriptor
from lang_support import ARCHS, compile_and_assemble

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lang_kernels"))
import host_descriptors as K  # noqa: E402

FILE = "host_descriptors.py"


def interpreted(kernel):
    kernel.interpret = True
    return kernel


@dataclasses.dataclass
class TritonStyleDescriptor:
    """Triton's triton.tools.tensor_descriptor.TensorDescriptor, field for field (a dataclass of
    that name; Triton is not installed here): the launch reads such objects by their fields."""
    base: Any
    shape: List[int]
    strides: List[int]
    block_shape: List[int]
    padding: str = "zero"


TritonStyleDescriptor.__name__ = "TensorDescriptor"


def rand(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -100), min(info.max, 100), size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


# ---- the interpreter against numpy ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, ml_dtypes.bfloat16, np.int8, np.int32,
                                   np.uint64])
@pytest.mark.parametrize("M_BLOCK,N_BLOCK", [(2, 16), (8, 16), (8, 32), (8, 128)])
def test_load_reads_the_block_at_the_offsets(dtype, M_BLOCK, N_BLOCK):
    M, N = M_BLOCK * 3, N_BLOCK * 4
    inp = rand((M, N), dtype)
    out = np.zeros((M_BLOCK, N_BLOCK), dtype)
    desc = TensorDescriptor(inp, shape=inp.shape, strides=(N, 1), block_shape=[M_BLOCK, N_BLOCK])
    interpreted(K.host_desc_block)[(1,)](out, desc, M, N, M_BLOCK, N_BLOCK)
    np.testing.assert_array_equal(out, inp[M_BLOCK:2 * M_BLOCK, 2 * N_BLOCK:3 * N_BLOCK])


def test_shape_and_strides_are_the_tensors():
    x = np.zeros((40, 64), np.float32)[:, :48]  # a view: shape (40, 48), strides (64, 1)
    out = np.zeros(4, np.int64)
    interpreted(K.host_desc_shape_out)[(1,)](TensorDescriptor(x, x.shape, (64, 1), [8, 16]), out)
    np.testing.assert_array_equal(out, [40, 48, 64, 1])


@pytest.mark.parametrize("padding", ["zero", "nan"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_padding_fills_outside_the_tensor(padding, dtype):
    IM = IN = 48
    OM = ON = 64
    inp = np.arange(IM * IN, dtype=np.float32).reshape(IM, IN).astype(dtype)
    out = np.ones((OM, ON), dtype)
    desc = TensorDescriptor(inp, inp.shape, (IN, 1), [32, 32], padding=padding)
    interpreted(K.host_desc_tile_copy)[(2, 2)](desc, out, ON, 32, 32)
    expected = np.full((OM, ON), np.nan if padding == "nan" else 0, dtype)
    expected[:IM, :IN] = inp
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_store_converts_to_the_descriptors_dtype(dtype):
    M, N = 32, 128
    out = np.zeros((M, N), dtype)
    interpreted(K.host_desc_store_downcast)[(4, 4)](TensorDescriptor(out, out.shape, (N, 1), [8, 32]), M, N,
                                                    M_BLOCK=8, N_BLOCK=32)
    np.testing.assert_array_equal(out, np.arange(M * N, dtype=np.float32).reshape(M, N).astype(dtype))


REDUCE = {"add": np.add, "min": np.minimum, "max": np.maximum, "and": np.bitwise_and, "or": np.bitwise_or,
          "xor": np.bitwise_xor}


# The element types Triton's descriptor atomics take (others are errors: tests/errors/host_descriptor_atomic_dtype).
ATOMIC_CASES = [(kind, dtype) for kind in REDUCE for dtype in (np.int32, np.uint32, np.int64, np.uint64, np.float32)
                if not (dtype == np.float32 and kind != "add") and not (dtype == np.int64 and kind == "add")]


@pytest.mark.parametrize("kind,dtype", ATOMIC_CASES)
@pytest.mark.parametrize("M_BLOCK,N_BLOCK", [(2, 16), (8, 32), (512, 32), (1, 1024)])
def test_atomics_combine_with_the_tensor(kind, dtype, M_BLOCK, N_BLOCK):
    M, N = M_BLOCK * 2, N_BLOCK * 2
    a, out = rand((M, N), dtype, 1), rand((M, N), dtype, 2)
    expected = REDUCE[kind](out, a)
    desc = TensorDescriptor(out, out.shape, (N, 1), [M_BLOCK, N_BLOCK])
    interpreted(K.host_desc_reduce)[(2, 2)](desc, a, M, N, M_BLOCK, N_BLOCK, kind)
    if dtype == np.float32:
        np.testing.assert_allclose(out, expected, rtol=1e-6)
    else:
        np.testing.assert_array_equal(out, expected)


def test_functional_forms():
    x = rand((64, 32), np.float32)
    y = np.zeros_like(x)
    interpreted(K.host_desc_functional)[(4,)](TensorDescriptor(x, x.shape, (32, 1), [16, 32]),
                                              TensorDescriptor(y, y.shape, (32, 1), [16, 32]))
    np.testing.assert_array_equal(y, 2 * x)


def test_matmul_interpreted():
    M, N, K_ = 64, 64, 96  # K not a multiple of BLOCK_K: the last A and B blocks read zero padding
    a, b = rand((M, K_), np.float16, 3), rand((K_, N), np.float16, 4)
    c = np.zeros((M, N), np.float16)
    interpreted(K.host_desc_matmul)[(2, 2)](TensorDescriptor(a, a.shape, (K_, 1), [32, 64]),
                                            TensorDescriptor(b, b.shape, (N, 1), [64, 32]),
                                            TensorDescriptor(c, c.shape, (N, 1), [32, 32]))
    expected = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.astype(np.float64), expected, rtol=2e-2, atol=2e-2)


def test_triton_style_descriptor_is_adopted_by_its_fields():
    inp = rand((24, 64), np.float32)
    out = np.zeros((8, 16), np.float32)
    desc = TritonStyleDescriptor(inp, inp.shape, [64, 1], [8, 16])
    kernel = interpreted(K.host_desc_block)
    kernel[(1,)](out, desc, 24, 64, 8, 16)
    np.testing.assert_array_equal(out, inp[8:16, 32:48])
    made = desc._tessera_descriptor[1]
    kernel[(1,)](out, desc, 24, 64, 8, 16)
    assert desc._tessera_descriptor[1] is made  # unchanged fields: the same descriptor
    desc.block_shape = [4, 16]  # an autotuner's pre_hook: made again
    out4 = np.zeros((4, 16), np.float32)
    kernel[(1,)](out4, desc, 24, 64, 4, 16)
    assert desc._tessera_descriptor[1] is not made and desc._tessera_descriptor[1].block_shape == (4, 16)
    np.testing.assert_array_equal(out4, inp[4:8, 32:48])


def test_padding_is_checked_when_the_descriptor_is_made():
    x = np.zeros((16, 16), np.int32)
    with pytest.raises(ValueError, match=r"Padding option `nan` is only supported for floating point tensors"):
        TensorDescriptor(x, x.shape, (16, 1), [16, 16], padding="nan")
    with pytest.raises(ValueError, match=r"Illegal value for padding: 'one'"):
        TensorDescriptor(x, x.shape, (16, 1), [16, 16], padding="one")
    assert TensorDescriptor(x.astype(np.float32), x.shape, (16, 1), [16, 16], padding="nan").padding == "nan"
    assert TensorDescriptor.from_tensor(x, [16, 16]).padding == "zero"


def test_interpret_mode_checks_the_block_rank():
    x = np.zeros((16, 16), np.float32)
    with pytest.raises(ValueError, match=r"host_desc_tile_copy\(\): argument 'in_desc' is a TensorDescriptor whose "
                                         r"block_shape has 1 dimensions and strides 2 for a tensor of 2"):
        interpreted(K.host_desc_tile_copy)[(1, 1)](TensorDescriptor(x, x.shape, (16, 1), [16]), x, 16, 16, 16)
    y = np.zeros((2,) * 6, np.float32)
    with pytest.raises(ValueError, match=r"argument 'in_desc' is a TensorDescriptor of rank 6; descriptors have 1 to 5"):
        interpreted(K.host_desc_tile_copy)[(1, 1)](TensorDescriptor(y, y.shape, (32, 16, 8, 4, 2, 1), [2] * 6), x,
                                                   16, 16, 16)


# ---- PTX ---------------------------------------------------------------------------------------------------

BULK_LOAD = "cp.async.bulk.tensor.2d.shared::cluster.global"
BULK_STORE = "cp.async.bulk.tensor.2d.global.shared::cta"


def uses_tma(ptx):
    return BULK_LOAD in ptx or BULK_STORE in ptx


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dtype,block,tma", [("fp16", (8, 32), True), ("i8", (8, 128), True),
                                             ("i8", (2, 16), False), ("fp32", (2, 16), True)])
def test_load_with_runtime_shape_asserts(tmp_path, arch, dtype, block, tma):
    """sm_90a: a TMA copy where Tma.cpp takes the block (rows of 32 bytes or more), else pointers."""
    ptx = compile_and_assemble(tmp_path, FILE, "host_desc_block", f"*{dtype},tensordesc<{dtype}[{block[0]},{block[1]}]>,i32,i32",
                               {"M_BLOCK": block[0], "N_BLOCK": block[1]}, arch, extra=("--debug",))
    assert (BULK_LOAD in ptx) == (arch == "sm_90a" and tma)
    assert BULK_LOAD in ptx or "ld.global" in ptx


def test_hidden_parameters_follow_the_kernels_own(tmp_path):
    ptx = compile_and_assemble(tmp_path, FILE, "host_desc_shape_out", "tensordesc<fp32[8,16]>,*i64", {})
    params = re.findall(r"\.param (\.[^\n,]*?)host_desc_shape_out_param_(\d+)", ptx)
    kinds = [p[0].strip() for p in params]
    assert kinds == [".align 64 .b8", ".u64", ".u64", ".u32", ".u32", ".u64", ".u32"], kinds


@pytest.mark.parametrize("arch", ARCHS)
def test_store_downcast(tmp_path, arch):
    ptx = compile_and_assemble(tmp_path, FILE, "host_desc_store_downcast", "tensordesc<bf16[8,32]>,i32,i32",
                               {"M_BLOCK": 8, "N_BLOCK": 32}, arch)
    assert (BULK_STORE in ptx) == (arch == "sm_90a")
    assert "cvt.rn.bf16.f32" in ptx or "cvt.rn.bf16x2.f32" in ptx


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("kind,dtype", [("add", "fp32"), ("add", "i32"), ("min", "i32"), ("max", "u32"),
                                        ("and", "i64"), ("or", "u64"), ("xor", "i32")])
def test_atomics(tmp_path, arch, kind, dtype):
    ptx = compile_and_assemble(tmp_path, FILE, "host_desc_reduce", f"tensordesc<{dtype}[8,32]>,*{dtype},i32,i32",
                               {"M_BLOCK": 8, "N_BLOCK": 32, "KIND": kind}, arch)
    assert re.search(r"\b(atom|red)\.[a-z_.]*global", ptx)
    assert not uses_tma(ptx)


@pytest.mark.parametrize("arch", ARCHS)
def test_functional_forms_assemble(tmp_path, arch):
    ptx = compile_and_assemble(tmp_path, FILE, "host_desc_functional", "tensordesc<fp32[16,32]>,tensordesc<fp32[16,32]>",
                               {}, arch)
    assert uses_tma(ptx) == (arch == "sm_90a")


def test_matmul_is_tma_and_wgmma_on_hopper(tmp_path):
    ptx = compile_and_assemble(tmp_path, FILE, "host_desc_matmul",
                               "tensordesc<fp16[128,32]>,tensordesc<fp16[32,128]>,tensordesc<fp16[128,128]>", {},
                               "sm_90a", extra=("--num-warps", "8"))
    assert BULK_LOAD in ptx and BULK_STORE in ptx and "wgmma.mma_async" in ptx


def test_matmul_before_hopper(tmp_path):
    ptx = compile_and_assemble(tmp_path, FILE, "host_desc_matmul",
                               "tensordesc<fp16[64,32]>,tensordesc<fp16[32,64]>,tensordesc<fp16[64,64]>", {},
                               "sm_80")
    assert "mma.sync" in ptx and not uses_tma(ptx)


def test_a_block_over_256_rows_is_read_through_pointers(tmp_path):
    ptx = compile_and_assemble(tmp_path, FILE, "host_desc_tile_copy", "tensordesc<fp32[512,32]>,*fp32,i32",
                               {"M_BLOCK": 512, "N_BLOCK": 32}, "sm_90a")
    assert not uses_tma(ptx) and "ld.global" in ptx


@pytest.mark.parametrize("kind", ["min", "max"])
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_half_min_max_are_tma_reductions_on_hopper(tmp_path, kind, dtype):
    """Only the TMA unit has fp16 / bf16 min and max (Triton's native descriptor reductions):
    the tile goes to shared memory and cp.reduce.async.bulk.tensor combines it with the tensor."""
    ptx = compile_and_assemble(tmp_path, FILE, "host_desc_reduce", f"tensordesc<{dtype}[8,32]>,*{dtype},i32,i32",
                               {"M_BLOCK": 8, "N_BLOCK": 32, "KIND": kind}, "sm_90a")
    assert f"cp.reduce.async.bulk.tensor.2d.global.shared::cta.{kind}.tile.bulk_group" in ptx
    assert "fence.proxy.async.shared::cta" in ptx and "cp.async.bulk.wait_group.read 0" in ptx
    assert not re.search(r"\b(atom|red)\.[a-z_.]*global", ptx)
