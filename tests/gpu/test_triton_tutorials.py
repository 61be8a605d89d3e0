"""Kernels and launchers written against Triton's APIs the way its tutorials
01 (vector add) and 02 (fused softmax) use them, with only the import
naming tessera (tutorial_*.py, our own code), against torch."""
import importlib

import pytest

torch = pytest.importorskip("torch")

from gpu_helpers import assert_rel_err, skip_reason  # noqa: E402


def tutorial(name):
    if skip_reason():  # the tutorials query the GPU when imported
        pytest.skip(skip_reason())
    return importlib.import_module(name)


@pytest.mark.parametrize("size", [98432, 1, 4097, 1 << 22])
def test_tutorial_vector_add(size):
    t = tutorial("tutorial_vector_add")
    x = torch.rand(size, device=t.DEVICE)
    y = torch.rand(size, device=t.DEVICE)
    out = t.add(x, y)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)


@pytest.mark.parametrize("shape", [(1823, 781), (4096, 1024), (7, 3000), (1, 100), (64, 40)],
                         ids=lambda s: f"{s[0]}x{s[1]}")
def test_tutorial_fused_softmax(shape):
    t = tutorial("tutorial_fused_softmax")
    x = torch.randn(shape, device=t.DEVICE)
    y = t.softmax(x)
    torch.cuda.synchronize()
    ref = torch.softmax(x.double(), dim=1)
    assert_rel_err(y, ref, 1e-5, f"tutorial softmax {shape}")
    assert torch.allclose(y, torch.softmax(x, axis=1))
