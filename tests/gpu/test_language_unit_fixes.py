"""On the GPU, the fixes that Triton's other language unit tests (test_conversions.py, test_random.py,
test_standard.py) found: fp_downcast_rounding="rtz", tl.randint with int64 offsets (Triton 3.6's 32-bit
Philox), tl.swizzle2d with a partial last group. The CPU tests (tests/python/test_fp_downcast_rounding.py,
test_interpreter_language.py) check the interpreter and ptxas; these check what the hardware computes."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402
import tessera.language as tl  # noqa: E402


@tessera.jit
def rtz_kernel(X, OUT, DST: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(OUT + offs, tl.load(X + offs).to(DST, fp_downcast_rounding="rtz"))


def test_rtz_to_bfloat16_truncates():
    x = torch.randn(1024, device="cuda") * 10.0 ** torch.randint(-30, 30, (1024,), device="cuda").float()
    out = torch.empty(1024, device="cuda", dtype=torch.bfloat16)
    rtz_kernel[(1,)](x, out, tl.bfloat16, 1024)
    want = (x.view(torch.int32) & -65536).view(torch.float32).to(torch.bfloat16)  # finite: drop the low bits
    assert torch.equal(out.view(torch.int16), want.view(torch.int16))


def test_rtz_to_float16_never_grows_the_magnitude():
    x = torch.randn(4096, device="cuda") * 10.0 ** torch.randint(-9, 5, (4096,), device="cuda").float()
    out = torch.empty(4096, device="cuda", dtype=torch.float16)
    rtz_kernel[(1,)](x, out, tl.float16, 4096)
    nearest = x.to(torch.float16)
    grew = nearest.float().abs() > x.abs()
    stepped = (nearest.view(torch.int16) - 1).view(torch.float16)
    want = torch.where(grew, stepped, nearest)
    assert torch.equal(out.view(torch.int16), want.view(torch.int16))
    assert (out.float().abs() <= x.abs()).all()


@tessera.jit
def randint64_kernel(OUT, seed, base, BLOCK: tl.constexpr):
    offs = base + tl.arange(0, BLOCK).to(tl.int64)
    tl.store(OUT + tl.arange(0, BLOCK), tl.randint(seed, offs))


def philox32(seed, offsets, rounds=10):
    with np.errstate(over="ignore"):
        c0 = (offsets.astype(np.uint64) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        c1 = (offsets.astype(np.uint64) >> np.uint64(32)).astype(np.uint32)
        c2 = np.zeros_like(c0)
        c3 = np.zeros_like(c0)
        k0 = np.full_like(c0, seed & 0xFFFFFFFF)
        k1 = np.full_like(c0, (seed >> 32) & 0xFFFFFFFF)
        A, B = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
        for _ in range(rounds):
            _c0, _c2 = c0, c2
            c0 = ((B * _c2.astype(np.uint64)) >> np.uint64(32)).astype(np.uint32) ^ c1 ^ k0
            c2 = ((A * _c0.astype(np.uint64)) >> np.uint64(32)).astype(np.uint32) ^ c3 ^ k1
            c1 = (B * _c2.astype(np.uint64)).astype(np.uint32)
            c3 = (A * _c0.astype(np.uint64)).astype(np.uint32)
            k0 = k0 + np.uint32(0x9E3779B9)
            k1 = k1 + np.uint32(0xBB67AE85)
    return c0


@pytest.mark.parametrize("base", [0, 2**32 - 64, 5 * 2**32 + 3])
def test_randint_int64_offsets(base):
    out = torch.empty(128, device="cuda", dtype=torch.int64)
    randint64_kernel[(1,)](out, 0xCAFEB0BA, base, 128)
    want = philox32(0xCAFEB0BA, base + np.arange(128, dtype=np.int64)).astype(np.int64)
    np.testing.assert_array_equal(out.cpu().numpy(), want)


@tessera.jit
def swizzle_kernel(OUT, size_i, size_j, size_g):
    for i in tl.range(0, size_i, 1):
        for j in tl.range(0, size_j, 1):
            new_i, new_j = tl.swizzle2d(i, j, size_i, size_j, size_g)
            tl.store(OUT + new_i * size_j + new_j, i * size_j + j)


def test_swizzle2d_partial_last_group():
    out = torch.full((5, 7), -1, device="cuda", dtype=torch.int32)
    swizzle_kernel[(1,)](out, 5, 7, 3)
    want = [[0, 3, 6, 9, 12, 15, 18], [1, 4, 7, 10, 13, 16, 19], [2, 5, 8, 11, 14, 17, 20],
            [21, 23, 25, 27, 29, 31, 33], [22, 24, 26, 28, 30, 32, 34]]
    assert out.cpu().tolist() == want
