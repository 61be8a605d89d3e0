"""tessera.testing, Triton's triton.testing API: do_bench's run counts, L2 flushes and gradient
resets against a stand-in torch with a virtual clock; argument checks; the statistics;
perf_report / Benchmark tables, CSV and results.html without matplotlib or pandas; assert_close."""
import sys
import types

import numpy as np
import pytest

import tessera
import tessera.testing as tt


class VirtualTorch:
    """torch as do_bench uses it (torch.cuda.Event / synchronize, torch.empty), on a clock that
    advances only when the benchmarked function says so."""

    def __init__(self):
        self.now = 0.0
        self.buffers = []
        self.zeroed = 0
        clock = self

        class Event:
            def __init__(self, enable_timing=False):
                assert enable_timing
                self.t = None

            def record(self):
                self.t = clock.now

            def elapsed_time(self, end):
                return end.t - self.t

        class Buffer:
            def __init__(self, n, dtype, device):
                self.n, self.dtype, self.device = n, dtype, device

            def zero_(self):
                clock.zeroed += 1

        def empty(n, dtype=None, device=None):
            buf = Buffer(n, dtype, device)
            clock.buffers.append(buf)
            return buf

        self.module = types.ModuleType("torch")
        self.module.int = "int32"
        self.module.empty = empty
        self.module.cuda = types.SimpleNamespace(Event=Event, synchronize=lambda: None)


@pytest.fixture
def virtual_torch(monkeypatch):
    fake = VirtualTorch()
    monkeypatch.setitem(sys.modules, "torch", fake.module)
    return fake


def test_do_bench_runs_for_the_asked_milliseconds(virtual_torch):
    calls = []

    def fn():
        calls.append(virtual_torch.now)
        virtual_torch.now += 0.5

    ms = tt.do_bench(fn, warmup=25, rep=100)
    # once, 5 to estimate 0.5 ms, 25 ms / 0.5 of warm-up, 100 ms / 0.5 timed
    assert len(calls) == 1 + 5 + 50 + 200
    assert ms == pytest.approx(0.5)
    # the L2 flush: one 256 MB int32 buffer on the GPU, zeroed before each estimate run and timed run
    [buf] = virtual_torch.buffers
    assert (buf.n * 4, buf.dtype, buf.device) == (256 << 20, "int32", "cuda")
    assert virtual_torch.zeroed == 5 + 200


def test_do_bench_resets_gradients_before_each_timed_run(virtual_torch):
    x = types.SimpleNamespace(grad="from the caller")
    seen_none = []

    def fn():
        seen_none.append(x.grad is None)
        x.grad = "accumulated"
        virtual_torch.now += 1.0

    tt.do_bench(fn, warmup=10, rep=20, grad_to_none=[x])
    assert seen_none == [False] * (1 + 5 + 10) + [True] * 20


def test_do_bench_returns_quantiles_and_modes(virtual_torch):
    durations = iter([1.0] * 6 + [1.0] * 4 + [1.0, 2.0, 3.0, 4.0])

    def fn():
        virtual_torch.now += next(durations)

    assert tt.do_bench(fn, warmup=4, rep=4, quantiles=[0.0, 0.5, 1.0]) == pytest.approx([1.0, 2.5, 4.0])


def test_do_bench_with_a_zero_time_estimate_does_not_divide_by_zero(virtual_torch):
    calls = []
    assert tt.do_bench(lambda: calls.append(1), warmup=1, rep=1, return_mode="all") == [0.0] * 1000
    assert len(calls) == 1 + 5 + 1000 + 1000


@pytest.mark.parametrize("kwargs, message", [
    ({"return_mode": "average"}, "return_mode must be one of 'min', 'max', 'mean', 'median', 'all'"),
    ({"quantiles": [0.5, 1.5]}, r"quantiles must be in \[0, 1\], got 1.5"),
])
def test_do_bench_checks_its_arguments_before_running(kwargs, message):
    def fn():
        raise AssertionError("must not run")

    with pytest.raises(ValueError, match=message):
        tt.do_bench(fn, **kwargs)
    with pytest.raises(ValueError, match=message):
        tt.do_bench_cudagraph(fn, **kwargs)


def test_summary_statistics():
    times = [4.0, 1.0, 3.0, 2.0]
    assert tt.summarize(times) == 2.5
    assert tt.summarize(times, return_mode="median") == 2.5
    assert tt.summarize(times, return_mode="min") == 1.0
    assert tt.summarize(times, return_mode="max") == 4.0
    assert tt.summarize(times, return_mode="all") == times
    assert tt.summarize(times, quantiles=[0.5]) == 2.5  # one quantile: a number
    assert tt.summarize(times, quantiles=[0.2, 0.8]) == pytest.approx([1.6, 3.4])  # numpy's linear rule
    np.testing.assert_allclose(tt.quantile(times, [0.1, 0.9]), np.quantile(times, [0.1, 0.9]))


# ------------------------------------------------------------------ perf_report / Benchmark

@pytest.fixture
def no_plotting_libraries(monkeypatch):
    for name in ["matplotlib", "matplotlib.pyplot", "pandas"]:
        monkeypatch.setitem(sys.modules, name, None)  # import raises ImportError


def demo_benchmark(**overrides):
    kwargs = dict(x_names=["N", "M"], x_vals=[16, (32, 64)], line_arg="provider", line_vals=["a", "b"],
                  line_names=["A", "B"], ylabel="GB/s", plot_name="demo", args={"scale": 2},
                  styles=[("blue", "-"), ("green", "--")])
    kwargs.update(overrides)
    return tt.Benchmark(**kwargs)


def demo_mark(calls=None, **overrides):
    @tt.perf_report(demo_benchmark(**overrides))
    def bench(N, M, provider, scale):
        if calls is not None:
            calls.append((N, M, provider, scale))
        if provider == "a":
            return float(N * scale)
        return float(M), float(M - 1), float(M + 1)  # (mean, min, max)
    return bench


def test_perf_report_prints_the_table_without_matplotlib(no_plotting_libraries, capsys, tmp_path):
    calls = []
    bench = demo_mark(calls)
    table = bench.run(print_data=True, show_plots=True, save_path=str(tmp_path / "out"), return_df=True)
    assert calls == [(16, 16, "a", 2), (16, 16, "b", 2), (32, 64, "a", 2), (32, 64, "b", 2)]
    assert isinstance(table, tt.Table)
    assert table.columns == ["N", "M", "A (GB/s)", "B (GB/s)"]
    assert table.rows == [[16, 16, 32.0, 16.0], [32, 64, 64.0, 64.0]]
    out = capsys.readouterr()
    assert out.out.splitlines() == [
        "demo:",
        "    N   M   A (GB/s)   B (GB/s)",
        "0  16  16  32.000000  16.000000",
        "1  32  64  64.000000  64.000000",
    ]
    assert "no plot for 'demo' (matplotlib is not installed)" in out.err
    assert (tmp_path / "out" / "demo.csv").read_text().splitlines() == [
        "N,M,A (GB/s),B (GB/s)", "16,16,32.000000,16.000000", "32,64,64.000000,64.000000"]
    assert '<image src="demo.png"/>' in (tmp_path / "out" / "results.html").read_text()


def test_perf_report_runs_a_list_of_benchmarks_and_returns_nothing_by_default(no_plotting_libraries, capsys):
    bench = tt.perf_report([demo_benchmark(plot_name="one"), demo_benchmark(plot_name="two")])(
        lambda N, M, provider, scale: 1.0)
    assert bench.run() is None
    assert capsys.readouterr().out == ""
    tables = bench.run(return_df=True)
    assert [len(t) for t in tables] == [2, 2]


def test_perf_report_diff_column_for_two_columns(no_plotting_libraries):
    bench = tt.perf_report(tt.Benchmark(x_names=["N"], x_vals=[1, 2, 3], line_arg="p", line_vals=["x"],
                                        line_names=["X"], plot_name="", args={}))(
        lambda N, p: None if N == 3 else N * 10.0)  # no measurement for N = 3
    table = bench.run(return_df=True, diff_col=True)
    assert table.columns == ["N", "X ()", "Diff"]
    assert table.rows == [[1, 10.0, 9.0], [2, 20.0, 18.0], [3, None, None]]
    assert table.to_string().splitlines()[-1] == "2  3        NaN        NaN"


def test_benchmark_argument_errors(no_plotting_libraries):
    with pytest.raises(ValueError, match=r"expected 2 values \(N, M\), got \(1, 2, 3\)"):
        demo_mark(x_vals=[(1, 2, 3)]).run()
    with pytest.raises(ValueError, match="2 line_vals but 1 line_names"):
        demo_benchmark(line_names=["A"])
    with pytest.raises(ValueError, match="2 lines but 1 styles"):
        demo_benchmark(styles=[("red", "-")])
    bad = tt.perf_report(demo_benchmark())(lambda **kw: (1.0, 2.0))
    with pytest.raises(ValueError, match=r"returns a number or \(mean, min, max\), got \(1.0, 2.0\)"):
        bad.run()


# ------------------------------------------------------------------ assert_close

def test_assert_close():
    tt.assert_close(np.array([1.0, 2.0, np.nan]), np.array([1.005, 2.0, np.nan]))  # atol 1e-2 by default
    tt.assert_close(1.0, 1.001)
    tt.assert_close([1.0, 2.0], [1.5, 2.5], atol=lambda dtype: 0.5)
    tt.assert_close(np.float32(100), np.float32(101), atol=0, rtol=0.01)
    with pytest.raises(AssertionError, match=r"scalar check 1.0 is not close to 2.0 \(atol=0.01, rtol=0.0\)"):
        tt.assert_close(1.0, 2.0, err_msg="scalar check")
    with pytest.raises(AssertionError, match="Mismatched elements: 1 / 2"):
        tt.assert_close(np.array([1.0, 2.0]), np.array([1.0, 3.0]))


def test_tessera_testing_is_exported():
    assert tessera.testing is tt
    assert set(["do_bench", "do_bench_cudagraph", "perf_report", "Benchmark", "assert_close"]) <= set(tt.__all__)
