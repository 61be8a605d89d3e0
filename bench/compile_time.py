"""Compile time of kernels/softmax.py's softmax_kernel: from the first launch
call to a loaded function, tessera vs Triton (the same row softmax written for Triton, as
bench/softmax.py runs it), each in a new process with torch and the CUDA
context already up:

  cold   an empty cache directory (tessera: TESSERA_CACHE_DIR; Triton: TRITON_CACHE_DIR)
  warm   the cache filled by a previous process: tessera's disk hit (no parse, no
         compile, no PTX JIT: the cubin is loaded), Triton's cache hit

Reported: the first call (launch included, synchronised) minus one steady-state
launch; for tessera the warm time is split into the @jit handle (reading and
reducing the kernel's file, parsing its parameters) and the rest (key, disk
entry, cuModuleLoadData), and the rest again by the launch path's timed steps
(tessera._C.step_times: key, entry read and decode, JIT plan, module load, ...;
the CompiledKernel object, the first cuLaunchKernel; "other" is the rest, Python); `import tessera` is timed too.
Medians over several processes: tessera's warm start over 20 new processes (its minimum and
maximum shown too: one slow process, a page cache or scheduler hiccup, does not decide it),
Triton's over fewer (--quick: 3; else 5). tessera is measured
with each back-end (--backend, default both): "tessera" (LLVM's NVPTX) and
"tessera-nvrtc" (CUDA C++ through NVRTC, docs/nvrtc.md).

Without a GPU too: source -> PTX of every kernel in kernels/manifest.txt with
each back-end, in this process, no disk cache (tessera.compile, sm_90a),
median of several compiles: the back-ends' compile times side by side.

    python3 bench/compile_time.py [--quick] [--out DIR] [--json FILE] [--backend llvm|nvrtc|both]
"""
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import harness  # noqa: E402

ROWS, COLS = 4096, 1024
TESSERA_WARMS = 20  # new processes whose median is tessera's warm start (issue 31: <= 1 ms, robustly)

CHILD = r"""
import json, sys, time
sys.path[:0] = [ROOT + "/python", ROOT, ROOT + "/bench"]
import torch
x = torch.randn(ROWS, COLS, device="cuda")
y = torch.empty_like(x)
torch.cuda.synchronize()
out = {}
if WHICH.startswith("tessera"):
    ti = time.perf_counter()
    import tessera
    out["import_ms"] = (time.perf_counter() - ti) * 1e3
    from kernels.softmax import softmax_kernel as k
    steps = getattr(tessera._C, "step_times", None)
    if steps:
        steps(reset=True)
    t0 = time.perf_counter()
    k._get_handle()
    t1 = time.perf_counter()
    k[(ROWS,)](y, x, x.stride(0), y.stride(0), ROWS, COLS, BLOCK_SIZE=COLS)
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    out["handle_ms"] = (t1 - t0) * 1e3
    out["steps"] = steps() if steps else {}
    out["stats"] = tessera._C.cache_stats()
    launch = lambda: k[(ROWS,)](y, x, x.stride(0), y.stride(0), ROWS, COLS, BLOCK_SIZE=COLS)
else:
    import triton, triton.language as tl
    @triton.jit
    def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, rows, cols, BLOCK_SIZE: tl.constexpr):
        for r in range(tl.program_id(0), rows, tl.num_programs(0)):
            idx = tl.arange(0, BLOCK_SIZE)
            valid = idx < cols
            x = tl.load(in_ptr + r * in_stride + idx, mask=valid, other=-float("inf"))
            e = tl.exp(x - tl.max(x, axis=0))
            tl.store(out_ptr + r * out_stride + idx, e / tl.sum(e, axis=0), mask=valid)
    t0 = t1 = time.perf_counter()
    softmax_kernel[(ROWS,)](y, x, x.stride(0), y.stride(0), ROWS, COLS, BLOCK_SIZE=COLS)
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    launch = lambda: softmax_kernel[(ROWS,)](y, x, x.stride(0), y.stride(0), ROWS, COLS, BLOCK_SIZE=COLS)
for _ in range(3):
    launch()
torch.cuda.synchronize()
t3 = time.perf_counter()
launch()
torch.cuda.synchronize()
steady = time.perf_counter() - t3
assert torch.allclose(y, torch.softmax(x, dim=1), atol=1e-5), "wrong softmax"
out["first_ms"] = (t2 - t0 - steady) * 1e3
out["rest_ms"] = (t2 - t1 - steady) * 1e3
out["steady_ms"] = steady * 1e3
print("RESULT " + json.dumps(out))
"""


def child(which, cache_dir):
    env = dict(os.environ, TESSERA_CACHE_DIR=cache_dir, TRITON_CACHE_DIR=cache_dir)
    if which.startswith("tessera"):
        env["TESSERA_BACKEND"] = "nvrtc" if which == "tessera-nvrtc" else "llvm"
    code = f"ROOT = {str(ROOT)!r}; WHICH = {which!r}; ROWS = {ROWS}; COLS = {COLS}\n" + CHILD
    script = os.path.join(os.path.dirname(cache_dir), f"child_{which}.py")  # a file: Triton reads kernels' source
    with open(script, "w") as f:
        f.write(code)
    proc = subprocess.run([sys.executable, script], env=env, capture_output=True, text=True, timeout=300)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{which} child failed ({proc.returncode}): {proc.stderr[-800:]}")
    return json.loads(lines[-1][7:])


def measure(which, colds, warms):
    """{'cold_ms', 'warm_ms', ...}: medians over `colds` fresh directories and `warms` warm processes."""
    cold, warm, extra = [], [], {}
    with tempfile.TemporaryDirectory(prefix=f"bench-compile-{which}-") as base:
        for i in range(colds):
            d = os.path.join(base, f"cold{i}")
            cold.append(child(which, d)["first_ms"])
        for _ in range(warms):  # the last cold directory is now warm
            r = child(which, os.path.join(base, f"cold{colds - 1}"))
            warm.append(r["first_ms"])
            if which.startswith("tessera"):
                extra.setdefault("warm_handle_ms", []).append(r["handle_ms"])
                extra.setdefault("warm_rest_ms", []).append(r["rest_ms"])
                extra.setdefault("import_ms", []).append(r["import_ms"])
                for step, ms in r.get("steps", {}).items():
                    extra.setdefault("warm_step_" + step + "_ms", []).append(ms)
                extra["warm_stats"] = r["stats"]
    out = {"cold_ms": statistics.median(cold), "warm_ms": statistics.median(warm), "cold_all": cold, "warm_all": warm}
    for k, v in extra.items():
        out[k] = statistics.median(v) if isinstance(v, list) else v
    return out


# The launch path's steps (tessera._C.step_times, runtime/StepTimes.h) a warm start goes through.
WARM_STEPS = [("driver_init", "driver init"), ("specialize", "specialise"), ("target_arch", "arch"),
              ("cache_key", "key"), ("entry_read", "entry read"), ("entry_decode", "decode"),
              ("jit_plan", "JIT plan"), ("module_load", "module load"), ("compile", "compile"),
              ("assemble", "assemble"), ("result_object", "CompiledKernel object"), ("first_launch", "first launch"),
              ("torch_fastpath", "torch fast path load")]


def warm_split(r):
    """'warm split, ms: handle 0.21, key 0.05, ..., other 0.12' (medians; "other": the rest, Python)."""
    parts = [("@jit handle", r["warm_handle_ms"])]
    parts += [(label, r[f"warm_step_{step}_ms"]) for step, label in WARM_STEPS
              if r.get(f"warm_step_{step}_ms", 0) >= 0.0005]
    timed = sum(ms for label, ms in parts[1:])
    parts.append(("other (Python)", max(0.0, r["warm_ms"] - r["warm_handle_ms"] - timed)))
    return "warm split, ms: " + ", ".join(f"{label} {ms:.3f}" for label, ms in parts)


def manifest_entries():
    entries = []
    for line in (ROOT / "kernels" / "manifest.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            file, kernel, signature, *rest = line.split()
            constexprs, warps = {}, 4
            for item in rest:
                k, v = item.split("=", 1)
                if k == "num_warps":
                    warps = int(v)
                else:
                    constexprs[k] = int(v) if v.lstrip("-").isdigit() else v
            entries.append((file, kernel, signature, constexprs, warps))
    return entries


def compile_only(options):
    """Source -> PTX per bundled kernel and back-end, in-process, no disk cache: {label: {backend: ms}}."""
    os.environ["TESSERA_CACHE"] = "off"
    sys.path.insert(0, str(ROOT / "python"))
    import tessera
    backends = [b for _, b in harness.tessera_backends(options)]
    reps = 3 if options.quick else 7
    rows = {}
    seen = {}
    print(f"\nsource -> PTX (sm_90a, no disk cache), ms, median of {reps}; per bundled kernel and back-end")
    print(f"{'kernel':<44}" + "".join(f"{b:>10}" for b in backends) + ("   nvrtc/llvm" if len(backends) == 2 else ""))
    for file, kernel, signature, constexprs, warps in manifest_entries():
        label = f"{file[:-3]}.{kernel}"
        seen[label] = seen.get(label, 0) + 1
        if seen[label] > 1:
            label += f".{seen[label]}"
        row = {}
        for backend in backends:
            times = []
            try:
                for _ in range(reps):
                    t0 = time.perf_counter()
                    tessera.compile(str(ROOT / "kernels" / file), signature, constexprs, num_warps=warps,
                                    target="sm_90a", kernel=kernel, backend=backend)
                    times.append((time.perf_counter() - t0) * 1e3)
                row[backend] = statistics.median(times)
            except Exception as e:  # noqa: BLE001 (reported, not fatal)
                row[backend] = None
                row.setdefault("errors", {})[backend] = f"{type(e).__name__}: {e}"[:300]
        rows[label] = row
        cells = "".join(f"{row[b]:>10.1f}" if row.get(b) is not None else f"{'FAIL':>10}" for b in backends)
        ratio = ""
        if len(backends) == 2 and row.get("llvm") and row.get("nvrtc"):
            ratio = f"   {row['nvrtc'] / row['llvm']:10.2f}"
        print(f"{label:<44}{cells}{ratio}", flush=True)
    totals = {b: sum(r[b] for r in rows.values() if r.get(b) is not None) for b in backends}
    print(f"{'total':<44}" + "".join(f"{totals[b]:>10.1f}" for b in backends))
    return {"rows": rows, "total_ms": totals, "reps": reps, "arch": "sm_90a"}


def run(options):
    reason = harness.skip_reason()
    if reason:
        print(f"compile_time: no GPU ({reason}): compile-only numbers")
        results = {"benchmark": "compile_time", "date": time.strftime("%Y-%m-%d %H:%M"),
                   "compile_only": compile_only(options), "providers": {}}
        out = pathlib.Path(options.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "compile_time.json").write_text(json.dumps(results, indent=1))
        return [results]
    colds, triton_warms = (1, 3) if options.quick else (3, 5)
    warms = TESSERA_WARMS
    results = {"benchmark": "compile_time", "kernel": "kernels/softmax.py:softmax_kernel",
               "shape": [ROWS, COLS], "device": harness.device_description(), "date": time.strftime("%Y-%m-%d %H:%M"),
               "providers": {}}
    print(f"\ncompile_time of softmax_kernel ({ROWS}x{COLS} fp32) on {results['device']}, {results['date']}: "
          f"first launch call minus a steady launch, ms (median of {colds} cold / {warms} warm processes; "
          f"Triton {triton_warms} warm)")
    whichs = [name for name, _ in harness.tessera_backends(options)] + ["triton"]
    for which in whichs:
        try:
            results["providers"][which] = measure(which, colds, warms if which.startswith("tessera") else triton_warms)
        except Exception as e:  # noqa: BLE001 (reported, not fatal)
            results["providers"][which] = {"error": f"{type(e).__name__}: {e}"[:600]}
    for which, r in results["providers"].items():
        if "error" in r:
            print(f"  {which:<13} FAILED: {r['error']}")
            continue
        line = (f"  {which:<13} cold {r['cold_ms']:9.1f}   warm (new process) {r['warm_ms']:8.2f} "
                f"(min {min(r['warm_all']):.2f}, max {max(r['warm_all']):.2f}, {len(r['warm_all'])} processes)")
        if which.startswith("tessera"):
            line += (f"   [of which the @jit handle {r['warm_handle_ms']:.2f}, key + disk entry + module load "
                     f"{r['warm_rest_ms']:.2f}]")
        print(line)
        if which.startswith("tessera") and "warm_step_cache_key_ms" in r:
            print("      " + warm_split(r) + f"; import tessera {r['import_ms']:.1f} ms")
    t, tr = results["providers"].get("tessera", {}), results["providers"].get("triton", {})
    if "cold_ms" in t and "cold_ms" in tr:
        results["cold_ratio"] = t["cold_ms"] / tr["cold_ms"]
        print(f"  tessera cold / Triton cold = {results['cold_ratio']:.2f} (target <= 0.5); "
              f"tessera warm disk hit {t['warm_ms']:.2f} ms (target <= 1 ms)")
    results["compile_only"] = compile_only(options)
    out = pathlib.Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "compile_time.json").write_text(json.dumps(results, indent=1))
    return [results]


if __name__ == "__main__":
    opts = harness.parse(harness.parser(__doc__))
    res = run(opts)
    if opts.json:
        pathlib.Path(opts.json).write_text(json.dumps(res, indent=1))
