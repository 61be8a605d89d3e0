"""A dtype annotation on a non-constexpr parameter types the argument, as Triton's launcher does
(KernelParam.annotation_type): `stride: tl.int64` computes in 64 bits, `v: "tl.uint8"` is unsigned,
`n: int` is int32; annotations that name no dtype (torch.Tensor) change nothing. They used to be
ignored: the argument kept the type of its value (Triton's test_annotations.py)."""
import numpy as np
import pytest

import tessera
import tessera.language as tl

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")


@tessera.jit(interpret=True)
def annotated_kernel(out_ptr, a, stride: tl.int64, small: "tl.uint8", flag: "tl.int1", x: "torch.Tensor"):
    tl.store(out_ptr + 0, a * stride)             # 4096 * 2**20: int64, no int32 overflow
    tl.store(out_ptr + 1, small - 1)              # uint8 arithmetic wraps: 0 - 1 is 255
    tl.store(out_ptr + 2, flag.to(tl.int64) + 10)  # an int1: 5 is True
    tl.store(out_ptr + 3, x + 1)                   # not a dtype: int32 as its value says


def test_dtype_annotations_type_the_arguments():
    out = np.zeros(4, np.int64)
    annotated_kernel[(1,)](out, 4096, 2**20, 0, 5, 7)
    assert out.tolist() == [2**32, 255, 11, 8]


def test_annotated_kernel_compiles_for_the_gpu():
    k = tessera.compile(annotated_kernel, signature="*i64,i32,i32,i32,i32,i32", target="sm_90a")
    assert "mul.wide.s32" in k.asm["ptx"] or "mul.lo.s64" in k.asm["ptx"]
