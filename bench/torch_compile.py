"""torch.compile on tessera against stock torch.compile (Triton), on a GPU (docs/torch-compile.md).

Models, each compiled forward + backward:
  mlp     Linear(bias) -> GELU -> Linear(bias) -> LayerNorm, fp32
  llama   one Llama decoder layer built from a transformers LlamaConfig with random weights, bf16
          (nothing is downloaded; without transformers, an equivalent block written here: RMSNorm,
          GQA attention with RoPE through SDPA, SwiGLU MLP, and the report says so)
  train   a training step: embedding -> 2 MLP blocks -> LayerNorm -> LM head, cross-entropy,
          loss.backward(), AdamW step, fp32 (the step function is compiled)
Modes: default and max-autotune-no-cudagraphs; and reduce-overhead (CUDA graphs) checked apart.

Every measurement runs in a process of its own (the process-wide mode must be on before torch
imports triton; caches must be cold or warm on purpose), with its own cache folders
(TORCHINDUCTOR_CACHE_DIR, TRITON_CACHE_DIR, TESSERA_CACHE_DIR):
  compile   cold caches, compile_threads=1: every triton.compile call timed and counted, summed
            per compiler (PTX to cubin included: Triton's compile and tessera's both run ptxas);
            CompiledKernel._init_handles timed apart (loading; the static launcher stock uses
            loads without it); for tessera, also that each returned tessera's kernel and that no
            module of the installed Triton was imported, and where its calls spent their time
            (source: reading and reducing kernel files; compile: the C++ compile or cache hit;
            ptxas), printed after the compile sum (also for warm)
  cold      cold caches, Inductor's default compile workers: the first call (forward + backward,
            or the first training step) in wall time; outputs and gradients saved
  warm      a new process on the caches `cold` filled: the first call again, then the steady-state
            step time (median of rounds) and the outputs
  graphs    mode="reduce-overhead": first call, steady state, cudagraph skips, outputs
After each tessera process: files in its Triton cache folder (none: nothing reached Triton) and
tessera kernel cache entries (kernels compiled, workers included).

    python3 bench/torch_compile.py [--quick] [--models mlp,llama,train]
        [--modes default,max-autotune-no-cudagraphs] [--measure compile,cold,warm,graphs]
        [--providers stock,tessera] [--out DIR] [--json FILE] [--timeout S]

--quick: smaller models, the default mode only, compile + warm (the warm process starts on the caches
the compile process filled), fewer timing rounds. Each part that fails prints one line saying
which and why, and the rest goes on. Every measurement prints a line when it ends (with its time:
a cold stock process of a full model takes about a minute); to stay within a time limit, run parts
(--models mlp --modes default --measure compile,warm) and add --json to keep the numbers.
Comparisons need both providers in the same invocation.
"""
import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

ROOT = pathlib.Path(__file__).resolve().parents[1]

MODELS = ("mlp", "llama", "train")
MODES = ("default", "max-autotune-no-cudagraphs")
MEASURES = ("compile", "cold", "warm", "graphs")
PROVIDERS = ("stock", "tessera")
# Relative tolerances of tessera against stock torch.compile, by the model's dtype.
TOLERANCE = {"fp32": (2e-3, 2e-3), "bf16": (4e-2, 4e-2)}


# --- the child process: one measurement -----------------------------------------------------------------

def _real_triton_dir():
    """Where the installed Triton lives (found before the process-wide mode hides it), or None."""
    for entry in sys.path:
        candidate = pathlib.Path(entry or ".") / "triton" / "__init__.py"
        if candidate.is_file() and "_process_wide" not in str(candidate):
            return str(candidate.parent.resolve())
    return None


def _build(torch, model, quick, device="cuda"):
    """(module or step function, inputs, grad_out or None, dtype name, notes)."""
    import torch.nn as nn
    import torch.nn.functional as F
    torch.manual_seed(0)
    notes = []
    if model == "mlp":
        d, h, tokens = (256, 1024, 2048) if quick else (1024, 4096, 8192)

        class MLP(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1, self.fc2, self.norm = nn.Linear(d, h), nn.Linear(h, d), nn.LayerNorm(d)

            def forward(self, x):
                return self.norm(self.fc2(F.gelu(self.fc1(x))))

        m = MLP().to(device)
        x = torch.randn(tokens, d, device=device, requires_grad=True)
        return m, (x,), torch.randn(tokens, d, device=device), "fp32", notes
    if model == "llama":
        hidden, inter, heads, kv, seq, batch = (256, 688, 8, 2, 128, 2) if quick else (1024, 2816, 16, 4, 512, 4)
        try:
            from transformers import LlamaConfig
            from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding
            cfg = LlamaConfig(hidden_size=hidden, intermediate_size=inter, num_attention_heads=heads,
                              num_key_value_heads=kv, max_position_embeddings=4096, rms_norm_eps=1e-5,
                              attn_implementation="sdpa")
            cfg._attn_implementation = "sdpa"

            class Block(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layer = LlamaDecoderLayer(cfg, layer_idx=0)
                    self.rope = LlamaRotaryEmbedding(config=cfg)

                def forward(self, x):
                    pos = torch.arange(x.shape[1], device=x.device)[None].expand(x.shape[0], -1)
                    out = self.layer(x, position_ids=pos, position_embeddings=self.rope(x, pos))
                    return out[0] if isinstance(out, tuple) else out

            m = Block().to(device=device, dtype=torch.bfloat16)
            with torch.no_grad():  # an API this transformers version spells differently fails here, eagerly
                m(torch.zeros(1, 8, hidden, device=device, dtype=torch.bfloat16))
            notes.append(f"llama: transformers LlamaDecoderLayer ({__import__('transformers').__version__})")
        except Exception as e:  # noqa: BLE001
            torch.manual_seed(0)
            m = _handmade_llama_block(torch, hidden, inter, heads, kv)
            notes.append(f"llama: transformers unavailable ({type(e).__name__}: {str(e)[:200]}); an equivalent "
                         "block written here (RMSNorm, GQA attention with RoPE through SDPA, SwiGLU)")
        m = m.to(device=device, dtype=torch.bfloat16)
        x = torch.randn(batch, seq, hidden, device=device, dtype=torch.bfloat16, requires_grad=True)
        return m, (x,), torch.randn(batch, seq, hidden, device=device, dtype=torch.bfloat16), "bf16", notes
    if model == "train":
        vocab, d, h, batch, seq = (1024, 256, 1024, 4, 128) if quick else (8192, 768, 3072, 8, 512)

        class LM(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(vocab, d)
                self.blocks = nn.ModuleList(nn.Sequential(nn.LayerNorm(d), nn.Linear(d, h), nn.GELU(), nn.Linear(h, d))
                                            for _ in range(2))
                self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

            def forward(self, idx):
                x = self.emb(idx)
                for b in self.blocks:
                    x = x + b(x)
                return self.head(self.norm(x))

        m = LM().to(device)
        opt = torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=0.1)
        idx = torch.randint(0, vocab, (batch, seq), device=device)
        target = torch.randint(0, vocab, (batch, seq), device=device)

        def step(idx, target):
            logits = m(idx)
            loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), target.view(-1))
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            return loss

        step.model = m
        return step, (idx, target), None, "fp32", notes
    raise ValueError(f"unknown model {model!r}")


def _handmade_llama_block(torch, hidden, inter, heads, kv):
    import torch.nn as nn
    import torch.nn.functional as F

    class RMSNorm(nn.Module):
        def __init__(self, d, eps=1e-5):
            super().__init__()
            self.weight, self.eps = nn.Parameter(torch.ones(d)), eps

        def forward(self, x):
            y = x.float()
            y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + self.eps)
            return self.weight * y.to(x.dtype)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.hd = hidden // heads
            self.q, self.k = nn.Linear(hidden, hidden, bias=False), nn.Linear(hidden, kv * self.hd, bias=False)
            self.v, self.o = nn.Linear(hidden, kv * self.hd, bias=False), nn.Linear(hidden, hidden, bias=False)
            self.gate, self.up = nn.Linear(hidden, inter, bias=False), nn.Linear(hidden, inter, bias=False)
            self.down = nn.Linear(inter, hidden, bias=False)
            self.n1, self.n2 = RMSNorm(hidden), RMSNorm(hidden)
            inv = 1.0 / (10000 ** (torch.arange(0, self.hd, 2).float() / self.hd))
            self.register_buffer("inv_freq", inv, persistent=False)

        def rope(self, t, cos, sin):
            a, b = t[..., : self.hd // 2], t[..., self.hd // 2:]
            return t * cos + torch.cat((-b, a), -1) * sin

        def forward(self, x):
            B, S, _ = x.shape
            freqs = torch.outer(torch.arange(S, device=x.device).float(), self.inv_freq.float())
            emb = torch.cat((freqs, freqs), -1)
            cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
            h = self.n1(x)
            q = self.q(h).view(B, S, heads, self.hd).transpose(1, 2)
            k = self.k(h).view(B, S, kv, self.hd).transpose(1, 2)
            v = self.v(h).view(B, S, kv, self.hd).transpose(1, 2)
            q, k = self.rope(q, cos, sin), self.rope(k, cos, sin)
            k = k.repeat_interleave(heads // kv, 1)
            v = v.repeat_interleave(heads // kv, 1)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, S, hidden)
            x = x + self.o(a)
            h = self.n2(x)
            return x + self.down(F.silu(self.gate(h)) * self.up(h))

    return Block()


def _run_once(torch, compiled, model, inputs, grad_out, graphs=False):
    """One call: forward + backward (or one training step). Returns what to compare."""
    if graphs:
        torch.compiler.cudagraph_mark_step_begin()
    if model == "train":
        return compiled(*inputs).detach().clone()
    out = compiled(*inputs)
    out.backward(grad_out)
    return out.detach().clone()


def _zero_grads(module, inputs):
    for p in module.parameters():
        p.grad = None
    for t in inputs:
        if getattr(t, "requires_grad", False):
            t.grad = None


def _results(torch, model, compiled_out, module, inputs):
    """Outputs and gradients (or parameters after the steps), on the CPU, for the comparison."""
    saved = {"out": compiled_out.float().cpu()}
    for name, p in module.named_parameters():
        value = p if model == "train" else p.grad
        if value is not None:
            saved[("param:" if model == "train" else "grad:") + name] = value.detach().float().cpu()
    for i, t in enumerate(inputs):
        if getattr(t, "grad", None) is not None:
            saved[f"input_grad:{i}"] = t.grad.detach().float().cpu()
    return saved


def _count_files(folder, suffixes):
    if not folder or not os.path.isdir(folder):
        return 0
    return sum(1 for _, _, files in os.walk(folder) for f in files if f.endswith(suffixes))


def _time_tessera_phases():
    """Where tessera's triton.compile calls (of this process) spend their time, summed: reading and
    reducing the kernels' source (tessera/_compose.py), the C++ compile (front-end, passes, LLVM to
    PTX, or the kernel cache's hit), ptxas (PTX to cubin). Only timing wrappers: what runs is unchanged."""
    import collections
    from tessera import _compose, _ext
    from tessera.compat.triton.compiler import compiler as compat_compiler
    totals = collections.Counter()

    def timed(label, f):
        def call(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return f(*args, **kwargs)
            finally:
                totals[label] += time.perf_counter() - t0
        return call
    _compose.kernel_source_and_dependencies = timed("source", _compose.kernel_source_and_dependencies)
    compat_compiler._assemble = timed("ptxas", compat_compiler._assemble)
    C = _ext.require()

    class TimedExtension:  # tessera.compiler.compile's C.compile (the kernel cache's lookup included)
        def __getattr__(self, name):
            return getattr(C, name)
        compile = staticmethod(timed("compile", C.compile))
    timed_extension = TimedExtension()
    _ext.require = lambda: timed_extension
    return totals


def child_main(job):
    out = {"job": job, "ok": False, "notes": []}
    try:
        provider, model, measure = job["provider"], job["model"], job["measure"]
        real_dir = None
        if provider == "tessera":
            real_dir = _real_triton_dir()
            sys.path.insert(0, str(ROOT / "python"))
            import tessera.compat
            tessera.compat.install(process_wide=True)  # before torch imports triton
        import torch
        import torch._inductor.config as inductor_config
        if provider == "tessera":  # docs/torch-compile.md, "Launching" (the option's name depends on the release)
            for option in ("use_static_cuda_launcher", "use_static_triton_launcher"):
                if hasattr(inductor_config, option):
                    setattr(inductor_config, option, False)
        if measure == "compile":
            inductor_config.compile_threads = 1  # every triton.compile in this process, to time it
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        import triton
        out["triton"] = f"{triton.__name__} {getattr(triton, '__version__', '?')}"
        compiles = []
        original_compile = triton.compile

        def timed_compile(*args, **kwargs):
            t0 = time.perf_counter()
            result = original_compile(*args, **kwargs)
            name = getattr(args[0], "name", "?") if args else "?"
            compiles.append((name, time.perf_counter() - t0, type(result).__module__))
            return result

        triton.compile = timed_compile
        loads = []  # CompiledKernel._init_handles (loading on the GPU; Triton's static launcher skips it)
        from triton.compiler import CompiledKernel
        original_init_handles = CompiledKernel._init_handles

        def timed_init_handles(self, *args, **kwargs):
            t0 = time.perf_counter()
            try:
                return original_init_handles(self, *args, **kwargs)
            finally:
                loads.append(time.perf_counter() - t0)

        CompiledKernel._init_handles = timed_init_handles
        phases = _time_tessera_phases() if provider == "tessera" else None
        compiled_obj, inputs, grad_out, dtype, notes = _build(torch, model, job["quick"])
        out["notes"] += notes
        out["dtype"] = dtype
        module = compiled_obj.model if model == "train" else compiled_obj
        mode = {"default": None, "graphs": "reduce-overhead"}.get(job["mode"], job["mode"])
        if measure == "graphs":
            mode = "reduce-overhead"
        compiled = torch.compile(compiled_obj, mode=mode)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        first = _run_once(torch, compiled, model, inputs, grad_out, graphs=measure == "graphs")
        torch.cuda.synchronize()
        out["first_call_s"] = time.perf_counter() - t0
        steps = [first]
        for _ in range(2 if model == "train" else 0):  # the training step's losses over 3 steps
            steps.append(_run_once(torch, compiled, model, inputs, grad_out, graphs=measure == "graphs"))
        saved = _results(torch, model, torch.stack([s.float().reshape(-1)[:1024] for s in steps]) if
                         model == "train" else first, module, inputs)
        torch.save(saved, job["save"])
        out["compiles"] = len(compiles)
        out["compile_s"] = sum(t for _, t, _ in compiles)
        out["compiled_kernels"] = sorted({n for n, _, _ in compiles})
        out["compiled_by"] = sorted({m for _, _, m in compiles})
        out["load_s"] = sum(loads)
        if phases is not None:
            out["tessera_phases_s"] = dict(phases)
        if measure in ("warm", "graphs"):
            rounds, iters = (5, 20) if job["quick"] else (7, 30)
            times = []
            for _ in range(rounds):
                _zero_grads(module, inputs)
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                for _ in range(iters):
                    if model != "train":
                        _zero_grads(module, inputs)
                    _run_once(torch, compiled, model, inputs, grad_out, graphs=measure == "graphs")
                end.record()
                torch.cuda.synchronize()
                times.append(start.elapsed_time(end) / iters)
            out["step_ms"] = statistics.median(times)
        if measure == "graphs":
            from torch._dynamo.utils import counters
            out["cudagraph_skips"] = int(sum(counters["inductor"].get(k, 0) for k in counters["inductor"]
                                             if "cudagraph_skip" in k))
        if provider == "tessera":
            leaked = sorted(name for name, mod in list(sys.modules.items())
                            if real_dir and str(getattr(mod, "__file__", None) or "").startswith(real_dir))
            out["real_triton_modules"] = leaked
            out["tessera_kernels_in_cache"] = _count_files(os.environ.get("TESSERA_CACHE_DIR"), (".tsc",))
        out["triton_cache_binaries"] = _count_files(os.environ.get("TRITON_CACHE_DIR"), (".cubin", ".ptx"))
        out["ok"] = True
    except Exception as e:  # noqa: BLE001
        out["error"] = f"{type(e).__name__}: {e}"
        out["traceback"] = traceback.format_exc()[-4000:]
    with open(job["result"], "w") as f:
        json.dump(out, f)


# --- the parent: jobs, comparisons, the report -------------------------------------------------------------

def run_child(job, caches, timeout):
    env = dict(os.environ)
    env.update(TORCHINDUCTOR_CACHE_DIR=str(caches / "inductor"), TRITON_CACHE_DIR=str(caches / "triton"),
               TESSERA_CACHE_DIR=str(caches / "tessera"))
    env.pop("TESSERA_AS_TRITON", None)
    job = dict(job, result=str(caches / f"{job['measure']}-{job['provider']}.json"),
               save=str(caches / f"{job['measure']}-{job['provider']}.pt"))
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, __file__, "--child", json.dumps(job)], env=env, cwd=str(ROOT),
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"job": job, "ok": False, "error": f"timed out after {timeout} s"}
    try:
        with open(job["result"]) as f:
            result = json.load(f)
    except (OSError, ValueError):
        tail = (proc.stderr or proc.stdout)[-1500:]
        return {"job": job, "ok": False, "error": f"the process exited {proc.returncode} with no result:\n{tail}"}
    result["process_s"] = time.perf_counter() - t0
    result["save"] = job["save"]
    return result


def compare(torch, a_path, b_path, dtype):
    """max relative error of b against a over outputs and gradients (or parameters); (ok, text)."""
    a, b = torch.load(a_path), torch.load(b_path)
    rtol, atol = TOLERANCE[dtype]
    worst, worst_key, bad = 0.0, None, []
    for key in a:
        if key not in b:
            bad.append(f"{key} missing")
            continue
        x, y = a[key].double(), b[key].double()
        if x.shape != y.shape:
            bad.append(f"{key} shape {tuple(y.shape)} != {tuple(x.shape)}")
            continue
        err = ((x - y).abs() / (atol + rtol * x.abs())).max().item() if x.numel() else 0.0
        if err > worst:
            worst, worst_key = err, key
        if not err <= 1.0:
            bad.append(f"{key}: {err:.2f}x the tolerance")
    text = f"worst {worst:.3f}x tolerance ({worst_key})" + (f"; {len(bad)} off: {bad[:3]}" if bad else "")
    return not bad, text


def fmt(value, unit="", digits=2):
    return "-" if value is None else f"{value:.{digits}f}{unit}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--modes", default=None)
    ap.add_argument("--measure", default=None)
    ap.add_argument("--providers", default=",".join(PROVIDERS))
    ap.add_argument("--out", default=None, help="folder for caches and results (default: a temporary one)")
    ap.add_argument("--json", default=None, help="write all results here")
    ap.add_argument("--timeout", type=int, default=600, help="seconds for one measurement's process")
    args = ap.parse_args(argv)
    if args.child:
        child_main(json.loads(args.child))
        return 0
    models = [m for m in args.models.split(",") if m]
    modes = [m for m in (args.modes or ("default" if args.quick else ",".join(MODES))).split(",") if m]
    measures = [m for m in (args.measure or ("compile,warm" if args.quick else ",".join(MEASURES))).split(",") if m]
    providers = [p for p in args.providers.split(",") if p]
    for name, given, known in (("model", models, MODELS), ("mode", modes, MODES), ("measure", measures, MEASURES),
                               ("provider", providers, PROVIDERS)):
        unknown = [g for g in given if g not in known]
        if unknown:
            ap.error(f"unknown {name} {unknown} (known: {', '.join(known)})")
    try:
        import torch
        if not torch.cuda.is_available():
            print("torch_compile.py: no CUDA GPU (torch.cuda.is_available() is False): nothing to measure")
            return 1
        print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, python {sys.version.split()[0]}")
    except Exception as e:  # noqa: BLE001
        print(f"torch_compile.py: torch is needed ({type(e).__name__}: {e})")
        return 1
    base = pathlib.Path(args.out or tempfile.mkdtemp(prefix="tessera-torch-compile-"))
    base.mkdir(parents=True, exist_ok=True)
    results = []
    rows = []
    failures = 0

    def fresh(*parts):
        folder = base.joinpath(*parts)
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        return folder

    def measure_one(model, mode, measure, provider, caches):
        job = {"model": model, "mode": mode, "measure": measure, "provider": provider, "quick": args.quick}
        r = run_child(job, caches, args.timeout)
        results.append(r)
        status = "ok" if r.get("ok") else "FAILED"
        phases = r.get("tessera_phases_s")
        phases = ", ".join(f"{k} {v:.3f} s" for k, v in sorted(phases.items())) if phases else ""
        print(f"  {model} {mode} {measure} {provider}: {status} in {r.get('process_s', 0):.1f} s "
              f"(first call {fmt(r.get('first_call_s'), ' s')}, compile sum {fmt(r.get('compile_s'), ' s', 3)}, "
              f"{r.get('compiles', '-')} compiles{'; of which ' + phases if phases else ''})", flush=True)
        if not r.get("ok"):
            print(f"  FAILED {model} {mode} {measure} {provider}: {r.get('error')}")
            if r.get("traceback"):
                print("    " + r["traceback"].strip().splitlines()[-1])
        return r

    for model in models:
        for mode in modes:
            per = {}
            for provider in providers:
                per[provider] = {}
                caches = None
                if "compile" in measures:
                    caches = fresh(model, mode, provider, "compile")
                    per[provider]["compile"] = measure_one(model, mode, "compile", provider, caches)
                if "cold" in measures:
                    caches = fresh(model, mode, provider, "cold")
                    per[provider]["cold"] = measure_one(model, mode, "cold", provider, caches)
                if "warm" in measures:  # on the caches the run before filled (or a run of its own fills)
                    if caches is None:
                        caches = fresh(model, mode, provider, "cold")
                        measure_one(model, mode, "cold", provider, caches)
                    per[provider]["warm"] = measure_one(model, mode, "warm", provider, caches)
            rows.append((model, mode, per))
        if "graphs" in measures:
            per = {p: {"graphs": measure_one(model, "reduce-overhead", "graphs", p,
                                             fresh(model, "reduce-overhead", p))} for p in providers}
            rows.append((model, "reduce-overhead", per))

    print()
    print("| model | mode | provider | kernels compiled | compile sum (s) | load sum (s) | cold first call (s) | "
          "warm first call (s, new process) | step (ms) | nothing reached Triton | matches stock |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for model, mode, per in rows:
        for provider in providers:
            p = per.get(provider, {})
            c, cold, warm, graphs = p.get("compile"), p.get("cold"), p.get("warm"), p.get("graphs")
            ok = lambda r: r if r and r.get("ok") else None  # noqa: E731
            c, cold, warm, graphs = ok(c), ok(cold), ok(warm), ok(graphs)
            kernels = c and f"{c['compiles']} ({len(c['compiled_kernels'])} distinct)"
            clean = "-"
            if provider == "tessera":
                checks = [r for r in (c, cold, warm, graphs) if r]
                reached = [r for r in checks if r.get("real_triton_modules") or r.get("triton_cache_binaries")
                           or any(not m.startswith("tessera.") for m in r.get("compiled_by", []))]
                clean = ("yes" if not reached else "NO: " + "; ".join(
                    f"{r['job']['measure']}: modules {r.get('real_triton_modules')[:3]}, "
                    f"{r.get('triton_cache_binaries')} Triton cache binaries, compiled by {r.get('compiled_by')}"
                    for r in reached)) if checks else "-"
                if reached:
                    failures += 1
            match = "-"
            if provider == "tessera" and "stock" in per:
                for measure in ("warm", "cold", "compile", "graphs"):
                    mine, theirs = ok(per["tessera"].get(measure)), ok(per["stock"].get(measure))
                    if mine and theirs:
                        try:
                            good, text = compare(torch, theirs["save"], mine["save"], mine.get("dtype", "fp32"))
                            match = ("yes: " if good else "NO: ") + text
                            failures += not good
                        except Exception as e:  # noqa: BLE001
                            match = f"not compared ({type(e).__name__}: {e})"
                        break
            step = warm or graphs
            step_text = fmt(step and step.get("step_ms"), digits=3)
            if graphs:
                step_text += f" (cudagraph skips: {graphs.get('cudagraph_skips')})"
            print(f"| {model} | {mode} | {provider} | {kernels or '-'} | {fmt(c and c['compile_s'], digits=3)} | "
                  f"{fmt(c and c.get('load_s'), digits=3)} | "
                  f"{fmt((cold or graphs) and (cold or graphs)['first_call_s'])} | "
                  f"{fmt(warm and warm['first_call_s'])} | {step_text} | {clean} | {match} |")
    print()
    for model, mode, per in rows:  # the ratios the acceptance asks for
        s, t = per.get("stock", {}), per.get("tessera", {})
        ratios = []
        for measure, key, what in (("compile", "compile_s", "kernel compile sum"), ("cold", "first_call_s",
                                   "cold first call"), ("warm", "first_call_s", "warm first call"),
                                   ("warm", "step_ms", "steady-state step"), ("graphs", "step_ms", "graphs step")):
            a, b = s.get(measure), t.get(measure)
            if a and b and a.get("ok") and b.get("ok") and a.get(key) and b.get(key):
                ratios.append(f"{what} {b[key] / a[key]:.2f}x")
        if ratios:
            print(f"{model} {mode}: tessera/stock " + ", ".join(ratios))
    notes = sorted({n for r in results for n in r.get("notes", [])})
    for n in notes:
        print("note:", n)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    failed = [r for r in results if not r.get("ok")]
    print(f"{len(results)} measurements, {len(failed)} failed; results in {base}")
    return 1 if failed or failures else 0


if __name__ == "__main__":
    sys.exit(main())
