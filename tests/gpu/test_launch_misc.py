"""On the GPU: tl.extra.cuda.smid / globaltimer, gdc_wait with launch_pdl, tl.map_elementwise, cooperative launches,
num_ctas > 1 and pinned host tensors as kernel arguments (Triton's test_smid, test_globaltimer,
test_map_elementwise*, test_load_scope_sem_coop_grid_cta_*, test_pointer_arguments). The CPU
side: tests/python/test_special_registers.py, test_map_elementwise.py and
tests/fake_driver/test_launch.py."""
import importlib.util
import pathlib

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402
import tessera.language as tl  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "map_elementwise", pathlib.Path(__file__).resolve().parents[1] / "python" / "lang_kernels" / "map_elementwise.py")
k = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(k)

def test_smid():
    out = torch.full((1024,), -1, dtype=torch.int32, device="cuda")
    h = k.smid_kernel[(1024,)](out)
    torch.cuda.synchronize()
    assert out.min().item() >= 0  # SM ids need not be contiguous (PTX ISA): no upper bound
    assert out.unique().numel() > 1
    assert h.asm["ptx"].count("%smid") == 1


def test_globaltimer():
    out1 = torch.zeros(128, dtype=torch.int64, device="cuda")
    out2 = torch.zeros(2, dtype=torch.int64, device="cuda")
    h = k.globaltimer_kernel[(1,)](out1, out2, tl.extra.cuda.globaltimer)
    torch.cuda.synchronize()
    assert (out1 == 10000).all()
    assert out2[1].item() - out2[0].item() > 0
    assert h.asm["ptx"].count("%globaltimer") == 2


def test_map_elementwise():
    rs = np.random.RandomState(17)
    x = torch.from_numpy(rs.randint(-4, 4, size=128).astype(np.int32)).cuda()
    y = torch.from_numpy(rs.randint(-4, 4, size=128).astype(np.int32)).cuda()
    z = torch.empty_like(x)
    k.compare_kernel[(1,)](x, y, z, BLOCK=128)
    assert torch.equal(z, (x > y).int() - (y > x).int())
    # Non-negative int32: signed and unsigned division agree (numpy's floor division is the reference).
    an = rs.randint(0, 2**31 - 1, size=512).astype(np.int32)
    bn = rs.randint(1, 1000, size=512).astype(np.int32)
    a, b = torch.from_numpy(an).cuda(), torch.from_numpy(bn).cuda()
    for kernel in (k.divmod_kernel, k.divmod_pack_kernel):
        c, d = torch.empty_like(a), torch.empty_like(a)
        kernel[(1,)](a, b, c, d, BLOCK=512)
        np.testing.assert_array_equal(c.cpu().numpy(), an // bn)
        np.testing.assert_array_equal(d.cpu().numpy(), an % bn)
    xs = torch.randn(8, 16, device="cuda")
    zs = torch.empty_like(xs)
    k.safe_log_kernel[(1,)](xs, zs, FLOOR=-100.0, M=8, N=16)
    want = torch.where(xs > 0, torch.log(xs.clamp_min(1e-30)), torch.full_like(xs, -100.0))
    torch.testing.assert_close(zs, want, rtol=1e-5, atol=1e-5)
    n = torch.arange(1, 65, dtype=torch.int32, device="cuda")
    steps = torch.empty_like(n)
    k.collatz_kernel[(1,)](n, steps, BLOCK=64)
    interp = np.zeros(64, np.int32)
    k.collatz_kernel.interpret = True
    try:
        k.collatz_kernel[(1,)](n.cpu().numpy(), interp, BLOCK=64)
    finally:
        k.collatz_kernel.interpret = False
    np.testing.assert_array_equal(steps.cpu().numpy(), interp)


@tessera.jit
def grid_barrier_kernel(counter, out, n):
    # Every program waits for all the others: terminates only if the whole grid is resident.
    tl.atomic_add(counter, 1)
    seen = tl.atomic_add(counter, 0)
    while seen < n:
        seen = tl.atomic_add(counter, 0)
    tl.store(out + tl.program_id(0), seen)


@pytest.mark.parametrize("pdl", [False, True])
def test_programmatic_dependent_launch_chain(pdl):
    # Triton's tutorial 11: each kernel of a chain waits (gdc_wait) for the one before it, which
    # lets it start early (gdc_launch_dependents); every step must see the previous step's result.
    n = 1 << 22
    x = torch.randn(n, device="cuda")
    bufs = [x] + [torch.full_like(x, float("nan")) for _ in range(8)]
    for a, b in zip(bufs, bufs[1:]):
        k.gdc_kernel[(tessera.cdiv(n, 1024),)](a, b, n, BLOCK=1024, launch_pdl=pdl)
    torch.cuda.synchronize()
    torch.testing.assert_close(bufs[-1], x + 8, rtol=0, atol=1e-5)


def test_cooperative_launch_runs_the_whole_grid_at_once():
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    grid = 2 * sms
    counter = torch.zeros(1, dtype=torch.int32, device="cuda")
    out = torch.zeros(grid, dtype=torch.int32, device="cuda")
    grid_barrier_kernel[(grid,)](counter, out, grid, launch_cooperative_grid=True)
    torch.cuda.synchronize()
    assert counter.item() == grid and (out >= grid).all()


def test_cooperative_grid_too_large_is_refused():
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    grid = 64 * sms  # more blocks than can be resident (at most 32 per SM)
    counter = torch.zeros(1, dtype=torch.int32, device="cuda")
    out = torch.zeros(grid, dtype=torch.int32, device="cuda")
    with pytest.raises(tessera.DriverError, match="COOPERATIVE_LAUNCH_TOO_LARGE"):
        grid_barrier_kernel[(grid,)](counter, out, grid, launch_cooperative_grid=True)
    torch.cuda.synchronize()


@tessera.jit
def kernel_r(ptrs, BLOCK_SIZE: tl.constexpr):  # Triton's test_load_scope_sem_coop_grid_cta_*
    numel = 512
    offset = tl.program_id(0) * BLOCK_SIZE
    mask = offset < numel
    a = tl.load(ptrs, mask=mask)
    tl.store(ptrs, a)


@pytest.mark.parametrize("num_ctas", [1, 4])
@pytest.mark.parametrize("cooperative", [True, False])
def test_num_ctas_and_cooperative(num_ctas, cooperative):
    if num_ctas > 1 and torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("num_ctas > 1 needs sm_90")
    data = torch.zeros((128,), device="cuda", dtype=torch.float32)
    kernel_r[(2,)](data, BLOCK_SIZE=128, num_ctas=num_ctas, launch_cooperative_grid=cooperative)
    torch.cuda.synchronize()
    assert (data == 0).all()


@tessera.jit
def add_one(x, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x + offs, tl.load(x + offs, mask=offs < n) + 1, mask=offs < n)


def test_pinned_host_tensor_is_read_and_written_in_place():
    x = torch.arange(1000, dtype=torch.float32).pin_memory()
    add_one[(4,)](x, 1000, BLOCK=256)
    torch.cuda.synchronize()
    assert torch.equal(x, torch.arange(1000, dtype=torch.float32) + 1)
    with pytest.raises(ValueError, match=r"Pointer argument \(at 0\) cannot be accessed from Triton \(cpu tensor\?\)"):
        add_one[(4,)](torch.zeros(1000), 1000, BLOCK=256)
