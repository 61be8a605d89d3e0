"""Constructs found by driving flash-linear-attention (modules and ops), SGLang's extend attention and fused MoE,
lightllm, attorch and kernl through the compatibility mode (their kernels are not copied here: each test is a
kernel written in the style of the construct), interpreted against numpy and compiled to PTX."""
import numpy as np
import pytest

import tessera
import tessera.language as tl

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")


# ------------------------------------------------------------------ tl.core.CONSTEXPR_0

def test_constexpr_0_exists_on_the_host():
    # fla's argsort helper and Triton's own sort take `descending: tl.constexpr = tl.core.CONSTEXPR_0`:
    # the default is evaluated when the module is imported
    assert tl.core.CONSTEXPR_0 == 0 and isinstance(tl.core.CONSTEXPR_0, tl.constexpr)
    assert tl.CONSTEXPR_0 == 0


@tessera.jit
def _order(x, descending: tl.constexpr = tl.core.CONSTEXPR_0):
    if descending:
        return tl.sort(x, descending=True)
    return tl.sort(x)


@tessera.jit(interpret=True)
def sort_rows_kernel(x_ptr, out_ptr, DESC: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    if DESC:
        y = _order(x, tl.core.CONSTEXPR_0 + 1)
    else:
        y = _order(x)
    tl.store(out_ptr + offs, y)


@pytest.mark.parametrize("desc", [False, True])
def test_constexpr_0_as_a_helper_default_in_kernels(desc):
    x = np.random.default_rng(0).permutation(16).astype(np.float32)
    out = np.zeros_like(x)
    sort_rows_kernel[(1,)](x, out, DESC=desc, N=16)
    np.testing.assert_array_equal(out, np.sort(x)[::-1] if desc else np.sort(x))
    ptx = tessera.compile(sort_rows_kernel, signature="*fp32,*fp32", constexprs={"DESC": desc, "N": 16},
                          target="sm_90a").asm["ptx"]
    assert ".visible .entry sort_rows_kernel" in ptx
