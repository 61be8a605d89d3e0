"""A program written for Triton, left as it is (`import triton`), that test_compat_gpu.py runs with
TESSERA_AS_TRITON=1: a kernel with @triton.autotune / @triton.jit, the driver's queries,
triton.testing.do_bench / perf_report / assert_close. Prints one line per check."""
import torch

import triton
import triton.language as tl
from triton.language.extra import libdevice

import tessera

assert triton.jit is tessera.jit and tl is tessera.language, "triton is not tessera's"
DEVICE = triton.runtime.driver.active.get_active_torch_device()
PROPS = triton.runtime.driver.active.utils.get_device_properties(DEVICE.index)
print("sms", PROPS["multiprocessor_count"] > 0, "target", triton.runtime.driver.active.get_current_target().backend)


@triton.autotune(configs=[triton.Config({"BLOCK": 256}, num_warps=4), triton.Config({"BLOCK": 1024}, num_warps=8)],
                 key=["n"])
@triton.jit
def exp_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, libdevice.exp(x) + y, mask=mask)


def exp_add(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    exp_add_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
    return out


x = torch.randn(1 << 20, device=DEVICE)
y = torch.randn(1 << 20, device=DEVICE)
triton.testing.assert_close(exp_add(x, y), torch.exp(x) + y, atol=1e-5, rtol=1e-5)
print("assert_close ok")

ms = triton.testing.do_bench(lambda: exp_add(x, y))
median, low, high = triton.testing.do_bench(lambda: exp_add(x, y), quantiles=[0.5, 0.2, 0.8])
print("do_bench ok", 0 < ms < 100, low <= median <= high)
graph_ms = triton.testing.do_bench_cudagraph(lambda: exp_add(x, y))
print("do_bench_cudagraph ok", 0 < graph_ms < 100)


@triton.testing.perf_report(triton.testing.Benchmark(
    x_names=["size"], x_vals=[1 << 12, 1 << 16], line_arg="provider", line_vals=["triton", "torch"],
    line_names=["Triton", "Torch"], styles=[("blue", "-"), ("green", "-")], ylabel="GB/s",
    plot_name="exp-add", args={}))
def benchmark(size, provider):
    a = torch.randn(size, device=DEVICE)
    b = torch.randn(size, device=DEVICE)
    fn = (lambda: exp_add(a, b)) if provider == "triton" else (lambda: torch.exp(a) + b)
    ms, lo, hi = triton.testing.do_bench(fn, quantiles=[0.5, 0.2, 0.8])
    gbps = lambda t: 3 * a.numel() * a.element_size() * 1e-9 / (t * 1e-3)  # noqa: E731
    return gbps(ms), gbps(hi), gbps(lo)


benchmark.run(print_data=True, show_plots=False)
