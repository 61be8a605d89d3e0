"""tl.make_tensor_descriptor (descriptors a kernel makes; docs/tma.md, "Descriptors made in
the kernel"): results through the interpreter against numpy (test_core.py's test_trans_4d,
ragged 2-D copies, zero and NaN padding, a descriptor carried by a loop and read by a
helper), the block's masked loads and stores in the IR, PTX that ptxas takes for sm_80 and
sm_90a (LLVM and NVRTC back-ends), and Triton's argument checks as located errors."""
import itertools
import math
import os
import sys

import numpy as np
import pytest

import tessera
from lang_support import ARCHS, compile_and_assemble, compile_kernel

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lang_kernels"))
import made_descriptors as kernels  # noqa: E402

FILE = "made_descriptors.py"


def interpreted(kernel):
    kernel.interpret = True
    return kernel


# test_core.py's test_trans_4d: every permutation of both shapes, int32 and int8.
@pytest.mark.parametrize("dtype", [np.int32, np.int8])
@pytest.mark.parametrize("shape", [(2, 2, 8, 64), (4, 4, 4, 16)])
@pytest.mark.parametrize("perm", list(itertools.permutations([0, 1, 2, 3])))
def test_trans_4d_interpreted(dtype, shape, perm):
    x = (np.arange(math.prod(shape)) % 127).astype(dtype).reshape(shape)
    expected = np.transpose(x, perm)
    actual = np.zeros(expected.shape, dtype=dtype)
    interpreted(kernels.trans_4d_kernel)[(1, )](x, actual, *shape, *[shape[i] for i in perm], *perm, num_warps=8)
    np.testing.assert_equal(actual, expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_ragged_copy_interpreted(dtype):
    M, N, BM, BN = 45, 40, 16, 16
    stride = 48  # rows padded: the descriptor sees only the first N columns
    x = np.random.default_rng(0).standard_normal((M, stride)).astype(dtype)
    out = np.full((M, stride), -7, dtype=dtype)
    grid = (math.ceil(M / BM), math.ceil(N / BN))
    interpreted(kernels.made_desc_copy)[grid](x, out, M, N, stride, BM, BN)
    np.testing.assert_array_equal(out[:, :N], np.abs(x[:, :N]) + dtype(1))
    assert (out[:, N:] == -7).all(), "a store wrote outside the descriptor's tensor"


@pytest.mark.parametrize("padding", ["zero", "nan"])
def test_padding_interpreted(padding):
    M, N, BM, BN = 24, 16, 16, 16
    x = np.arange(M * N, dtype=np.float32).reshape(M, N)
    out = np.zeros((BM, BN), dtype=np.float32)
    interpreted(kernels.made_desc_padded_load)[(1, )](x, out, M, N, BM, BN, padding)
    np.testing.assert_array_equal(out[:BM // 2], x[M - BM // 2:])
    if padding == "zero":
        assert (out[BM // 2:] == 0).all()
    else:
        assert np.isnan(out[BM // 2:]).all()


def test_descriptor_carried_by_a_loop_interpreted():
    M, N = 70, 12
    x = np.random.default_rng(1).standard_normal((M, N)).astype(np.float32)
    out = np.zeros(16, dtype=np.float32)
    interpreted(kernels.made_desc_in_loop)[(1, )](x, out, M, N, 16, 16)
    np.testing.assert_allclose(out[:N], x.sum(axis=0), rtol=1e-5)


def test_a_store_outside_the_buffer_is_reported_by_the_interpreter():
    # The descriptor's shape claims more rows than the buffer has: the interpreter's
    # bounds check names the store.
    M, N = 16, 16
    x = np.zeros((M, N), dtype=np.float32)
    out = np.zeros((M // 2, N), dtype=np.float32)
    with pytest.raises(tessera.CompilationError, match="out-of-bounds store"):
        interpreted(kernels.made_desc_copy)[(1, 1)](x, out, M, N, N, 16, 16)


def test_loads_and_stores_become_masked_blocks():
    ir = compile_kernel(FILE, "made_desc_copy", "*fp32,*fp32,i32,i32,i32", {"BLOCK_M": 16, "BLOCK_N": 32},
                        emit="ir")
    loads = [line for line in ir.splitlines() if " load " in f" {line} " or "= load" in line]
    stores = [line for line in ir.splitlines() if line.strip().startswith("store")]
    assert any("<16x32xf32>" in line for line in loads), ir
    assert any("has_mask = 1" in line and "has_other = 1" in line for line in loads), ir
    assert any("has_mask = 1" in line for line in stores), ir


@pytest.mark.parametrize("arch", ARCHS)
def test_trans_4d_assembles(tmp_path, arch):
    shape, perm = (2, 2, 8, 64), (3, 1, 0, 2)
    names = [f"in_shape{i}" for i in range(1, 5)] + [f"ou_shape{i}" for i in range(1, 5)] + \
        [f"trans{i}" for i in range(1, 5)]
    values = list(shape) + [shape[i] for i in perm] + list(perm)
    compile_and_assemble(tmp_path, FILE, "trans_4d_kernel", "*i8,*i8", dict(zip(names, values)), arch,
                         extra=("--num-warps", "8"))


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("backend", ["llvm", "nvrtc"])
def test_ragged_copy_assembles(tmp_path, arch, backend):
    extra = () if backend == "llvm" else ("--backend", "nvrtc")
    ptx = compile_and_assemble(tmp_path, FILE, "made_desc_copy", "*fp16,*fp16,i32,i32,i32",
                               {"BLOCK_M": 64, "BLOCK_N": 64}, arch, extra=extra)
    assert "ld.global" in ptx and "st.global" in ptx


def test_made_descriptor_attributes_and_padding_assemble(tmp_path):
    compile_and_assemble(tmp_path, FILE, "made_desc_padded_load", "*fp32,*fp32,i32,i32",
                         {"BLOCK_M": 16, "BLOCK_N": 16, "PADDING": "zero"})
    compile_and_assemble(tmp_path, FILE, "made_desc_in_loop", "*fp32,*fp32,i32,i32",
                         {"BLOCK_M": 16, "BLOCK_N": 16})


def test_descriptor_functions_and_atomics_interpreted():
    M, N, BM = 40, 16, 16
    x = np.random.default_rng(2).integers(-50, 50, size=(M, N)).astype(np.int32)
    acc = np.zeros((2, N), dtype=np.int32)
    acc[1] = -1000
    doubled = x.copy()
    interpreted(kernels.made_desc_functions_and_atomics)[(math.ceil(M / BM), )](doubled, acc, M, N, BM, N)
    np.testing.assert_array_equal(acc[0], x.sum(axis=0))
    np.testing.assert_array_equal(acc[1], x.max(axis=0))
    np.testing.assert_array_equal(doubled, 2 * x)


@pytest.mark.parametrize("arch", ARCHS)
def test_descriptor_atomics_assemble(tmp_path, arch):
    ptx = compile_and_assemble(tmp_path, FILE, "made_desc_functions_and_atomics", "*i32,*i32,i32,i32",
                               {"BLOCK_M": 16, "BLOCK_N": 16}, arch)
    assert "atom" in ptx or "red." in ptx


def test_descriptor_argument_attributes(tmp_path):
    ptx = compile_and_assemble(tmp_path, FILE, "host_desc_attributes", "tensordesc<fp16[64,64]>,*fp16", {})
    assert "cp.async.bulk.tensor.2d" in ptx
