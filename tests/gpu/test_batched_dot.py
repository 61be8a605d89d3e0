"""tl.dot on 3-D (batched) blocks on the GPU (tests/python/lang_kernels/dot.py's
batched_dot) against torch in float64 / int64 and the interpreter."""
import importlib.util
import pathlib

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import tessera  # noqa: E402

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

_spec = importlib.util.spec_from_file_location(
    "lang_dot", pathlib.Path(__file__).resolve().parents[1] / "python" / "lang_kernels" / "dot.py")
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
batched_dot = _module.batched_dot


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int8])
@pytest.mark.parametrize("B, M, N, K", [(4, 16, 8, 32), (2, 32, 32, 16)])
def test_batched_dot(dtype, B, M, N, K):
    if dtype == torch.int8:
        a = torch.randint(-128, 128, (B, M, K), device="cuda", dtype=dtype)
        b = torch.randint(-128, 128, (B, K, N), device="cuda", dtype=dtype)
        c = torch.full((B, M, N), -7, device="cuda", dtype=torch.int32)
    else:
        a = torch.randn((B, M, K), device="cuda").to(dtype)
        b = torch.randn((B, K, N), device="cuda").to(dtype)
        c = torch.full((B, M, N), float("nan"), device="cuda")
    batched_dot[(1,)](a, b, c, B=B, M=M, N=N, K=K)
    torch.cuda.synchronize()
    if dtype == torch.int8:
        want = torch.bmm(a.cpu().long(), b.cpu().long()) + 1
        assert torch.equal(c.cpu().long(), want)
    else:
        want = torch.bmm(a.double(), b.double()) + 1
        assert ((c.double() - want).norm() / want.norm()).item() <= 1e-5
    # The interpreter agrees (fp32 inputs: the same sums up to rounding).
    if dtype == torch.float32:
        host = np.full((B, M, N), np.nan, np.float32)
        tessera.jit(batched_dot.fn, interpret=True)[(1,)](a.cpu().numpy(), b.cpu().numpy(), host, B=B, M=M, N=N, K=K)
        np.testing.assert_allclose(c.cpu().numpy(), host, rtol=1e-5, atol=1e-4)
