"""kernels/vector_add.py on the GPU: sizes that are and are not multiples of
the block, fp32 and fp16, tuple and callable grids, unaligned views, and the
launch cache. Outputs start as NaN; inputs are fresh random numbers."""
import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402
from gpu_helpers import poisoned  # noqa: E402
from kernels.vector_add import add_kernel  # noqa: E402

SIZES = [1, 17, 1000, 1024, 4097, 98432, 1_000_003]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
@pytest.mark.parametrize("block", [256, 1024])
@pytest.mark.parametrize("n", SIZES)
def test_vector_add(n, block, dtype):
    x = torch.randn(n, device="cuda", dtype=dtype)
    y = torch.randn(n, device="cuda", dtype=dtype)
    out = poisoned(n, dtype)
    add_kernel[lambda meta: (tessera.cdiv(n, meta["BLOCK_SIZE"]),)](x, y, out, n, BLOCK_SIZE=block)
    torch.cuda.synchronize()
    # One correctly rounded addition either way: the results are identical.
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)


@pytest.mark.parametrize("num_warps", [1, 2, 8])
def test_vector_add_num_warps_and_tuple_grid(num_warps):
    n = 50_000
    x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
    out = poisoned(n, torch.float32)
    add_kernel[(tessera.cdiv(n, 512),)](x, y, out, n, BLOCK_SIZE=512, num_warps=num_warps)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)


def test_masked_tail_is_not_written():
    n, pad = 1000, 300
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    buf = poisoned(n + pad, torch.float32)
    add_kernel[(tessera.cdiv(n, 256),)](x, y, buf[:n], n, BLOCK_SIZE=256)
    torch.cuda.synchronize()
    torch.testing.assert_close(buf[:n], x + y, rtol=0, atol=0)
    assert torch.isnan(buf[n:]).all(), "the kernel wrote past n_elements"


def test_unaligned_views_and_the_cache():
    n = 10_001
    base_x, base_y = torch.randn(n + 1, device="cuda"), torch.randn(n + 1, device="cuda")
    before = add_kernel.cache_info()["compiled"]
    for offset in (0, 1):  # offset 1: 4-byte aligned pointers (no ':16' specialisation)
        x, y = base_x[offset:offset + n], base_y[offset:offset + n]
        out = poisoned(n, torch.float32)
        add_kernel[(tessera.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024)
        torch.cuda.synchronize()
        torch.testing.assert_close(out, x + y, rtol=0, atol=0)
    sig = add_kernel.specialization(base_x[1:], base_y[1:], out, n, BLOCK_SIZE=1024)[0]
    assert sig == "*fp32,*fp32,*fp32:16,i32"
    after = add_kernel.cache_info()
    assert after["compiled"] >= before + 1
    # Launching again with a known specialisation compiles nothing new.
    add_kernel[(tessera.cdiv(n, 1024),)](base_x[:n], base_y[:n], out, n, BLOCK_SIZE=1024)
    assert add_kernel.cache_info() == after


def test_empty_grid_launches_nothing():
    out = poisoned(16, torch.float32)
    x = torch.zeros(16, device="cuda")
    add_kernel[(0,)](x, x, out, 0, BLOCK_SIZE=16)
    torch.cuda.synchronize()
    assert torch.isnan(out).all()
