"""The launch path's torch fast path (tessera/_torch_fastpath.so, docs/runtime.md
"Launch path"): built by tests/gpu/run.sh with the extension, it reads torch
tensors and torch's current stream through torch's C++ API. Every launch of the
GPU suite goes through it; here the cases where it must agree with the Python
reads (or step aside for them): dtypes, storage offsets, Parameters, subclasses,
CPU tensors, torch function modes, streams."""
import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402
from gpu_helpers import poisoned  # noqa: E402
from kernels.vector_add import add_kernel  # noqa: E402

N = 3000  # not a multiple of the block: masked tail
SLEEP_CYCLES = 200_000_000


def grid(meta):
    return (tessera.cdiv(N, meta["BLOCK_SIZE"]),)


@pytest.fixture(params=["fast", "python"])
def path(request):
    """Each test once through the fast path and once with it switched off (Python reads)."""
    x = torch.zeros(4, device="cuda")
    add_kernel[(1,)](x, x, x, 4, BLOCK_SIZE=128)  # the first torch tensor loads the fast path
    status = tessera._C.torch_fastpath()
    assert status.startswith("on"), f"the GPU suite builds tessera/_torch_fastpath.so, but: {status}"
    tessera._C.torch_fastpath(request.param == "fast")
    yield request.param
    tessera._C.torch_fastpath(True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int64])
def test_dtypes_and_storage_offsets(path, dtype):
    base_x = (torch.randn(N + 7, device="cuda") * 100).to(dtype)
    base_y = (torch.randn(N + 5, device="cuda") * 100).to(dtype)
    x, y = base_x[7:], base_y[5:]  # data_ptr() includes the storage offset (and is not 16-byte aligned)
    if dtype.is_floating_point:
        out = poisoned(N + 3, dtype)[3:]
    else:
        out = torch.full((N + 3,), -12345, dtype=dtype, device="cuda")[3:]
    add_kernel[grid](x, y, out, N, BLOCK_SIZE=1024)
    torch.testing.assert_close(out, x + y)


def test_parameters_and_subclasses(path):
    class Tagged(torch.Tensor):  # a subclass: the fast path leaves it to the Python reads
        pass

    x = torch.nn.Parameter(torch.randn(N, device="cuda"), requires_grad=False)
    y = torch.randn(N, device="cuda").as_subclass(Tagged)
    out = poisoned(N, torch.float32)
    add_kernel[grid](x, y, out, N, BLOCK_SIZE=1024)
    torch.testing.assert_close(out, x.detach() + y.as_subclass(torch.Tensor), rtol=0, atol=0)


def test_cpu_tensor_is_refused_with_its_parameter(path):
    x, out = torch.randn(N, device="cuda"), poisoned(N, torch.float32)
    with pytest.raises(Exception) as e:
        add_kernel[grid](x, torch.randn(N), out, N, BLOCK_SIZE=1024)
    assert "y_ptr" in str(e.value) and "CPU" in str(e.value), str(e.value)


def test_torch_function_mode_sees_the_reads(path):
    """A torch function mode sees every tensor read from Python, so the fast path steps aside."""
    from torch.overrides import TorchFunctionMode

    seen = []

    class Record(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(getattr(func, "__name__", str(func)))
            return func(*args, **(kwargs or {}))

    x, y, out = torch.randn(N, device="cuda"), torch.randn(N, device="cuda"), poisoned(N, torch.float32)
    add_kernel[grid](x, y, out, N, BLOCK_SIZE=1024)
    torch.cuda.synchronize()
    with Record():
        add_kernel[grid](x, y, out, N, BLOCK_SIZE=1024)
    assert "data_ptr" in seen, seen
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)


def test_current_stream(path):
    x, y = torch.randn(N, device="cuda"), torch.randn(N, device="cuda")
    add_kernel[grid](x, y, poisoned(N, torch.float32), N, BLOCK_SIZE=1024)
    torch.cuda.synchronize()
    out = poisoned(N, torch.float32)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(SLEEP_CYCLES)
        add_kernel[grid](x, y, out, N, BLOCK_SIZE=1024)  # behind the sleep, on `side`
    early = out.clone()
    torch.cuda.current_stream().synchronize()
    assert torch.isnan(early).all(), "the launch did not go to torch's current stream"
    side.synchronize()
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)
