"""The autotuner's logic without a GPU: a fake timer (autotune(do_bench=...))
stands in for CUDA events, kernels are compiled for sm_90a but never
launched (Autotuner.tune). Covers Triton's semantics (key with dtypes,
pruning, heuristics, failures skipped with a reason, ties to the first
config), and persistence: a second process benchmarks nothing, a changed
config list re-times only new configs, TESSERA_AUTOTUNE=off, and the tuning
database round trip through `tessera tune export` / `import`."""
import json
import os
import subprocess
import sys

import pytest

from conftest import CLI, ROOT

sys.path.insert(0, str(ROOT))

import tessera  # noqa: E402
import tessera.language as tl  # noqa: E402
from tessera.autotune import Autotuner, Config  # noqa: E402


class CudaArray:
    def __init__(self, ptr=1 << 20, typestr="<f4"):
        self.__cuda_array_interface__ = {"data": (ptr, False), "typestr": typestr, "shape": (4096,),
                                         "strides": None, "version": 3}


@tessera.jit
def scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)


CONFIGS = [Config({"BLOCK": 128}, num_warps=4), Config({"BLOCK": 256}, num_warps=4),
           Config({"BLOCK": 512}, num_warps=8), Config({"BLOCK": 1024}, num_warps=8)]
TIMES = {128: 0.9, 256: 0.4, 512: 0.3, 1024: 0.7}


class FakeTimer:
    """do_bench stand-in: a time per BLOCK, and a log of what was timed."""

    def __init__(self, times):
        self.times, self.calls = times, []

    def __call__(self, call):
        self.calls.append(call.config)
        return self.times[call.config.kwargs["BLOCK"]]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path / "cache"))
    for v in ("TESSERA_AUTOTUNE", "TESSERA_CACHE", "TESSERA_PRINT_AUTOTUNING"):
        monkeypatch.delenv(v, raising=False)
    return tmp_path / "cache"


def tuner(configs=CONFIGS, times=TIMES, **options):
    timer = FakeTimer(times)
    t = Autotuner(scale_kernel, configs, key=["n"], do_bench=timer, **options)
    return t, timer


def args(n=4096, typestr="<f4"):
    return (CudaArray(typestr=typestr), CudaArray(typestr=typestr), n, 2.0)


def stored(cache):
    files = list((cache / "autotune").glob("*.json"))
    return [json.loads(f.read_text()) for f in files]


def test_the_fastest_config_wins_and_every_timing_is_stored(cache):
    t, timer = tuner()
    best = t.tune(*args(), grid=(1,))
    assert best.kwargs == {"BLOCK": 512} and best.num_warps == 8
    assert [c.kwargs["BLOCK"] for c in timer.calls] == [128, 256, 512, 1024]
    assert t.tune(*args(), grid=(1,)) is best and len(timer.calls) == 4  # in-process cache
    (result,) = stored(cache)
    assert result["kernel"] == "scale_kernel" and result["key"] == [4096, "<f4", "<f4"]
    assert {t["config"]["kwargs"]["BLOCK"]: t["ms"] for t in result["timings"]} == TIMES
    assert result["best"] == {"kwargs": {"BLOCK": 512}, "num_warps": 8, "num_stages": 3}


def test_ties_go_to_the_first_config():
    t, _ = tuner(times={128: 0.5, 256: 0.2, 512: 0.2, 1024: 0.2})
    assert t.tune(*args(), grid=(1,)).kwargs == {"BLOCK": 256}


def test_the_key_has_the_key_arguments_and_the_tensor_dtypes(cache):
    t, timer = tuner()
    t.tune(*args(4096), grid=(1,))
    t.tune(*args(8192), grid=(1,))
    t.tune(*args(4096, typestr="<f2"), grid=(1,))
    assert len(timer.calls) == 12 and len(stored(cache)) == 3


def test_a_key_entry_can_bucket_its_argument(cache):
    """key=[("n", f)]: arguments with the same f(n) share one tuning (tessera extension)."""
    def pow2(n):
        return 1 << (n - 1).bit_length()
    timer = FakeTimer(TIMES)
    t = Autotuner(scale_kernel, CONFIGS, key=[("n", pow2)], do_bench=timer)
    t.tune(*args(3000), grid=(1,))
    t.tune(*args(4096), grid=(1,))
    assert len(timer.calls) == 4
    t.tune(*args(4097), grid=(1,))
    assert len(timer.calls) == 8
    results = sorted(stored(cache), key=lambda r: r["key"][0])
    assert [r["key"][0] for r in results] == [4096, 8192]
    assert results[0]["key_names"] == ["n:pow2", "dtypes..."]


def test_failing_configs_are_skipped_with_their_reason(cache):
    configs = CONFIGS + [Config({"BLOCK": 256}, num_warps=3), Config({"BLOCK": 100})]
    t, timer = tuner(configs=configs, times={**TIMES, 100: 0.01})
    assert t.tune(*args(), grid=(1,)).kwargs == {"BLOCK": 512}
    assert len(timer.calls) == 4
    reasons = {str(c): r for c, r in t.failures.items()}
    assert "num_warps must be a power of 2" in reasons["BLOCK: 256, num_warps: 3, num_stages: 3"]
    assert "power of 2" in reasons["BLOCK: 100, num_warps: 4, num_stages: 3"]  # tl.arange(0, 100)
    (result,) = stored(cache)
    assert sum(1 for t in result["timings"] if t["error"]) == 2


def test_every_config_failing_is_an_error(cache):
    t, _ = tuner(configs=[Config({"BLOCK": 100}), Config({"BLOCK": 128}, num_warps=3)])
    with pytest.raises(RuntimeError, match="every autotuning config failed"):
        t.tune(*args(), grid=(1,))


@tessera.jit
def desc_block_copy(desc, out_ptr, BM: tl.constexpr, BN: tl.constexpr):
    x = desc.load([0, 0])
    tl.store(out_ptr + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], x)


class Base:
    """What a TensorDescriptor needs of its tensor."""
    dtype = "torch.bfloat16"

    def data_ptr(self):
        return 1 << 20


def test_each_config_compiles_after_its_pre_hook(cache):
    """A pre_hook that changes what an argument specialises to (a descriptor's block_shape is in the
    signature, tensordesc<bf16[BM,BN]>): each config compiles as its hook leaves the arguments, so
    none fails on the block the descriptor was made with (docs/runtime.md)."""
    def blocks(nargs):
        nargs["desc"].block_shape = (nargs["BM"], nargs["BN"])
    configs = [Config({"BM": bm, "BN": 64}, pre_hook=blocks) for bm in (32, 64, 128)]
    timed = []

    def bench(call):
        timed.append(call.config)
        return {32: 0.3, 64: 0.1, 128: 0.2}[call.config.kwargs["BM"]]
    t = Autotuner(desc_block_copy, configs, key=[], do_bench=bench)
    desc = tessera.TensorDescriptor(Base(), [256, 64], [64, 1], [128, 64])
    assert t.tune(desc, CudaArray(), grid=(1,)) is configs[1]
    assert not t.failures, t.failures
    assert timed == configs


def test_pruning_by_early_prune_and_perf_model(cache):
    seen = {}

    def early(configs, named_args, **kwargs):
        seen["n"] = named_args["n"]
        return [c for c in configs if c.kwargs["BLOCK"] >= 256]

    def model(**kw):
        return {256: 3.0, 512: 1.0, 1024: 2.0}[kw["BLOCK"]]
    t, timer = tuner(prune_configs_by={"early_config_prune": early, "perf_model": model, "top_k": 2})
    assert t.tune(*args(), grid=(1,)).kwargs == {"BLOCK": 512}
    assert seen["n"] == 4096
    assert sorted(c.kwargs["BLOCK"] for c in timer.calls) == [512, 1024]


def test_heuristics_add_meta_parameters():
    h = tessera.heuristics({"BLOCK": lambda a: tessera.next_power_of_2(a["n"]) // 4})(scale_kernel)
    compiled = h.warmup(*args(1000), grid=(1,))
    assert compiled.metadata.constexprs == {"BLOCK": 256}
    t = Autotuner(h, [Config({}, num_warps=4), Config({}, num_warps=8)], key=["n"],
                  do_bench=lambda call: {4: 0.2, 8: 0.1}[call.config.num_warps])
    assert t.tune(*args(1000), grid=(1,)).num_warps == 8


def test_passing_a_tuned_parameter_is_an_error():
    t, _ = tuner()
    with pytest.raises(ValueError, match="'BLOCK' is set by the autotuner"):
        t.tune(*args(), grid=(1,), BLOCK=64)


def test_a_tuned_launch_builds_no_config_dicts(monkeypatch):
    # Every launch asks tune(): with the key known, it is a lookup. The check that no keyword is one
    # the configs set used to build each config's all_kwargs() dict once per keyword (fla's launches:
    # ~20 keywords, 12 configs, most of their host time); it reads one set of names now.
    t, _ = tuner()
    x, out, n, factor = args()
    first = t.tune(x_ptr=x, out_ptr=out, n=n, factor=factor, grid=(1,))
    calls = []
    real = Config.all_kwargs
    monkeypatch.setattr(Config, "all_kwargs", lambda self: calls.append(self) or real(self))
    assert t.tune(x_ptr=x, out_ptr=out, n=n, factor=factor, grid=(1,)) is first
    assert calls == []
    with pytest.raises(ValueError, match="'num_warps' is set by the autotuner"):
        t.tune(x_ptr=x, out_ptr=out, n=n, factor=factor, grid=(1,), num_warps=4)


SECOND_PROCESS = r"""
import json, sys
sys.path[:0] = [ROOT + "/python", ROOT + "/tests/python"]
import test_autotune_persistence as m
t, timer = m.tuner(configs=CONFIGS_EXPR)
best = t.tune(*m.args(), grid=(1,))
print(json.dumps({"best": best.kwargs, "benchmarked": [c.kwargs["BLOCK"] for c in timer.calls],
                  "bench_count": t.bench_count}))
"""


def in_new_process(configs_expr="m.CONFIGS", **env):
    code = f"ROOT = {str(ROOT)!r}\n" + SECOND_PROCESS.replace("CONFIGS_EXPR", configs_expr)
    proc = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, **env), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def test_a_second_process_benchmarks_nothing(cache):
    first, _ = in_new_process()
    assert first["best"] == {"BLOCK": 512} and first["benchmarked"] == [128, 256, 512, 1024]
    second, err = in_new_process(TESSERA_PRINT_AUTOTUNING="1")
    assert second == {"best": {"BLOCK": 512}, "benchmarked": [], "bench_count": 0}
    assert "none benchmarked" in err


def test_a_changed_config_list_times_only_the_new_configs(cache):
    in_new_process()
    # One config dropped, one added (with its fake time): only the new one is timed.
    out, _ = in_new_process("(m.TIMES.update({2048: 0.1}) or m.CONFIGS[1:]) + [m.Config({'BLOCK': 2048}, num_warps=8)]")
    assert out["benchmarked"] == [2048] and out["best"] == {"BLOCK": 2048}
    (result,) = stored(cache)
    assert sorted(t["config"]["kwargs"]["BLOCK"] for t in result["timings"]) == [128, 256, 512, 1024, 2048]


def test_autotune_off_uses_the_stored_winner_else_the_first(cache):
    out, _ = in_new_process(TESSERA_AUTOTUNE="off")
    assert out == {"best": {"BLOCK": 128}, "benchmarked": [], "bench_count": 0}
    in_new_process()
    out, _ = in_new_process(TESSERA_AUTOTUNE="off")
    assert out["best"] == {"BLOCK": 512} and out["benchmarked"] == []


def tune_cli(*args, **env):
    return subprocess.run([str(CLI), "tune", *args], env=dict(os.environ, **env), capture_output=True, text=True,
                          timeout=120)


def test_the_tuning_database_round_trips_through_the_cli(cache, tmp_path):
    in_new_process()
    db = tmp_path / "tuning.json"
    out = tune_cli("export", str(db))
    assert out.returncode == 0 and "exported 1 tuning result" in out.stdout, out.stdout + out.stderr
    exported = json.loads(db.read_text())
    assert exported["format"] == "tessera-tuning-db-1" and len(exported["entries"]) == 1
    assert subprocess.run([str(CLI), "cache", "clear", "--all"], capture_output=True, text=True).returncode == 0
    assert not stored(cache)
    out = tune_cli("import", str(db))
    assert out.returncode == 0 and "imported 1 tuning result" in out.stdout, out.stdout + out.stderr
    assert stored(cache)[0]["timings"] == exported["entries"][0]["timings"]
    again, _ = in_new_process()
    assert again["bench_count"] == 0 and again["best"] == {"BLOCK": 512}
    out = tune_cli("export", str(tmp_path / "again.json"))
    assert json.loads((tmp_path / "again.json").read_text())["entries"] == exported["entries"]
    listed = tune_cli("list")
    assert "scale_kernel" in listed.stdout and "BLOCK: 512" in listed.stdout


def test_importing_garbage_is_a_clear_error(cache, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "something else"}))
    out = tune_cli("import", str(bad))
    assert out.returncode == 1 and "is not a tessera tuning database" in out.stderr


@pytest.mark.skipif(tessera.driver_available(), reason="a GPU is present")
def test_tuning_without_a_gpu_says_so(cache):
    out = tune_cli(str(ROOT / "kernels" / "vector_add.py"), "--kernel", "add_kernel", "--arg", "n_elements=4096",
                   "--grid", "(4,)", "--config", "BLOCK_SIZE=1024")
    assert out.returncode == 2
    assert "needs a CUDA GPU, and this machine has none" in out.stderr and "export" in out.stderr
