"""None for a non-constexpr parameter, as in Triton: the argument is
specialised as the constexpr None, so `if bias_ptr is not None:` folds at
compile time and the kernel takes no launch slot for it. The interpreter,
the launch path's two key passes, warmup/specialization and tessera.compile
all agree."""
import numpy as np
import pytest

import tessera
import tessera.language as tl
from lang_support import assemble

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")


@tessera.jit(interpret=True)
def bias_kernel(x_ptr, bias_ptr, out_ptr, scale=None, BLOCK: tl.constexpr = 16):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if bias_ptr is not None:
        x += tl.load(bias_ptr + offs)
    if scale is None:
        x = x * 2
    else:
        x = x * scale
    tl.store(out_ptr + offs, x)


def test_none_arguments_in_the_interpreter():
    x = np.arange(16, dtype=np.float32)
    bias = np.full(16, 0.5, np.float32)
    out = np.zeros(16, np.float32)
    bias_kernel[(1,)](x, None, out)
    np.testing.assert_array_equal(out, x * 2)
    bias_kernel[(1,)](x, bias, out, 3.0)
    np.testing.assert_array_equal(out, (x + 0.5) * 3)
    bias_kernel[(1,)](x, None, out, scale=4.0)
    np.testing.assert_array_equal(out, x * 4)


class FakeArray:
    def __init__(self, address=4096):
        self.__cuda_array_interface__ = {"data": (address, False), "typestr": "<f4", "shape": (16,), "version": 2}


def test_none_arguments_specialise_the_launch():
    k = tessera.jit(bias_kernel.fn)  # the launch path
    x = FakeArray()
    signature, constexprs, _, _ = k.specialization(x, None, x)
    # BLOCK: its default, as Python computed it
    assert signature == "*fp32:16,*fp32:16" and constexprs == {"bias_ptr": None, "scale": None, "BLOCK": 16}
    signature, constexprs, _, _ = k.specialization(x, x, x, 2.0)
    assert signature == "*fp32:16,*fp32:16,*fp32:16,fp32" and constexprs == {"BLOCK": 16}
    # The hot pass and the full pass build the same key; None differs from every runtime argument.
    fast, full = k._get_handle()._launch_keys((x, None, x), {})
    assert fast == full
    assert full != k._get_handle()._launch_keys((x, x, x), {})[1]
    assert full != k._get_handle()._launch_keys((None, x, x), {})[1]
    with_bias = k.warmup(x, x, x, grid=(1,)).asm["ir"]
    without = k.warmup(x, None, x, grid=(1,)).asm["ir"]
    assert with_bias.count("load") == 2 and without.count("load") == 1
    assert "bias_ptr" in with_bias and "bias_ptr" not in without


def test_none_in_tessera_compile(tmp_path):
    compiled = tessera.compile(bias_kernel, signature="*fp32:16,*fp32:16", constexprs={"bias_ptr": None,
                                                                                       "scale": None},
                               target="sm_90a")
    assemble(compiled.asm["ptx"], "sm_90a", tmp_path)
    assert compiled.asm["ptx"].count(".param .u64") == 2
    # A value where the kernel was compiled for None is refused at launch.
    with pytest.raises(TypeError, match=r"argument 'bias_ptr' must be None: the kernel was compiled for None"):
        compiled[(1,)](FakeArray(), FakeArray(), FakeArray(), None, 16)


def test_a_constexpr_value_other_than_none_for_a_runtime_parameter_is_refused():
    with pytest.raises(tessera.CompilationError, match=r"parameter 'bias_ptr' is not a tl.constexpr but a constexpr "
                                                       r"value was given for it \(only None or a tuple is"):
        tessera.compile(bias_kernel, signature="*fp32:16,*fp32:16,*fp32:16", constexprs={"bias_ptr": 3, "scale": None},
                        target="sm_90a")
