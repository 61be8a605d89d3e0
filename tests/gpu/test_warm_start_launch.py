"""A kernel whose constexprs may take @jit functions (kernels/softmax.py's PROLOGUE/EPILOGUE) launched
through its guarded C++ launcher (python/bindings/FastLaunch.cpp): plain arguments go straight to
C++, a function among them to Python, which composes; the two alternate on one kernel and each gives
the right softmax. And a warm start in a new process (its kernel in the disk cache): the source entry
and the cubin come from the cache (one disk hit, no compile) and the result is right."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402
from kernels.softmax import softmax_kernel  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]


@tessera.jit
def halve(x, row, cols):
    return x * 0.5


def launch(y, x, **fused):
    rows, cols = x.shape
    softmax_kernel[(rows,)](y, x, x.stride(0), y.stride(0), rows, cols, BLOCK_SIZE=triton_next_pow2(cols), **fused)
    return y


def triton_next_pow2(n):
    return 1 << (n - 1).bit_length()


def test_plain_and_composed_launches_alternate_on_one_kernel():
    x = torch.randn((77, 300), device="cuda")
    y = torch.empty_like(x)
    plain = torch.softmax(x.double(), dim=1)
    halved = torch.softmax(x.double() * 0.5, dim=1)
    for fused, want in [({}, plain), ({"PROLOGUE": halve}, halved), ({"PROLOGUE": None}, plain),
                        ({"PROLOGUE": halve}, halved), ({}, plain)]:
        y.zero_()
        launch(y, x, **fused)
        torch.cuda.synchronize()
        err = (y.double() - want).abs().max().item()
        assert err < 1e-6, (fused, err)


CHILD = """import json, sys
sys.path[:0] = [{root!r}, {python!r}]
import torch, tessera
from kernels.softmax import softmax_kernel as k
x = torch.randn((64, 1024), device="cuda")
y = torch.empty_like(x)
tessera._C.step_times(reset=True)
k[(64,)](y, x, x.stride(0), y.stride(0), 64, 1024, BLOCK_SIZE=1024)
torch.cuda.synchronize()
err = (y.double() - torch.softmax(x.double(), dim=1)).abs().max().item()
print(json.dumps({{"err": err, "hits": tessera._C.cache_stats()["hits"], "compile": tessera._C.step_times()["compile"],
                  "reduced": "tessera._source" in sys.modules}}))
"""


def test_a_warm_start_in_a_new_process_hits_and_is_right(tmp_path):
    env = {**os.environ, "TESSERA_CACHE_DIR": str(tmp_path / "cache")}
    code = CHILD.format(root=str(ROOT), python=str(ROOT / "python"))
    runs = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        runs.append(json.loads(proc.stdout.splitlines()[-1]))
    cold, warm = runs
    assert cold["hits"] == 0 and cold["compile"] > 0 and cold["reduced"] and cold["err"] < 1e-6
    assert warm["hits"] == 1 and warm["compile"] == 0 and not warm["reduced"] and warm["err"] < 1e-6
