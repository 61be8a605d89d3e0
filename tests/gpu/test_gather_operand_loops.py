"""Dot loops whose operand tiles are gathers (tests/python/test_gather_operand_loops.py on the CPU):
the implicit-GEMM conv2d of tests/python/lang_kernels/implicit_gemm_conv.py (attorch's pattern:
NCHW activations, [O, C, KH, KW] weights, no contiguous dim in either tile) at attorch's autotuned
block shapes, against torch's conv2d in float64. The tiles are laid out with dim 0 fastest and
staged by the dot each iteration (no cp.async ring): written for the GPU, not yet run there."""
import importlib.util
import pathlib

import pytest

torch = pytest.importorskip("torch")

from gpu_helpers import poisoned  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "lang_implicit_gemm_conv",
    pathlib.Path(__file__).resolve().parents[1] / "python" / "lang_kernels" / "implicit_gemm_conv.py")
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
conv2d_nchw = _module.conv2d_nchw


@pytest.mark.parametrize("bp, bc, bo, warps, stages", [(128, 32, 128, 8, 2), (256, 32, 64, 8, 2), (256, 32, 32, 4, 4),
                                                       (64, 32, 128, 8, 4), (128, 128, 64, 4, 4), (64, 64, 64, 2, 4)])
@pytest.mark.parametrize("shape", [(4, 64, 14, 14, 64, 1, 1), (3, 40, 9, 11, 24, 2, 0), (2, 128, 28, 28, 128, 1, 1)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_conv2d_nchw(shape, bp, bc, bo, warps, stages, dtype):
    n, c, h, w, o, stride, pad = shape
    g = torch.Generator(device="cuda").manual_seed(n * c + h)
    x = torch.randn(n, c, h, w, device="cuda", generator=g).to(dtype)
    wt = (torch.randn(o, c, 3, 3, device="cuda", generator=g) * 0.1).to(dtype)
    oh, ow = (h + 2 * pad - 3) // stride + 1, (w + 2 * pad - 3) // stride + 1
    y = poisoned((n, o, oh, ow), dtype)
    grid = ((n * oh * ow + bp - 1) // bp, (o + bo - 1) // bo)
    conv2d_nchw[grid](x, wt, y, n, c, h, w, o, oh, ow, *x.stride(), *wt.stride(), *y.stride(),
                      KH=3, KW=3, STRIDE=stride, PAD=pad, BP=bp, BC=bc, BO=bo, num_warps=warps, num_stages=stages)
    torch.cuda.synchronize()
    ref = torch.nn.functional.conv2d(x.double(), wt.double(), stride=stride, padding=pad)
    err = ((y.double() - ref).norm() / ref.norm()).item()
    assert err < 1e-2, err
