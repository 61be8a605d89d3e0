"""kernels/copy2d.py: a 2-D masked copy of a strided matrix, with ragged edges
in both dimensions, unaligned strided sources, and a padded destination whose
padding must stay untouched."""
import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402
from gpu_helpers import poisoned  # noqa: E402
from kernels.copy2d import copy2d_kernel  # noqa: E402

SHAPES = [(1, 1), (33, 65), (100, 1), (1, 129), (257, 300), (64, 64), (1000, 37)]


@pytest.mark.parametrize("blocks", [(32, 64), (16, 16), (64, 32)], ids=lambda b: f"{b[0]}x{b[1]}")
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("col_offset", [0, 3])
def test_copy2d(shape, blocks, col_offset):
    n_rows, n_cols = shape
    bm, bn = blocks
    src_big = torch.randn(n_rows + 2, n_cols + 11, device="cuda")
    src = src_big[1:1 + n_rows, col_offset:col_offset + n_cols]  # strided, maybe unaligned
    dst_big = poisoned((n_rows + 5, n_cols + 7), torch.float32)
    dst = dst_big[:n_rows, :n_cols]
    grid = (tessera.cdiv(n_rows, bm), tessera.cdiv(n_cols, bn))
    copy2d_kernel[grid](src, dst, n_rows, n_cols, src.stride(0), dst.stride(0), BLOCK_M=bm, BLOCK_N=bn)
    torch.cuda.synchronize()
    torch.testing.assert_close(dst, src, rtol=0, atol=0)
    untouched = torch.ones_like(dst_big, dtype=torch.bool)
    untouched[:n_rows, :n_cols] = False
    assert torch.isnan(dst_big[untouched]).all(), "the kernel wrote outside the n_rows x n_cols tile"


def test_copy2d_grid_from_meta():
    n_rows, n_cols = 123, 456
    src = torch.randn(n_rows, n_cols, device="cuda")
    dst = poisoned((n_rows, n_cols), torch.float32)
    grid = lambda meta: (tessera.cdiv(n_rows, meta["BLOCK_M"]), tessera.cdiv(n_cols, meta["BLOCK_N"]))  # noqa: E731
    copy2d_kernel[grid](src, dst, n_rows, n_cols, src.stride(0), dst.stride(0), BLOCK_M=32, BLOCK_N=64)
    torch.cuda.synchronize()
    torch.testing.assert_close(dst, src, rtol=0, atol=0)
