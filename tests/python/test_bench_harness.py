"""bench/harness.py's timing on the CPU: a fake torch (events that read a clock the
timed fns advance, a log of what ran in which order) stands in for CUDA, so the
interleaved rounds, their rotation, the statistics and the error handling of
bench_interleaved and run_benchmark are checked without a GPU."""
import argparse
import sys
import types

import pytest

from conftest import load_bench_module


harness = load_bench_module("harness.py", "bench_harness")


class FakeGpu:
    """The clock is in ms; a timed fn advances it by its duration. log: what happened, in order."""

    def __init__(self):
        self.clock = 0.0
        self.log = []

    def torch(self):
        gpu = self

        class Event:
            def __init__(self, enable_timing=False):
                self.t = None

            def record(self):
                self.t = gpu.clock
                gpu.log.append(("record",))

            def elapsed_time(self, end):
                assert self.t is not None and end.t is not None, "an event read that was never recorded"
                return end.t - self.t

        def synchronize(device=None):
            gpu.log.append(("sync",))

        cuda = types.SimpleNamespace(Event=Event, synchronize=synchronize, empty_cache=lambda: None)
        return types.SimpleNamespace(cuda=cuda)

    def fn(self, name, ms, fail_at=None):
        """A provider's callable taking ms; raises on its fail_at-th call (1-based, warm-up included)."""
        calls = [0]

        def run():
            calls[0] += 1
            if fail_at is not None and calls[0] == fail_at:
                raise RuntimeError(f"{name} broke")
            self.clock += ms
            self.log.append(("run", name))
        return run


@pytest.fixture
def gpu(monkeypatch):
    g = FakeGpu()
    monkeypatch.setitem(sys.modules, "torch", g.torch())
    monkeypatch.setattr(harness, "flush_l2", lambda: g.log.append(("flush",)))
    return g


def timed_runs(log):
    """The names run after the first synchronisation (the warm-ups are before it)."""
    first_sync = log.index(("sync",))
    return [e[1] for e in log[first_sync:] if e[0] == "run"]


def test_rounds_rotate_and_sync_once(gpu):
    fns = {n: gpu.fn(n, ms) for n, ms in (("a", 1.0), ("b", 2.0), ("c", 3.0))}
    t = harness.bench_interleaved(fns, warmup=2, reps=6)
    warm = [e[1] for e in gpu.log[:gpu.log.index(("sync",))] if e[0] == "run"]
    assert warm == ["a", "a", "b", "b", "c", "c"]
    runs = timed_runs(gpu.log)
    rounds = [runs[i:i + 3] for i in range(0, len(runs), 3)]
    assert rounds == [list("abc"), list("bca"), list("cab")] * 2
    # Every timed run: flush, start, run, end; one synchronisation after the warm-ups and one at the end.
    after = gpu.log[gpu.log.index(("sync",)) + 1:]
    assert after[-1] == ("sync",) and ("sync",) not in after[:-1]
    assert [e[0] for e in after[:-1]] == ["flush", "record", "run", "record"] * 18
    assert {n: (s["median_ms"], s["p20_ms"], s["p80_ms"], s["reps"]) for n, s in t.items()} == {
        "a": (1.0, 1.0, 1.0, 6), "b": (2.0, 2.0, 2.0, 6), "c": (3.0, 3.0, 3.0, 6)}


def test_no_flush(gpu):
    harness.bench_interleaved({"a": gpu.fn("a", 1.0)}, warmup=0, reps=3, flush=False)
    assert ("flush",) not in gpu.log


def test_failing_fn_is_dropped_and_the_others_timed(gpu):
    # "b" fails in warm-up, "c" in its third timed run (warm-up 2 + 3).
    fns = {"a": gpu.fn("a", 1.0), "b": gpu.fn("b", 2.0, fail_at=1), "c": gpu.fn("c", 3.0, fail_at=5),
           "d": gpu.fn("d", 4.0)}
    errors = {}
    t = harness.bench_interleaved(fns, warmup=2, reps=5, errors=errors)
    assert sorted(t) == ["a", "d"] and t["a"]["median_ms"] == 1.0 and t["d"]["median_ms"] == 4.0
    assert t["a"]["reps"] == t["d"]["reps"] == 5
    assert errors == {"b": "RuntimeError: b broke", "c": "RuntimeError: c broke"}
    runs = timed_runs(gpu.log)
    assert "b" not in runs and runs.count("c") == 2 and runs.count("a") == runs.count("d") == 5


def test_errors_propagate_without_an_errors_dict(gpu):
    with pytest.raises(RuntimeError, match="a broke"):
        harness.bench_interleaved({"a": gpu.fn("a", 1.0, fail_at=2)}, warmup=1, reps=3)


def test_bench_still_times_one_fn(gpu):
    t = harness.bench(gpu.fn("a", 2.5), warmup=3, reps=4)
    assert (t["median_ms"], t["reps"]) == (2.5, 4)
    assert timed_runs(gpu.log) == ["a"] * 4


def test_run_benchmark_rows(gpu, monkeypatch, tmp_path):
    monkeypatch.setattr(harness, "device_description", lambda: "fake GPU")

    def build_fails(x):
        raise ValueError("no kernel")

    providers = {"fast": lambda x: gpu.fn("fast", 1.0), "slow": lambda x: gpu.fn("slow", 2.0),
                 "wrong": lambda x: gpu.fn("wrong", 1.0), "nobuild": build_fails,
                 "flaky": lambda x: gpu.fn("flaky", 1.0, fail_at=3), "unwanted": lambda x: gpu.fn("unwanted", 1.0)}

    def check(x, provider, fn):
        if provider == "wrong":
            raise AssertionError("wrong: relative error 1e+00")

    options = argparse.Namespace(providers="fast,slow,wrong,nobuild,flaky", reps=4, warmup=1, out=str(tmp_path))
    results = harness.run_benchmark("fake", [("case 1", lambda: {})], providers, lambda x: 1e9, options, check)
    (row,) = results["rows"]
    assert row["ms"] == {"fast": 1.0, "slow": 2.0}
    assert row["gbps"] == {"fast": pytest.approx(1000.0), "slow": pytest.approx(500.0)}
    assert row["errors"] == {"wrong": "AssertionError: wrong: relative error 1e+00",
                             "nobuild": "ValueError: no kernel", "flaky": "RuntimeError: flaky broke"}
    # Interleaved: the first timed round runs every provider that passed its check.
    assert timed_runs(gpu.log)[:3] == ["fast", "slow", "flaky"] and "unwanted" not in timed_runs(gpu.log)
    assert (tmp_path / "fake.json").exists()
