"""The disk cache with cubins and the autotuner on a GPU: a new process loads
the cached cubin (no compile, no PTX JIT) and computes the right thing; the
C++ API (examples/vector_add) shares the cache; autotuning times real
configs, launches the winner, persists it for the next process, and honours
reset_to_zero / restore_value; the fast launch path handles dtypes, grids
and repeated keys."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402
import tessera.language as tl  # noqa: E402
from gpu_helpers import assert_rel_err, poisoned  # noqa: E402
from kernels.vector_add import add_kernel  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("TESSERA_BUILD_DIR", ROOT / "build"))
if not BUILD.is_absolute():
    BUILD = ROOT / BUILD

CHILD = r"""
import json, sys
sys.path[:0] = [ROOT + "/python", ROOT]
import torch, tessera
from kernels.vector_add import add_kernel
n = 100_000
x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
out = torch.full((n,), float("nan"), device="cuda")
add_kernel[(tessera.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024)
torch.cuda.synchronize()
print(json.dumps({"ok": bool(torch.equal(out, x + y)), "stats": tessera._C.cache_stats()}))
"""


def child(cache_dir, code=CHILD, **extra_env):
    env = dict(os.environ, TESSERA_CACHE_DIR=str(cache_dir), **extra_env)
    proc = subprocess.run([sys.executable, "-c", f"ROOT = {str(ROOT)!r}\n" + code], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def test_a_new_process_loads_the_cached_cubin(tmp_path, monkeypatch):
    first, _ = child(tmp_path)
    assert first["ok"] and first["stats"]["stores"] >= 1 and first["stats"]["hits"] == 0
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    (listed,) = tessera._C.cache_list()
    arch = tessera._C.device_properties(0)["arch"]
    mode = tessera._C.jit_mode()  # the default: ptxas where one is found (tags sm_90/ptxas13.0.88), else whole
    compiler = "/ptxas" + mode.split()[1] if mode.startswith("ptxas ") else "/cuda"
    assert any(tag.startswith(arch + compiler) for tag in listed["entry"]["cubins"]), (mode, listed["entry"]["cubins"])
    second, _ = child(tmp_path)
    assert second["ok"] and second["stats"]["hits"] == 1 and second["stats"]["stores"] == 0


def test_a_warm_start_spawns_nothing_and_only_loads_the_module(tmp_path):
    """A new process with a warm cache compiles nothing and runs no ptxas, not even `ptxas --version`
    for the cubin's tag (remembered in DIR/tools/); its steps (tessera._C.step_times) show it."""
    code = CHILD.replace('"stats": tessera._C.cache_stats()',
                         '"stats": tessera._C.cache_stats(), "steps": tessera._C.step_times()')
    mode = tessera._C.jit_mode()  # "ptxas 13.0.88 (/usr/local/cuda/bin/ptxas)", "whole" or "link"
    log = tmp_path / "ptxas.log"
    env = {}
    if mode.startswith("ptxas "):
        wrapper = tmp_path / "ptxas"
        wrapper.write_text(f"#!/bin/sh\necho \"$@\" >> {log}\nexec {mode[mode.index('(') + 1:-1]} \"$@\"\n")
        wrapper.chmod(0o755)
        env["TESSERA_PTXAS"] = str(wrapper)
    cache = tmp_path / "cache"
    first, _ = child(cache, code, **env)
    cold_log = log.read_text() if log.exists() else ""
    second, _ = child(cache, code, **env)
    assert first["ok"] and second["ok"] and second["stats"]["hits"] == 1
    assert first["steps"]["compile"] > 0
    steps = second["steps"]
    assert steps["compile"] == 0 and steps["assemble"] == 0 and steps["module_load"] > 0, steps
    if mode.startswith("ptxas "):
        assert "--version" in cold_log and "-arch=" in cold_log, cold_log
        assert log.read_text() == cold_log, "the warm process ran ptxas: " + log.read_text()[len(cold_log):]


def test_a_corrupt_cubin_entry_is_rebuilt_on_the_gpu(tmp_path):
    child(tmp_path)
    (path,) = list((tmp_path / "kernels").rglob("*.tsc"))
    data = path.read_bytes()
    path.write_bytes(data[:-20] + bytes(b ^ 0xFF for b in data[-20:]))  # inside the cubin
    out, err = child(tmp_path)
    assert out["ok"] and out["stats"]["corrupt"] == 1 and "is corrupt" in err


def test_the_cpp_api_shares_the_cache(tmp_path, monkeypatch):
    example = BUILD / "examples" / "vector_add"
    if not example.exists():
        pytest.skip(f"{example} is not built")
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    for _ in range(2):
        proc = subprocess.run([str(example)], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0 and "PASS" in proc.stdout, proc.stdout + proc.stderr
    listed = tessera._C.cache_list()
    assert listed and all(e["entry"]["cubins"] for e in listed), listed


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_fast_launch_path_dtypes_and_grids(dtype):
    n = 70_001
    x, y = torch.randn(n, device="cuda", dtype=dtype), torch.randn(n, device="cuda", dtype=dtype)
    for grid in [(tessera.cdiv(n, 1024),), lambda meta: (tessera.cdiv(n, meta["BLOCK_SIZE"]),)]:
        for _ in range(3):  # the first compiles, the next take the last-key shortcut
            out = poisoned(n, dtype)
            add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024)
            torch.testing.assert_close(out, x + y, rtol=0, atol=0)
    # Another key in between (an unaligned view changes the :16 hint) and back.
    out = poisoned(n - 1, dtype)
    add_kernel[(tessera.cdiv(n, 1024),)](x[1:], y[1:], out, n - 1, BLOCK_SIZE=1024)
    torch.testing.assert_close(out, x[1:] + y[1:], rtol=0, atol=0)
    out = poisoned(n, dtype)
    add_kernel[(tessera.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024)
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)
    fast, full = add_kernel._get_handle()._launch_keys((x, y, out, n), {"BLOCK_SIZE": 1024})
    assert fast == full


def test_cpu_tensors_still_get_the_clear_error():
    x = torch.randn(16)
    with pytest.raises(TypeError, match="is a CPU tensor"):
        add_kernel[(1,)](x, x, x, 16, BLOCK_SIZE=16)


@tessera.jit
def accumulate_kernel(x_ptr, acc_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(acc_ptr + offs, tl.load(acc_ptr + offs, mask=mask) + tl.load(x_ptr + offs, mask=mask), mask=mask)


CONFIGS = [tessera.Config({"BLOCK": b}, num_warps=w) for b, w in ((256, 2), (1024, 4), (4096, 8))]


def grid_of(n):
    return lambda meta: (tessera.cdiv(n, meta["BLOCK"]),)


def test_autotune_times_real_configs_and_restores_values(tmp_path, monkeypatch):
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    tuned = tessera.autotune(configs=CONFIGS, key=["n"], restore_value=["acc_ptr"])(accumulate_kernel)
    n = 1 << 22
    x, acc = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    expected = acc + x
    tuned[grid_of(n)](x, acc, n)
    torch.testing.assert_close(acc, expected)  # benchmarking ran the kernel many times; restored
    assert tuned.best_config in CONFIGS and tuned.bench_count == 3
    assert all(ms is not None and ms > 0 for ms in tuned.configs_timings.values())
    (result,) = [json.loads(p.read_text()) for p in (tmp_path / "autotune").glob("*.json")]
    assert result["device"] == tessera._C.device_properties(0)["name"] and len(result["timings"]) == 3


def test_autotune_reset_to_zero_and_a_second_process(tmp_path):
    code = r"""
import json, sys
sys.path[:0] = [ROOT + "/python", ROOT, ROOT + "/tests/gpu"]
import torch, tessera
import test_cache_autotune as m
tuned = tessera.autotune(configs=m.CONFIGS, key=["n"], reset_to_zero=["acc_ptr"])(m.accumulate_kernel)
n = 1 << 20
x, acc = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
tuned[m.grid_of(n)](x, acc, n)
torch.cuda.synchronize()
print(json.dumps({"ok": bool(torch.equal(acc, x)) if tuned.bench_count else None,
                  "bench_count": tuned.bench_count, "best": str(tuned.best_config)}))
"""
    first, _ = child(tmp_path, code)
    assert first["bench_count"] == 3 and first["ok"], first  # zeroed before each run, then x once more
    second, _ = child(tmp_path, code)
    assert second["bench_count"] == 0 and second["best"] == first["best"]


def test_autotune_skips_a_config_that_cannot_compile(tmp_path, monkeypatch):
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    configs = CONFIGS[:2] + [tessera.Config({"BLOCK": 1024}, num_warps=64)]  # more than 32 warps: refused
    tuned = tessera.autotune(configs=configs, key=["n"], restore_value=["acc_ptr"])(accumulate_kernel)
    n = 1 << 16
    x, acc = torch.randn(n, device="cuda"), torch.zeros(n, device="cuda")
    tuned[grid_of(n)](x, acc, n)
    assert tuned.best_config in configs[:2]
    assert "num_warps" in tuned.failures[configs[2]]
    torch.testing.assert_close(acc, x)  # the final launch after tuning starts from the user's acc
