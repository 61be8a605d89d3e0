"""tessera.testing: benchmarking and checking helpers with Triton's triton.testing API
(Triton 3.6), so that benchmark scripts run unchanged (`triton.testing` in the
compatibility mode, docs/compatibility.md).

    ms = tessera.testing.do_bench(lambda: kernel[grid](x, y, n))           # mean, in ms
    ms, lo, hi = tessera.testing.do_bench(fn, quantiles=[0.5, 0.2, 0.8])
    ms = tessera.testing.do_bench_cudagraph(fn)                             # host overhead removed
    tessera.testing.assert_close(out, ref, atol=1e-2, rtol=0)

    @tessera.testing.perf_report(tessera.testing.Benchmark(
        x_names=["N"], x_vals=[2**i for i in range(12, 20)], line_arg="provider",
        line_vals=["tessera", "torch"], line_names=["tessera", "torch"], ylabel="GB/s",
        plot_name="vector-add", args={}))
    def bench(N, provider): ...
    bench.run(print_data=True, show_plots=False, save_path="out/")

Timing needs torch (CUDA events on its current stream, torch.cuda for the device),
imported at call time only. Plots need matplotlib and are skipped without it; the
table, the CSV file and results.html need nothing beyond Python. run(return_df=True)
returns a pandas DataFrame when pandas is installed, else a Table (columns, rows).
"""
import csv
import math
import os
import statistics
import sys

RETURN_MODES = ("min", "max", "mean", "median", "all")


# ------------------------------------------------------------------ statistics

def _check_summary_arguments(quantiles, return_mode):
    if return_mode not in RETURN_MODES:
        raise ValueError(f"return_mode must be one of {', '.join(map(repr, RETURN_MODES))}, got {return_mode!r}")
    if quantiles is not None:
        for q in quantiles:
            if not 0 <= q <= 1:
                raise ValueError(f"quantiles must be in [0, 1], got {q!r}")


def quantile(times, qs):
    """The quantiles `qs` of `times`, linearly interpolated between sorted samples (as numpy's default)."""
    a = sorted(times)
    out = []
    for q in qs:
        point = q * (len(a) - 1)
        lower, upper = math.floor(point), math.ceil(point)
        t = point - lower
        out.append((1 - t) * a[lower] + t * a[upper])
    return out


def summarize(times, quantiles=None, return_mode="mean"):
    """What do_bench returns for these per-run times: the quantiles (one value for a single
    quantile) when given, else the statistic `return_mode` ("all": the list itself)."""
    _check_summary_arguments(quantiles, return_mode)
    if quantiles is not None:
        values = quantile(times, quantiles)
        return values[0] if len(values) == 1 else values
    if return_mode == "all":
        return list(times)
    return {"min": min, "max": max, "mean": statistics.mean, "median": statistics.median}[return_mode](times)


# ------------------------------------------------------------------ timing

def _device_interface():
    """torch.cuda, through the active driver (tessera.runtime.driver) as Triton asks it."""
    from .runtime.driver import active
    return active.get_device_interface()


def _runs_in(ms, per_run_ms):
    """How many runs of per_run_ms fill about `ms` milliseconds (at least 1)."""
    if per_run_ms <= 0:
        return 1000
    return max(1, int(ms / per_run_ms))


def _clear_grads(grad_to_none):
    if grad_to_none is not None:
        for x in grad_to_none:
            x.grad = None


def do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean"):
    """Times fn() on the GPU, in milliseconds.

    fn runs once (compiling what it needs), then 5 times to estimate one run's time; then
    about `warmup` ms of untimed runs and about `rep` ms of timed runs (warmup and rep are
    milliseconds, not counts), each timed run between its own pair of CUDA events and after
    a 256 MB buffer is zeroed so that the L2 cache holds none of fn's data. grad_to_none: tensors
    whose .grad is reset to None before each run (fn runs a backward pass). Returns the
    `quantiles` of the run times when given (one number for one quantile), else the mean
    (return_mode "min", "max", "median"; "all": every run's time).
    """
    _check_summary_arguments(quantiles, return_mode)
    from .runtime.driver import active as driver
    di = _device_interface()

    fn()
    di.synchronize()
    cache = driver.get_empty_cache_for_benchmark()

    start, end = di.Event(enable_timing=True), di.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        driver.clear_cache(cache)
        fn()
    end.record()
    di.synchronize()
    estimate_ms = start.elapsed_time(end) / 5

    n_warmup = _runs_in(warmup, estimate_ms)
    n_repeat = _runs_in(rep, estimate_ms)
    starts = [di.Event(enable_timing=True) for _ in range(n_repeat)]
    ends = [di.Event(enable_timing=True) for _ in range(n_repeat)]
    for _ in range(n_warmup):
        fn()
    for i in range(n_repeat):
        _clear_grads(grad_to_none)
        driver.clear_cache(cache)
        starts[i].record()
        fn()
        ends[i].record()
    di.synchronize()
    times = [s.elapsed_time(e) for s, e in zip(starts, ends)]
    return summarize(times, quantiles, return_mode)


def do_bench_cudagraph(fn, rep=20, grad_to_none=None, quantiles=None, return_mode="mean"):
    """Times fn() with the launch overhead removed: about `rep` ms of fn() captured in one CUDA
    graph (on a side stream), replayed 10 times; each replay's time divided by the runs in it.
    No L2 flush between runs. Arguments and result as do_bench's."""
    _check_summary_arguments(quantiles, return_mode)
    import torch
    with torch.cuda.stream(torch.cuda.Stream()):
        fn()
        if grad_to_none is not None:
            for x in grad_to_none:
                x.detach_()
                x.requires_grad_(True)
                x.grad = None
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            fn()
        end.record()
        torch.cuda.synchronize()
        n_repeat = _runs_in(rep, start.elapsed_time(end) / 5)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(n_repeat):
                _clear_grads(grad_to_none)
                fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(10):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            graph.replay()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) / n_repeat)
    return summarize(times, quantiles, return_mode)


# ------------------------------------------------------------------ checking

def _to_numpy(x):
    import numpy as np
    if type(x).__module__.split(".")[0] == "torch":
        import torch
        if isinstance(x, torch.Tensor):
            if x.dtype == torch.bfloat16:
                x = x.float()
            return x.detach().cpu().numpy()
    return np.asarray(x)


def _dtype_of(x):
    return getattr(x, "dtype", None)


def assert_close(x, y, atol=None, rtol=None, err_msg=""):
    """Raises AssertionError unless |x - y| <= atol + rtol * |y| everywhere (NaNs equal).
    x, y: numbers, lists, numpy arrays or torch tensors (bf16 compared as fp32). atol defaults
    to 1e-2, rtol to 0; either may be a function of x's dtype."""
    import numpy as np
    if atol is None:
        atol = 1e-2
    atol = atol(_dtype_of(x)) if callable(atol) else atol
    if rtol is None:
        rtol = 0.0
    rtol = rtol(_dtype_of(x)) if callable(rtol) else rtol
    x, y = _to_numpy(x), _to_numpy(y)
    if x.size > 1 or y.size > 1:
        np.testing.assert_allclose(x, y, atol=atol, rtol=rtol, equal_nan=True, err_msg=err_msg)
        return
    if not np.allclose(x, y, atol=atol, rtol=rtol, equal_nan=True):
        raise AssertionError(f"{err_msg} {x} is not close to {y} (atol={atol}, rtol={rtol})")


# ------------------------------------------------------------------ benchmarks

class Benchmark:
    """One benchmark table (and plot) of perf_report: a row per value of the x_names arguments,
    a column per value of line_arg.

    x_vals: a list of values given to every name in x_names, or of tuples (one value per name).
    line_vals / line_names: the values of line_arg and their column names; styles: a
    (color, linestyle) per line for the plot. args: the other arguments, fixed. ylabel names
    the unit in the column titles; x_log / y_log: log scales on the plot; plot_name: the
    table's title and the file names under save_path.
    """

    def __init__(self, x_names, x_vals, line_arg, line_vals, line_names, plot_name, args, xlabel="", ylabel="",
                 x_log=False, y_log=False, styles=None):
        self.x_names = list(x_names)
        self.x_vals = list(x_vals)
        self.x_log = x_log
        self.line_arg = line_arg
        self.line_vals = list(line_vals)
        self.line_names = list(line_names)
        self.y_log = y_log
        self.styles = styles
        self.xlabel = xlabel
        self.ylabel = ylabel
        self.plot_name = plot_name
        self.args = dict(args)
        if len(self.line_names) != len(self.line_vals):
            raise ValueError(f"Benchmark {plot_name!r}: {len(self.line_vals)} line_vals but "
                             f"{len(self.line_names)} line_names")
        if styles is not None and len(styles) < len(self.line_vals):
            raise ValueError(f"Benchmark {plot_name!r}: {len(self.line_vals)} lines but {len(styles)} styles")


class Table:
    """run(return_df=True)'s result without pandas: `columns` and `rows` (lists), printable."""

    def __init__(self, columns, rows):
        self.columns = list(columns)
        self.rows = [list(r) for r in rows]

    def column(self, name):
        i = self.columns.index(name)
        return [r[i] for r in self.rows]

    def to_string(self):
        cells = [[""] + self.columns] + [[str(i)] + [_cell(v) for v in row] for i, row in enumerate(self.rows)]
        widths = [max(len(r[c]) for r in cells) for c in range(len(cells[0]))]
        return "\n".join("  ".join(v.rjust(w) for v, w in zip(r, widths)).rstrip() for r in cells)

    def __str__(self):
        return self.to_string()

    def __len__(self):
        return len(self.rows)


def _cell(v):
    if v is None:
        return "NaN"
    if isinstance(v, float):
        return f"{v:.6f}"
    return str(v)


def _x_tuple(bench, x):
    values = list(x) if isinstance(x, (list, tuple)) else [x] * len(bench.x_names)
    if len(values) != len(bench.x_names):
        raise ValueError(f"Benchmark {bench.plot_name!r}: expected {len(bench.x_names)} values "
                         f"({', '.join(bench.x_names)}), got {x!r}")
    return values


def _mean_min_max(result):
    if isinstance(result, (tuple, list)):
        if len(result) != 3:
            raise ValueError(f"a benchmark function returns a number or (mean, min, max), got {result!r}")
        return tuple(result)
    return result, None, None


class Mark:
    """A function marked by perf_report: .run() calls it for every point of its benchmarks."""

    def __init__(self, fn, benchmarks):
        self.fn = fn
        self.benchmarks = benchmarks

    def _measure(self, bench, **kwargs):
        """(x columns, mean columns, min columns, max columns, rows of x + means + mins + maxes)."""
        unit = f" ({bench.ylabel})"
        means = [f"{name}{unit}" for name in bench.line_names]
        mins = [f"{name}-min{unit}" for name in bench.line_names]
        maxes = [f"{name}-max{unit}" for name in bench.line_names]
        rows = []
        for x in bench.x_vals:
            x_values = _x_tuple(bench, x)
            x_args = dict(zip(bench.x_names, x_values))
            results = [_mean_min_max(self.fn(**x_args, **{bench.line_arg: y}, **bench.args, **kwargs))
                       for y in bench.line_vals]
            rows.append(x_values + [r[0] for r in results] + [r[1] for r in results] + [r[2] for r in results])
        return means, mins, maxes, rows

    def _plot(self, bench, table, means, mins, maxes, show_plots, save_path):
        try:
            import matplotlib.pyplot as plt
        except ImportError:
            if show_plots or save_path:
                print(f"tessera.testing: no plot for {bench.plot_name!r} (matplotlib is not installed)",
                      file=sys.stderr)
            return
        plt.figure()
        ax = plt.subplot()
        first_x = table.column(bench.x_names[0])
        for i, (mean, low, high) in enumerate(zip(means, mins, maxes)):
            color = bench.styles[i][0] if bench.styles else None
            style = bench.styles[i][1] if bench.styles else None
            ax.plot(first_x, table.column(mean), label=mean, color=color, ls=style)
            lows, highs = table.column(low), table.column(high)
            if all(v is not None for v in lows + highs):
                ax.fill_between(first_x, [float(v) for v in lows], [float(v) for v in highs], alpha=0.15,
                                color=color)
        ax.legend()
        ax.set_xlabel(bench.xlabel or bench.x_names[0])
        ax.set_ylabel(bench.ylabel)
        ax.set_xscale("log" if bench.x_log else "linear")
        ax.set_yscale("log" if bench.y_log else "linear")
        if show_plots:
            plt.show()
        if save_path:
            plt.savefig(os.path.join(save_path, f"{bench.plot_name}.png"))

    def _run(self, bench, save_path, show_plots, print_data, diff_col=False, save_precision=6, **kwargs):
        means, mins, maxes, rows = self._measure(bench, **kwargs)
        full = Table(bench.x_names + means + mins + maxes, rows)
        if bench.plot_name:
            self._plot(bench, full, means, mins, maxes, show_plots, save_path)
        n_x = len(bench.x_names)
        table = Table(bench.x_names + means, [r[:n_x + len(means)] for r in rows])
        if diff_col and len(table.columns) == 2:  # Triton's rule: only a table of exactly two columns
            table.columns.append("Diff")
            for r in table.rows:
                r.append(None if r[0] is None or r[1] is None else r[1] - r[0])
        if print_data:
            print(bench.plot_name + ":")
            print(table.to_string())
        if save_path:
            os.makedirs(save_path, exist_ok=True)
            with open(os.path.join(save_path, f"{bench.plot_name}.csv"), "w", newline="") as f:
                writer = csv.writer(f)
                writer.writerow(table.columns)
                for r in table.rows:
                    writer.writerow([f"{v:.{save_precision}f}" if isinstance(v, float) else ("" if v is None else v)
                                     for v in r])
        return table

    def run(self, show_plots=False, print_data=False, save_path="", return_df=False, **kwargs):
        """Measures every benchmark; print_data prints each table, save_path writes
        <plot_name>.csv (and .png with matplotlib) there plus results.html; return_df returns
        the table(s) (pandas DataFrames when pandas is installed)."""
        single = isinstance(self.benchmarks, Benchmark)
        benchmarks = [self.benchmarks] if single else list(self.benchmarks)
        tables = []
        try:
            for bench in benchmarks:
                tables.append(self._run(bench, save_path, show_plots, print_data, **kwargs))
        finally:
            if save_path:
                os.makedirs(save_path, exist_ok=True)
                with open(os.path.join(save_path, "results.html"), "w") as html:
                    html.write("<html><body>\n")
                    for bench in benchmarks[:len(tables)]:
                        html.write(f"<image src=\"{bench.plot_name}.png\"/>\n")
                    html.write("</body></html>\n")
        if not return_df:
            return None
        tables = [_as_data_frame(t) for t in tables]
        return tables[0] if single else tables


def _as_data_frame(table):
    try:
        import pandas as pd
    except ImportError:
        return table
    return pd.DataFrame(table.rows, columns=table.columns)


def perf_report(benchmarks):
    """Decorator: marks a benchmark function (its arguments: the x_names, line_arg and args of
    each Benchmark); returns a Mark whose .run() measures and reports."""
    return lambda fn: Mark(fn, benchmarks)


__all__ = ["Benchmark", "Mark", "Table", "assert_close", "do_bench", "do_bench_cudagraph", "perf_report", "quantile",
           "summarize"]
