"""torch.compile on tessera (docs/torch-compile.md) on a real GPU: a small MLP (bias, GELU,
LayerNorm) compiled forward + backward in the process-wide compatibility mode, with Inductor's
compile workers and without them, and with CUDA graphs, and an AdamW training step with workers
(the optimizer's foreach kernels); the results against eager, every kernel
compiled by tessera, nothing imported from the installed Triton and nothing in Triton's cache.
Each case runs in a process of its own (the mode must be on before torch imports triton).
bench/torch_compile.py measures bigger models against stock torch.compile."""
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT

CHILD = r"""
import json, os, pathlib, sys, time
sys.path.insert(0, ROOT + "/python")
real = None
for entry in sys.path:
    p = pathlib.Path(entry or ".") / "triton" / "__init__.py"
    if p.is_file():
        real = str(p.parent.resolve())
        break
import tessera.compat
tessera.compat.install(process_wide=True)
import torch, torch.nn as nn, torch.nn.functional as F
import torch._inductor.config as cfg
for option in ("use_static_cuda_launcher", "use_static_triton_launcher"):  # by release
    if hasattr(cfg, option):
        setattr(cfg, option, False)
cfg.compile_threads = THREADS
import triton
from tessera import _compose
reduced, reduce = [], _compose.kernel_source_and_dependencies
_compose.kernel_source_and_dependencies = lambda fn, *more: reduced.append(fn.__name__) or reduce(fn, *more)
calls, hits = [], []
original = triton.compile
def counted(*a, **k):
    r = original(*a, **k)
    calls.append((a[0].name, type(r).__module__))
    hits.append(bool(getattr(getattr(getattr(r, "_compiled", None), "_h", None), "from_cache", False)))
    return r
triton.compile = counted
torch.manual_seed(0)
class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.norm = nn.Linear(256, 1024), nn.Linear(1024, 256), nn.LayerNorm(256)
    def forward(self, x):
        return self.norm(self.fc2(F.gelu(self.fc1(x))))
torch.backends.cuda.matmul.allow_tf32 = False
m = MLP().cuda()
x = torch.randn(512, 256, device="cuda", requires_grad=True)
g = torch.randn(512, 256, device="cuda")
def run(fn):
    for p in m.parameters():
        p.grad = None
    x.grad = None
    if MODE == "reduce-overhead":
        torch.compiler.cudagraph_mark_step_begin()
    out = fn(x)
    out.backward(g)
    return [out.detach().clone(), x.grad.clone()] + [p.grad.clone() for p in m.parameters()]
if MODE == "train":  # an AdamW training step: Inductor's foreach (combo) kernels for the optimizer
    import copy
    twin = copy.deepcopy(m)
    opts = [torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1) for model in (m, twin)]
    def step(model, opt):
        loss = F.mse_loss(model(x.detach()), g)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss
    compiled_step = torch.compile(lambda: step(twin, opts[1]))
    for _ in range(3):
        step(m, opts[0])
        compiled_step()
    want, got = [p.detach() for p in m.parameters()], [p.detach() for p in twin.parameters()]
else:
    want = run(m)
    cm = torch.compile(m, mode=None if MODE == "default" else MODE)
    for _ in range(3):
        got = run(cm)
torch.cuda.synchronize()
err = max(((a - b).abs() / (1e-3 + 1e-3 * b.abs())).max().item() for a, b in zip(got, want))
leaked = [n for n, mod in list(sys.modules.items()) if real and str(getattr(mod, "__file__", None) or "").startswith(real)]
tc = os.environ["TRITON_CACHE_DIR"]
triton_files = sum(len(f) for _, _, f in os.walk(tc)) if os.path.isdir(tc) else 0
tess = sum(1 for _, _, fs in os.walk(os.environ["TESSERA_CACHE_DIR"]) for f in fs if f.endswith(".tsc"))
from torch._dynamo.utils import counters
skips = sum(v for k, v in counters["inductor"].items() if "cudagraph_skip" in k)
print(json.dumps({"err": err, "calls": calls, "leaked": leaked, "triton_files": triton_files,
                  "tessera_kernels": tess, "cudagraph_skips": skips, "hits": hits, "reduced": reduced,
                  "compile_ms": tessera._C.step_times()["compile"]}))
"""


def run_case(tmp_path, mode, threads):
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"),
               TRITON_CACHE_DIR=str(tmp_path / "triton"), TESSERA_CACHE_DIR=str(tmp_path / "tessera"))
    env.pop("TESSERA_AS_TRITON", None)
    code = CHILD.replace("ROOT", repr(str(ROOT))).replace("THREADS", str(threads)).replace("MODE", repr(mode))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-6000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("mode,threads", [("default", 1), ("default", 4), ("reduce-overhead", 1), ("train", 4)])
def test_torch_compile_runs_on_tessera(tmp_path, mode, threads):
    pytest.importorskip("torch._inductor")
    r = run_case(tmp_path, mode, threads)
    assert r["err"] <= 1.0, r
    assert not r["leaked"] and r["triton_files"] == 0, r  # nothing reached the installed Triton
    assert r["tessera_kernels"] > 0, r  # compiled by tessera (in workers too)
    if threads == 1:  # in this process: each triton.compile call seen
        assert r["calls"] and all(m.startswith("tessera.") for _, m in r["calls"]), r
    if mode == "reduce-overhead":
        assert r["cudagraph_skips"] == 0, r


def test_a_warm_start_compiles_nothing(tmp_path):
    """A new process on the caches a first one filled: Inductor (FX graph cache hit, no static
    launcher) calls triton.compile again for each kernel, and each call is a hit of tessera's
    caches: no source reduced (the composed text is remembered with the triton_helpers it read),
    nothing compiled (the PTX and cubin are in the kernel's entry)."""
    pytest.importorskip("torch._inductor")
    cold = run_case(tmp_path, "default", 1)
    assert cold["calls"] and cold["reduced"] and cold["compile_ms"] > 0, cold
    warm = run_case(tmp_path, "default", 1)
    assert warm["err"] <= 1.0, warm
    assert warm["calls"] and all(warm["hits"]), warm  # (zero calls: Inductor loaded them another way)
    assert warm["reduced"] == [] and warm["compile_ms"] == 0, warm
