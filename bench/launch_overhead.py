"""Host cost of one kernel launch from Python: no-op kernels with 0, 6 (4
tensors + 2 ints, the headline case) and 16 (8 tensors + 8 ints) arguments.

Providers:
  tessera         kernel[(1,)](...) with torch tensors (the JIT launch path)
  tessera-py-reads  the same with the torch fast path (tessera/_torch_fastpath.so) switched off:
                  tensor attributes and the current stream read through Python calls
  tessera-bound   b = kernel[(1,)] once, then b(...): the launch without the subscript
  tessera-pybind  tessera._C.launch(handle, grid, args): the pybind11 entry point
  tessera-ints    kernel[(1,)](...) with each tensor replaced by its data_ptr() (an int): no torch
                  attribute reads, no torch stream query; tessera - tessera-ints = what torch costs
  python-call     an empty lambda in the same loop: the floor of every Python column (bare-cuLaunch
                  and cpp-Kernel loop in C++ and pay none of it)
  triton          the same no-op kernels with @triton.jit
  torch-add_      x.add_(y) on 1-element tensors (a framework op's launch cost)
  bare-cuLaunch   tessera's C++ runtime in a C++ loop: rt::launch -> cuLaunchKernel,
                  arguments packed once (the floor: what the driver costs)
  cpp-Kernel      the C++ API's Kernel::launch(grid, args) in a C++ loop
Host cost = wall time of N back-to-back launches / N (the GPU runs each no-op
kernel faster than the host issues them, so the queue never fills); the median
of several rounds. Also: what each Python attribute read on a torch tensor
costs, which is why the launch path reads what it reads (docs/runtime.md).

    python3 bench/launch_overhead.py [--quick] [--out DIR] [--json FILE]
    python3 bench/launch_overhead.py --fake-driver     # no GPU, no torch needed

--fake-driver measures tessera's own host work on any machine: the CUDA driver
is tests/tools/fake_libcuda.c (cuLaunchKernel records the launch and returns;
<build>/lib/libtessera_fake_cuda.so, or $TESSERA_LIBCUDA) and torch is the
stand-in in tests/tools/fake_torch (its tensor attributes are Python
properties, slower than torch's C getters). Triton and torch add_ are skipped;
bare-cuLaunch is then the cost of the fake driver call itself.
Uses bench/harness.py's options and device description; its GB/s table and
plots do not apply (these are host microseconds), so this writes its own JSON.
"""
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import harness  # noqa: E402

if "--fake-driver" in sys.argv[1:]:  # before anything imports torch or loads a driver
    sys.path.insert(0, str(harness.ROOT / "tests" / "tools" / "fake_torch"))
    build = pathlib.Path(os.environ.get("TESSERA_BUILD_DIR", harness.ROOT / "build"))
    os.environ.setdefault("TESSERA_LIBCUDA", str(build / "lib" / "libtessera_fake_cuda.so"))
    os.environ.setdefault("TESSERA_CACHE_DIR", tempfile.mkdtemp(prefix="tessera-fake-bench-"))

import tessera  # noqa: E402

CASES = {"0 args": 0, "4 tensors + 2 ints": 6, "8 tensors + 8 ints": 16}


@tessera.jit
def noop0():
    pass


@tessera.jit
def noop6(a, b, c, d, n, m):
    pass


@tessera.jit
def noop16(a0, a1, a2, a3, a4, a5, a6, a7, n0, n1, n2, n3, n4, n5, n6, n7):
    pass


TESSERA = {0: noop0, 6: noop6, 16: noop16}


def triton_kernels():
    import triton

    @triton.jit
    def t_noop0():
        pass

    @triton.jit
    def t_noop6(a, b, c, d, n, m):
        pass

    @triton.jit
    def t_noop16(a0, a1, a2, a3, a4, a5, a6, a7, n0, n1, n2, n3, n4, n5, n6, n7):
        pass
    return {0: t_noop0, 6: t_noop6, 16: t_noop16}


def arguments(n, fake=False):
    import torch
    if n == 0:
        return ()
    count = 4 if n == 6 else 8
    if fake:  # tests/tools/fake_torch: a tensor is a (16-byte aligned) pointer
        tensors = [torch.Tensor(0x7f0000000000 + 4096 * i) for i in range(count)]
    else:
        tensors = [torch.empty(1024, device="cuda") for _ in range(count)]
    ints = [1000 + 16 * i for i in range(2 if n == 6 else 8)]
    return tuple(tensors + ints)


def synchronize():
    import torch
    if hasattr(torch, "cuda"):
        torch.cuda.synchronize()


def host_us(launch, iterations, rounds):
    """Median over rounds of (wall time of `iterations` launches) / iterations, in microseconds."""
    launch()
    synchronize()
    per = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(iterations):
            launch()
        t1 = time.perf_counter()
        synchronize()
        per.append((t1 - t0) / iterations * 1e6)
    return statistics.median(per)


def providers(n, args, fake=False):
    import torch
    out = {}
    k = TESSERA[n]
    out["tessera"] = lambda: k[(1,)](*args)
    # The same launch with the torch fast path switched off: tensors and the stream read from Python.
    out["tessera-py-reads"] = ("no-fastpath", lambda: k[(1,)](*args))
    bound = k[(1,)]
    out["tessera-bound"] = lambda: bound(*args)  # without kernel[grid] (a C slot, JitFunctionBase)
    handle, launch = k._get_handle(), tessera._C.launch
    out["tessera-pybind"] = lambda: launch(handle, (1,), args)  # the pybind11 entry point
    ints = tuple(a.data_ptr() if hasattr(a, "data_ptr") else a for a in args)
    out["tessera-ints"] = lambda: k[(1,)](*ints)  # no torch reads, no torch stream query
    out["python-call"] = lambda: None  # the loop and the lambda call, in every Python column
    if not fake:
        try:
            tk = triton_kernels()[n]
            out["triton"] = lambda: tk[(1,)](*args)
        except ImportError:
            pass
        x, y = torch.zeros(1, device="cuda"), torch.ones(1, device="cuda")
        out["torch-add_"] = lambda: x.add_(y)
    compiled = k.warmup(*args, grid=(1,))
    C = tessera._C
    stream = torch._C._cuda_getCurrentRawStream(0) if fake else torch.cuda.current_stream().cuda_stream
    out["bare-cuLaunch"] = ("cpp", lambda iters: C.bench_bare_launch(compiled._h, args, 1, iters, stream, False))
    out["cpp-Kernel"] = ("cpp", lambda iters: C.bench_bare_launch(compiled._h, args, 1, iters, stream, True))
    return out


def attribute_costs(iterations):
    """ns per read of what a launch path could read from a torch tensor."""
    import torch
    t = torch.empty(16, device="cuda")
    probes = {"t.data_ptr()": lambda: t.data_ptr(), "t.dtype": lambda: t.dtype, "t.is_cuda": lambda: t.is_cuda,
              "t.device": lambda: t.device, "t.device.index": lambda: t.device.index,
              "t.get_device()": lambda: t.get_device(), "t.__cuda_array_interface__": lambda: t.__cuda_array_interface__,
              "(empty lambda)": lambda: None}
    out = {}
    for name, f in probes.items():
        t0 = time.perf_counter()
        for _ in range(iterations):
            f()
        out[name] = (time.perf_counter() - t0) / iterations * 1e9
    base = out.pop("(empty lambda)")
    return {k: max(0.0, v - base) for k, v in out.items()}


def run(options):
    fake = getattr(options, "fake_driver", False)
    reason = None if fake else harness.skip_reason()
    if reason:
        print(f"launch_overhead skipped: {reason}")
        return []
    iterations = 2000 if options.quick else 20000
    rounds = 5 if options.quick else 11
    device = (f"fake CUDA driver ({os.environ['TESSERA_LIBCUDA']}), fake torch, host CPU" if fake
              else harness.device_description())
    results = {"benchmark": "launch_overhead", "unit": "us of host time per launch",
               "device": device, "date": time.strftime("%Y-%m-%d %H:%M"), "rows": []}
    print(f"\nlaunch_overhead on {results['device']}, {results['date']}: host us per launch "
          f"(median of {rounds} rounds of {iterations} launches)")
    names = ["tessera", "tessera-py-reads", "tessera-bound", "tessera-pybind", "tessera-ints", "python-call", "triton", "torch-add_",
             "bare-cuLaunch", "cpp-Kernel"]
    print(f"{'case':<20}" + "".join(f"{n:>17}" for n in names))
    for label, n in CASES.items():
        args = arguments(n, fake)
        row = {"case": label, "us": {}, "errors": {}}
        for name, p in providers(n, args, fake).items():
            try:
                if isinstance(p, tuple) and p[0] == "no-fastpath":
                    tessera._C.torch_fastpath(False)
                    try:
                        row["us"][name] = host_us(p[1], iterations, rounds)
                    finally:
                        tessera._C.torch_fastpath(True)
                elif isinstance(p, tuple):  # a C++ loop: ask it for seconds per launch
                    p[1](100)
                    synchronize()
                    row["us"][name] = statistics.median(p[1](iterations) * 1e6 for _ in range(rounds))
                    synchronize()
                else:
                    row["us"][name] = host_us(p, iterations, rounds)
            except Exception as e:  # noqa: BLE001 (reported, not fatal)
                row["errors"][name] = f"{type(e).__name__}: {e}"[:300]
        results["rows"].append(row)
        print(f"{label:<20}" + "".join(f"{row['us'][k]:>17.2f}" if k in row["us"] else f"{'-':>17}" for k in names))
        for k, e in row["errors"].items():
            print(f"    {k}: {e}")
    if not fake:
        results["attribute_ns"] = attribute_costs(200000 if not options.quick else 20000)
        print("torch tensor attribute reads (ns each): " +
              ", ".join(f"{k} {v:.0f}" for k, v in results["attribute_ns"].items()))
    out = pathlib.Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / ("launch_overhead_fake.json" if fake else "launch_overhead.json")).write_text(json.dumps(results, indent=1))
    return [results]


if __name__ == "__main__":
    ap = harness.parser(__doc__)
    ap.add_argument("--fake-driver", action="store_true",
                    help="no GPU: the fake CUDA driver and tests/tools/fake_torch (tessera's own host cost)")
    opts = harness.parse(ap)
    res = run(opts)
    if opts.json:
        pathlib.Path(opts.json).write_text(json.dumps(res, indent=1))
