"""tl.sort, tl.gather, tl.histogram, tl.inline_asm_elementwise and pointer arrays on the GPU
against torch (Triton's test_core.py cases). Kernels: tests/python/lang_kernels/data_ops.py,
which tests/python/test_lang_data.py compiles on the CPU and test_interpreter_data.py interprets."""
import importlib.util
import pathlib

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402,F401

_spec = importlib.util.spec_from_file_location(
    "data_ops", pathlib.Path(__file__).resolve().parents[1] / "python" / "lang_kernels" / "data_ops.py")
k = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(k)


def run(kernel, grid, *args, **meta):
    kernel[grid](*args, **meta)
    torch.cuda.synchronize()


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.float16, torch.uint8])
@pytest.mark.parametrize("m, n", [(1, 2), (4, 64), (8, 16), (2, 256), (1, 1024)])
@pytest.mark.parametrize("descending", [0, 1])
def test_sort(dtype, m, n, descending):
    g = torch.Generator(device="cpu").manual_seed(17)
    if dtype.is_floating_point:
        x = torch.randn((m, n), generator=g).to(dtype)
    else:
        x = torch.randint(0, 200, (m, n), generator=g).to(dtype)
    x = x.cuda()
    out = torch.empty_like(x)
    run(k.sort_kernel, (1,), x, out, M=m, N=n, DESCENDING=descending)
    ref = torch.sort(x.cpu().float(), dim=-1, descending=bool(descending)).values.to(dtype)
    assert torch.equal(out.cpu(), ref)


@pytest.mark.parametrize("m, n, kk, axis", [(4, 4, 8, 0), (128, 64, 256, 0), (128, 64, 128, 1), (32, 16, 64, 1)])
def test_gather(m, n, kk, axis):
    src = torch.randn((m, n), device="cuda")
    shape = (kk, n) if axis == 0 else (m, kk)
    idx = torch.randint(0, src.shape[axis], shape, device="cuda", dtype=torch.int32)
    out = torch.full(shape, float("nan"), device="cuda")
    run(k.gather_kernel, (1,), src, idx, out, M=m, N=n, K=kk, AXIS=axis)
    assert torch.equal(out, torch.gather(src, axis, idx.long()))


@pytest.mark.parametrize("m, n", [[2048, 2], [1024, 8], [1024, 128], [256, 512], [32, 512], [8, 512], [8, 2]])
def test_histogram(m, n):
    torch.manual_seed(17)
    x = torch.randint(0, n, (m,), device="cuda", dtype=torch.int32)
    z = torch.full((n,), -1, dtype=torch.int32, device="cuda")
    run(k.histogram_kernel, (1,), x, z, M=m, N=n)
    assert torch.equal(z.cpu(), torch.bincount(x.cpu(), minlength=n).int())


@pytest.mark.parametrize("m, n", [[2048, 2], [32, 512], [8, 2]])
def test_histogram_mask(m, n):
    torch.manual_seed(17)
    x1 = torch.randint(0, n, (m,), device="cuda", dtype=torch.int32)
    x = torch.cat((x1, x1), 0)
    z = torch.full((n,), -1, dtype=torch.int32, device="cuda")
    run(k.histogram_mask_kernel, (1,), x, z, M=m, N=n)
    assert torch.equal(z.cpu(), torch.bincount(x1.cpu(), minlength=n).int())


def test_histogram_ignores_values_outside_the_bins():
    x = torch.tensor([-1, 0, 1, 7, 8, 100, 3, 3], dtype=torch.int64, device="cuda")
    z = torch.full((8,), -1, dtype=torch.int32, device="cuda")
    run(k.histogram_kernel, (1,), x, z, M=8, N=8)
    assert z.cpu().tolist() == [1, 1, 0, 2, 0, 0, 0, 1]


def _u32(n, seed):
    return np.random.RandomState(seed).randint(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32)


def test_inline_asm():
    x, y = _u32(128, 1), _u32(128, 2)
    z = torch.zeros(128, dtype=torch.int32, device="cuda")
    run(k.asm_shift_kernel, (1,), torch.from_numpy(x.view(np.int32)).cuda(),
        torch.from_numpy(y.view(np.int32)).cuda(), z, n=17, BLOCK=128)
    ref = (y << np.uint32(17)) | (x >> np.uint32(32 - 17))
    np.testing.assert_equal(z.cpu().numpy().view(np.uint32), ref)


def test_inline_asm_packed():
    x = torch.randint(0, 256, (512,), dtype=torch.uint8, device="cuda")
    y = torch.zeros_like(x)
    run(k.asm_packed_kernel, (1,), x, y, BLOCK=512)
    assert torch.equal(y, x << 3)


def test_inline_asm_with_pointers():
    x = torch.randint(0, 256, (512,), dtype=torch.uint8, device="cuda")
    y = torch.zeros_like(x)
    run(k.asm_pointers_kernel, (1,), x, y, BLOCK=512)
    assert torch.equal(y, x << 3)


def test_inline_asm_multiple_outputs():
    a, b = _u32(512, 3), _u32(512, 4)
    c = torch.zeros(512, dtype=torch.int32, device="cuda")
    d = torch.zeros_like(c)
    run(k.asm_two_outputs_kernel, (1,), torch.from_numpy(a.view(np.int32)).cuda(),
        torch.from_numpy(b.view(np.int32)).cuda(), c, d, BLOCK=512)
    np.testing.assert_equal(c.cpu().numpy().view(np.uint32), a - b)
    np.testing.assert_equal(d.cpu().numpy().view(np.uint32), b - a)


def test_inline_asm_packed_multiple_outputs():
    a = torch.randint(0, 256, (512,), dtype=torch.uint8, device="cuda")
    b = torch.randn(512, device="cuda") * 100
    c = torch.zeros(512, dtype=torch.int32, device="cuda")
    d = torch.zeros(512, device="cuda")
    run(k.asm_packed_two_outputs_kernel, (1,), a, b, c, d, BLOCK=512)
    assert torch.equal(c, a.int())
    assert torch.equal(d, torch.maximum(a.float(), b))


def test_inline_asm_f16_pairs():
    x = torch.randn(256, dtype=torch.float16, device="cuda")
    y = torch.zeros_like(x)
    run(k.asm_f16_pairs_kernel, (1,), x, y, BLOCK=256)
    assert torch.equal(y, x + x)


def test_pointer_array():
    n, groups = 64, 3
    data = [torch.randn(n, dtype=torch.float16, device="cuda") for _ in range(groups)]
    table = torch.tensor([t.data_ptr() for t in data], dtype=torch.int64, device="cuda")
    out = torch.zeros((groups, n), dtype=torch.float16, device="cuda")
    run(k.pointer_array_kernel, (groups,), table, out, data[0], N=n)
    assert torch.equal(out, torch.stack(data) * 2)
