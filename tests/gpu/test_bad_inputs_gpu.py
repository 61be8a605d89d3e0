"""The bad-input catalogue, GPU side (docs/errors.md has the whole table;
the CPU-checkable cases are tests/python/test_bad_inputs.py): misaligned
pointers, non-contiguous tensors, empty grids, device asserts in debug mode,
too much shared memory. Cases that would leave the CUDA context broken (a
device assert) run in a subprocess."""
import os
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402
import lang_ops_kernels as k  # noqa: E402
from gpu_helpers import poisoned  # noqa: E402
from kernels.vector_add import add_kernel  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_misaligned_pointer_is_specialised_without_16():
    # tessera checks alignment when specialising: x[1:] is 4 bytes off, so no ':16' is assumed for it.
    x = torch.arange(1025, device="cuda", dtype=torch.float32)[1:]
    y = torch.ones(1024, device="cuda")
    out = poisoned(1024, torch.float32)
    sig, _, _, _ = add_kernel.specialization(x, y, out, 1024, BLOCK_SIZE=256)
    assert sig == "*fp32,*fp32:16,*fp32:16,i32:16"
    add_kernel[(4,)](x, y, out, 1024, BLOCK_SIZE=256)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x + 1, rtol=0, atol=0)


def test_non_contiguous_tensor_passes_its_data_pointer():
    # As in Triton, a tensor is its data pointer: a strided view is not refused (and not copied);
    # the kernel indexes memory with the offsets it computes (here: the underlying storage).
    base = torch.arange(32, device="cuda", dtype=torch.float32)
    x = base[::2]
    assert not x.is_contiguous()
    y = torch.zeros(16, device="cuda")
    out = poisoned(16, torch.float32)
    try:
        add_kernel[(1,)](x, y, out, 16, BLOCK_SIZE=16)
    except (TypeError, ValueError) as e:  # a refusal must say why
        assert "contiguous" in str(e), str(e)
        return
    torch.cuda.synchronize()
    torch.testing.assert_close(out, base[:16], rtol=0, atol=0)


def test_empty_grid_launches_nothing():
    # Like Triton, a grid with a 0 dimension is a no-op from Python; the C++ runtime's
    # rt::launch refuses it ("cannot launch kernel 'add_kernel': empty grid (0, 1, 1); every grid
    # dimension must be at least 1", tests/gpu/RuntimeGpuTest.cpp: EmptyGridIsRefusedClearly).
    x = torch.ones(16, device="cuda")
    out = torch.full((16,), 7.0, device="cuda")
    add_kernel[(0,)](x, x, out, 16, BLOCK_SIZE=16)
    add_kernel[lambda meta: (0, 1)](x, x, out, 16, BLOCK_SIZE=16)
    torch.cuda.synchronize()
    assert (out == 7.0).all()


def test_too_much_shared_memory():
    target = tessera._C.target_arch(torch.cuda.current_device())
    x = torch.zeros(256, 256, device="cuda")
    out = torch.zeros(256 * 256, device="cuda")
    with pytest.raises(RuntimeError) as info:
        k.shape_kernel[(1,)](x, out, OP="trans", M=256, N=256)
    limit = {"sm_90a": 232448, "sm_90": 232448, "sm_80": 166912}.get(target)
    expected = f"codegen: kernel 'shape_kernel' needs 262144 bytes of shared memory, more than {target} allows"
    assert str(info.value).startswith(expected), str(info.value)
    if limit:
        assert str(info.value) == f"{expected} ({limit})"


ASSERT_KERNEL = textwrap.dedent('''
    import sys
    sys.path[:0] = [{python!r}, {root!r}]
    import torch
    import tessera
    import tessera.language as tl


    @tessera.jit
    def positive_kernel(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
        tl.device_assert(x > 0, "x must be positive")


    x = torch.ones(64, device="cuda")
    x[37] = -1.0
    try:
        positive_kernel[(1,)](x, 64, BLOCK=64)
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001
        print("RAISED", type(e).__name__, str(e).splitlines()[0])
        sys.exit(3)
    print("NO ERROR")
''')


def run_assert_kernel(tmp_path, debug):
    script = tmp_path / "assert_kernel.py"
    script.write_text(ASSERT_KERNEL.format(python=os.path.join(ROOT, "python"), root=ROOT))
    env = dict(os.environ, TESSERA_CACHE="off")
    env.pop("TESSERA_DEBUG", None)
    if debug:
        env["TESSERA_DEBUG"] = "1"
    return subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)


def test_device_assert_fires_in_debug_mode(tmp_path):
    proc = run_assert_kernel(tmp_path, debug=True)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 3, out
    assert "Assertion `x must be positive` failed." in out, out
    assert "device-side assert triggered" in out or "CUDA_ERROR_ASSERT" in out, out


def test_device_assert_compiles_to_nothing_without_debug(tmp_path):
    proc = run_assert_kernel(tmp_path, debug=False)
    assert proc.returncode == 0 and "NO ERROR" in proc.stdout, proc.stdout + proc.stderr
