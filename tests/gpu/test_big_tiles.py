"""Big unmasked tiles (issue 32): a kernel whose threads issue more than
kMaxPlainStores stores (kMaxPlainLoads loads) accesses memory through inline PTX
(compiler/codegen/Memory.cpp); the values must be those plain accesses give,
aligned (128-bit accesses) or not (element accesses), with either back-end
(TESSERA_BACKEND), and a small tile (plain accesses) still matches."""
import importlib.util
import pathlib

import pytest

torch = pytest.importorskip("torch")

from gpu_helpers import poisoned  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "lang_big_tiles", pathlib.Path(__file__).resolve().parents[1] / "python" / "lang_kernels" / "big_tiles.py")
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
copy_tile, scale_tile, sum_tile = _module.copy_tile, _module.scale_tile, _module.sum_tile


@pytest.mark.parametrize("block", [32, 128, 256, 512])
@pytest.mark.parametrize("offset", [0, 1], ids=["aligned", "unaligned"])
def test_copy_and_scale_tile(block, offset):
    n = block * block
    src_big = torch.randn(n + offset, device="cuda")
    src = src_big[offset:]
    for kernel, expected in ((copy_tile, src), (scale_tile, src.double() * 2.0 + 1.0)):
        dst_big = poisoned((n + offset + 16,), torch.float32)
        dst = dst_big[offset:offset + n]
        kernel[(1,)](src, dst, BLOCK=block)
        torch.cuda.synchronize()
        torch.testing.assert_close(dst.double(), expected.double(), rtol=1e-6, atol=1e-6)
        assert torch.isnan(dst_big[:offset]).all() and torch.isnan(dst_big[offset + n:]).all(), \
            "the kernel wrote outside the tile"


@pytest.mark.parametrize("block", [32, 256, 1024])
@pytest.mark.parametrize("offset", [0, 1], ids=["aligned", "unaligned"])
def test_sum_tile(block, offset):
    n = block * block
    src = torch.rand(n + offset, device="cuda")[offset:]
    out = poisoned((1,), torch.float32)
    sum_tile[(1,)](src, out, BLOCK=block)
    torch.cuda.synchronize()
    expected = src.double().sum()
    assert abs(out.double().item() - expected.item()) <= 1e-5 * n, (out.item(), expected.item())
