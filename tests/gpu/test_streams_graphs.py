"""Where launches go: torch's current (non-default) stream, an explicit
stream=, a CUDA graph capture replayed with new inputs, and the device of the
tensors when it is not the current one."""
import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402
from gpu_helpers import poisoned  # noqa: E402
from kernels.softmax import softmax_kernel  # noqa: E402
from kernels.vector_add import add_kernel  # noqa: E402

N = 1 << 20
SLEEP_CYCLES = 200_000_000  # ~0.1 s of GPU time on the stream before the launch


def grid(meta):
    return (tessera.cdiv(N, meta["BLOCK_SIZE"]),)


def test_launch_goes_to_torchs_current_stream():
    x, y = torch.randn(N, device="cuda"), torch.randn(N, device="cuda")
    add_kernel[grid](x, y, poisoned(N, torch.float32), N, BLOCK_SIZE=1024)  # compile and load first
    torch.cuda.synchronize()
    out = poisoned(N, torch.float32)
    side = torch.cuda.Stream()  # torch's streams do not synchronise with the default stream
    side.wait_stream(torch.cuda.current_stream())  # ... so it waits for the poison explicitly
    with torch.cuda.stream(side):
        torch.cuda._sleep(SLEEP_CYCLES)  # keep `side` busy ...
        add_kernel[grid](x, y, out, N, BLOCK_SIZE=1024)  # ... so this waits behind the sleep
    # On the default stream, right away: had the kernel gone to the default stream
    # it would have run by now; on `side` it has not started.
    early = out.clone()
    torch.cuda.current_stream().synchronize()
    assert torch.isnan(early).all(), "the launch did not go to torch's current stream"
    side.synchronize()
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)


def test_explicit_stream_option():
    x, y = torch.randn(N, device="cuda"), torch.randn(N, device="cuda")
    out = poisoned(N, torch.float32)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())  # x, y and the poison are written on the current stream
    add_kernel[grid](x, y, out, N, BLOCK_SIZE=1024, stream=s.cuda_stream)
    s.synchronize()
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)
    out2 = poisoned(N, torch.float32)
    s.wait_stream(torch.cuda.current_stream())
    add_kernel[grid](x, y, out2, N, BLOCK_SIZE=1024, stream=s)  # an object with .cuda_stream
    s.synchronize()
    torch.testing.assert_close(out2, x + y, rtol=0, atol=0)


def test_cuda_graph_capture_and_replay():
    n_rows, n_cols = 512, 781
    x = torch.randn(n_rows, n_cols, device="cuda")
    a, b = torch.randn(N, device="cuda"), torch.randn(N, device="cuda")
    sm_out = poisoned((n_rows, n_cols), torch.float32)
    add_out = poisoned(N, torch.float32)

    def work():
        softmax_kernel[(128,)](sm_out, x, x.stride(0), sm_out.stride(0), n_rows, n_cols, BLOCK_SIZE=1024)
        add_kernel[grid](a, b, add_out, N, BLOCK_SIZE=1024)

    # Warm up (compile, load) outside the capture, on a side stream as torch recommends.
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        work()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()

    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        work()
    for _ in range(3):  # replay with fresh inputs each time
        x.copy_(torch.randn_like(x))
        a.copy_(torch.randn_like(a))
        b.copy_(torch.randn_like(b))
        sm_out.fill_(float("nan"))
        add_out.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(add_out, a + b, rtol=0, atol=0)
        ref = torch.softmax(x.double(), dim=1)
        err = (torch.linalg.vector_norm(sm_out.double() - ref) / torch.linalg.vector_norm(ref)).item()
        assert err <= 1e-5, err


@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2, reason="needs 2 GPUs")
def test_tensors_on_another_device():
    torch.cuda.set_device(0)
    x, y = torch.randn(N, device="cuda:1"), torch.randn(N, device="cuda:1")
    out = poisoned(N, torch.float32, device="cuda:1")
    add_kernel[grid](x, y, out, N, BLOCK_SIZE=1024)
    torch.cuda.synchronize(1)
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)
    assert torch.cuda.current_device() == 0
