"""Constexpr parameters whose defaults are host values the front-end cannot evaluate from the
kernel's text (vLLM's `FP8_MIN: tl.constexpr = float8_info.min`, with float8_info = torch.finfo(...)):
tessera.compile uses the function's default values, as a launch does."""
import numpy as np
import pytest

import tessera
import tessera.language as tl

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")


class _RangeInfo:  # stands for torch.finfo(torch.float8_e4m3fn)
    def __init__(self, lo, hi):
        self.min, self.max = lo, hi


range_info = _RangeInfo(-2.5, 3.0)


@tessera.jit
def clamp_to_range_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr, LO: tl.constexpr = range_info.min,
                          HI: tl.constexpr = range_info.max):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.clamp(tl.load(x_ptr + offs), LO, HI))


def test_compile_takes_constexpr_defaults_from_the_function():
    k = tessera.compile(clamp_to_range_kernel, signature="*fp32,*fp32", constexprs={"BLOCK": 128}, target="sm_90a")
    ptx = k.asm["ptx"]
    assert "0fC0200000" in ptx and "0f40400000" in ptx  # -2.5 and 3.0 as PTX float literals
    k2 = tessera.compile(clamp_to_range_kernel, signature="*fp32,*fp32", constexprs={"BLOCK": 128, "HI": 1.0},
                         target="sm_90a")
    assert "0f3F800000" in k2.asm["ptx"]  # a given value wins over the default


def test_launch_uses_the_same_defaults():
    x = np.linspace(-4, 4, 16).astype(np.float32)
    out = np.zeros_like(x)
    tessera.jit(interpret=True)(clamp_to_range_kernel.fn)[(1,)](x, out, BLOCK=16)
    np.testing.assert_array_equal(out, np.clip(x, -2.5, 3.0))


@tessera.heuristics({"HI": lambda args: 1.0})
@tessera.autotune(configs=[tessera.Config({"BLOCK": 64})], key=[])
@tessera.jit
def wrapped_clamp_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr, LO: tl.constexpr = range_info.min,
                         HI: tl.constexpr = range_info.max):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.clamp(tl.load(x_ptr + offs), LO, HI))


def test_compile_takes_the_jit_function_under_autotune_and_heuristics():
    k = tessera.compile(wrapped_clamp_kernel, signature="*fp32,*fp32", constexprs={"BLOCK": 128}, target="sm_90a")
    assert ".entry wrapped_clamp_kernel" in k.asm["ptx"]
