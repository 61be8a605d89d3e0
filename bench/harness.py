"""The benchmark harness every bench/*.py uses.

Timing (`bench`): CUDA events around each run, after `warmup` untimed runs;
before every timed run the L2 cache is flushed by overwriting a buffer
larger than it (so each run reads its input from DRAM, as in a real model
step); the result is the median of `reps` runs (plus the 20th and 80th
percentiles). Events are recorded back to back and read after one
synchronisation, so host overhead between runs does not count.
`run_benchmark` times the providers of a case interleaved (`bench_interleaved`):
all of them are warmed up first, then each of `reps` rounds runs every provider
once, the order rotating by one each round. The GPU's clock drifts as it heats
up (5-9 % on an H100 at 700 W), so providers timed one after another would be
compared at different clocks; interleaved, they share the same conditions.

Reporting (`report`): a table (one row per shape, one column per provider,
GB/s counting the bytes read plus written) on stdout, and per benchmark a
PNG plot (matplotlib; skipped with a message when it is missing) and a JSON
file with every number, in the output folder.

    python3 bench/harness.py                 # every benchmark in bench/ (but the *_variants sweeps)
    python3 bench/harness.py softmax         # one of them (bench/softmax.py)
    python3 bench/softmax.py --quick         # fewer repetitions
Options: --out DIR (default bench/results), --reps N, --quick, --json FILE
(all results of this run in one file), --providers a,b (a subset),
--backend llvm|nvrtc|both (default both: tessera's kernels with each back-end
side by side, as the providers "tessera" (LLVM's NVPTX) and "tessera-nvrtc").
"""
import argparse
import importlib.util
import json
import os
import pathlib
import statistics
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
for p in (ROOT / "python", ROOT):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))


# ------------------------------------------------------------------ timing

_flush_buffer = None


def flush_l2():
    """Overwrites 256 MiB (more than any current GPU's L2) so the next run starts cold."""
    global _flush_buffer
    import torch
    if _flush_buffer is None:
        _flush_buffer = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    _flush_buffer.zero_()


def _stats(starts, ends):
    times = sorted(s.elapsed_time(e) for s, e in zip(starts, ends))
    q = lambda f: times[min(len(times) - 1, int(f * len(times)))]  # noqa: E731
    return {"median_ms": statistics.median(times), "p20_ms": q(0.2), "p80_ms": q(0.8), "reps": len(times)}


def error_text(e):
    return f"{type(e).__name__}: {e}"[:300]


def bench(fn, warmup=10, reps=50, flush=True):
    """Times fn() on the current stream: {'median_ms', 'p20_ms', 'p80_ms', 'reps'}."""
    import torch
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        if flush:
            flush_l2()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return _stats(starts, ends)


def bench_interleaved(fns, warmup=10, reps=50, flush=True, errors=None):
    """Times each fn of {name: fn} as `bench` does, but all of them in the same rounds: `warmup`
    runs of each, then `reps` rounds, each running every fn once (L2 flushed before each run),
    starting one name further along each round. Returns {name: bench's dict}.
    A fn that raises is left out from then on (no result): its exception goes into errors[name]
    when errors is a dict, else it propagates."""
    import torch
    names = []
    for name, fn in fns.items():
        try:
            for _ in range(warmup):
                fn()
        except Exception as e:  # noqa: BLE001 (a fn failing is reported, the others still timed)
            if errors is None:
                raise
            errors[name] = error_text(e)
            continue
        names.append(name)
    torch.cuda.synchronize()
    starts = {n: [torch.cuda.Event(enable_timing=True) for _ in range(reps)] for n in names}
    ends = {n: [torch.cuda.Event(enable_timing=True) for _ in range(reps)] for n in names}
    failed = set()
    for r in range(reps):
        # Rotated: each fn takes every place in a round equally often, not always first or last.
        k = r % len(names) if names else 0
        for name in names[k:] + names[:k]:
            if name in failed:
                continue
            if flush:
                flush_l2()
            starts[name][r].record()
            try:
                fns[name]()
            except Exception as e:  # noqa: BLE001 (its times so far are dropped, the others' kept)
                if errors is None:
                    raise
                errors[name] = error_text(e)
                failed.add(name)
                continue
            ends[name][r].record()
    torch.cuda.synchronize()
    return {n: _stats(starts[n], ends[n]) for n in names if n not in failed}


def check_close(out, ref, tol, what="wrong result"):
    """Raises unless ||out - ref|| / ||ref|| <= tol (computed in float64; NaN fails)."""
    err = ((out.double() - ref.double()).norm() / ref.double().norm()).item()
    if not err <= tol:
        raise AssertionError(f"{what}: relative error {err:.2e}")


def gbps(nbytes, ms):
    return nbytes / (ms * 1e-3) / 1e9


def device_description():
    import torch
    p = torch.cuda.get_device_properties(torch.cuda.current_device())
    return f"{p.name} ({p.multi_processor_count} SMs, {p.total_memory / 2**30:.0f} GiB), torch {torch.__version__}"


# ----------------------------------------------------------------- running

def run_benchmark(name, cases, providers, nbytes, options, check=None):
    """cases: [(label, make_inputs)] where make_inputs() returns the inputs;
    providers: {name: fn(inputs) -> callable that runs once}; nbytes(inputs): bytes read + written;
    check(inputs, provider, fn): raises when a provider's output is wrong (before timing).
    The providers of a case are timed together (bench_interleaved); one that raises is reported
    in the row's errors and the others are still timed.
    Returns the results dict (also written as JSON/PNG into options.out)."""
    import torch
    wanted = options.providers.split(",") if options.providers else list(providers)
    results = {"benchmark": name, "device": device_description(), "date": time.strftime("%Y-%m-%d %H:%M"),
               "reps": options.reps, "providers": [p for p in providers if p in wanted], "rows": []}
    for label, make_inputs in cases:
        inputs = make_inputs()
        row = {"case": label, "bytes": nbytes(inputs), "ms": {}, "gbps": {}, "errors": {}}
        fns = {}
        for pname in results["providers"]:
            try:
                fns[pname] = providers[pname](inputs)
                if check is not None:
                    check(inputs, pname, fns[pname])
            except Exception as e:  # noqa: BLE001 (a provider failing is reported, not fatal)
                fns.pop(pname, None)
                row["errors"][pname] = error_text(e)
        try:
            timed = bench_interleaved(fns, warmup=options.warmup, reps=options.reps, errors=row["errors"])
        except Exception as e:  # noqa: BLE001 (e.g. a sticky CUDA error at the synchronisation: no one provider's)
            timed = {}
            for pname in fns:
                row["errors"].setdefault(pname, error_text(e))
        for pname in results["providers"]:
            if pname in timed:
                row["ms"][pname] = timed[pname]["median_ms"]
                row["gbps"][pname] = gbps(row["bytes"], timed[pname]["median_ms"])
        results["rows"].append(row)
        del inputs, fns  # every provider's callable holds the inputs (and maybe outputs): free them all
        torch.cuda.empty_cache()
        print_row(results, row, first=len(results["rows"]) == 1)
    write_outputs(results, options)
    return results


def print_row(results, row, first):
    providers = results["providers"]
    if first:
        print(f"\n{results['benchmark']} on {results['device']}, {results['date']}; GB/s = (bytes read + written)"
              f" / median time; {results['reps']} runs, L2 flushed, providers interleaved")
        print(f"{'case':<24}" + "".join(f"{p:>14}" for p in providers))
    cells = []
    for p in providers:
        if p in row["gbps"]:
            cells.append(f"{row['gbps'][p]:>14.0f}")
        else:
            cells.append(f"{'FAIL':>14}")
    print(f"{row['case']:<24}" + "".join(cells), flush=True)
    for p, err in row["errors"].items():
        print(f"    {p}: {err}")


def write_outputs(results, options):
    out = pathlib.Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{results['benchmark']}.json").write_text(json.dumps(results, indent=1))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"(matplotlib is not installed: no plot for {results['benchmark']})")
        return
    rows = results["rows"]
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(rows)), 4))
    width = 0.8 / max(1, len(results["providers"]))
    for i, p in enumerate(results["providers"]):
        xs = [k + i * width for k in range(len(rows))]
        ax.bar(xs, [r["gbps"].get(p, 0) / 1000 for r in rows], width, label=p)
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(rows))])
    ax.set_xticklabels([r["case"] for r in rows], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("TB/s (read + written)")
    ax.set_title(f"{results['benchmark']}: {results['device'].split(' (')[0]}, {results['date']}", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / f"{results['benchmark']}.png", dpi=120)
    plt.close(fig)
    print(f"(plot: {out / (results['benchmark'] + '.png')})")


def parser(description=""):
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--out", default=str(HERE / "results"))
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--quick", action="store_true", help="10 repetitions, 3 warm-up runs")
    ap.add_argument("--providers", default="", help="comma-separated subset")
    ap.add_argument("--json", default="", help="also write all results of this run here")
    ap.add_argument("--backend", default="both", choices=["llvm", "nvrtc", "both"],
                    help="tessera's back-end(s): both = providers tessera (llvm) and tessera-nvrtc side by side")
    return ap


def tessera_backends(options):
    """[(provider name, back-end)] for tessera's kernels: ("tessera", "llvm") and/or ("tessera-nvrtc", "nvrtc")."""
    choice = getattr(options, "backend", "both")
    out = []
    if choice in ("llvm", "both"):
        out.append(("tessera", "llvm"))
    if choice in ("nvrtc", "both"):
        out.append(("tessera-nvrtc", "nvrtc"))
    return out


def parse(ap, argv=None):
    options = ap.parse_args(argv)
    if options.quick:
        options.reps, options.warmup = 10, 3
    return options


def skip_reason():
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA GPU"
    return None


def main(argv=None):
    ap = parser("Runs every benchmark in bench/ (or the named ones).")
    ap.add_argument("names", nargs="*")
    options = parse(ap, argv)
    reason = skip_reason()
    if reason:
        print(f"benchmarks skipped: {reason}")
        return 0
    # *_variants.py are one-off candidate sweeps (minutes each): run by name only.
    names = options.names or sorted(p.stem for p in HERE.glob("*.py")
                                    if p.stem != "harness" and not p.stem.endswith("_variants"))
    everything = []
    for name in names:
        spec = importlib.util.spec_from_file_location(f"bench_{name}", HERE / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        everything.extend(module.run(options))
    if options.json:
        pathlib.Path(options.json).write_text(json.dumps(everything, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
