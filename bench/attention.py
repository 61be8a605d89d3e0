"""Attention, softmax(q k^T / sqrt(D)) v: tessera.kernels.attention (kernels/attention.py)
vs torch's scaled_dot_product_attention on its flash backend ("torch", FlashAttention-2)
and its cuDNN backend ("cudnn") vs Triton compiling the
very same kernel source (kernels/attention.py with `import tessera` swapped for
`import triton`: the same algorithm and block sizes, so the gap is the compilers').

Shapes: B * N = 16384 tokens, H * D = 2048 (H = 32 at D = 64, 16 at D = 128), (B, H, N, D)
contiguous, fp16 and bf16, N in {1024, 4096, 16384}, causal and not. Forward for all
providers (benchmark "attention"); backward (dQ, dK, dV from O, LSE and dO) for tessera,
torch and cudnn, bf16 (benchmark "attention_bwd").
TFLOP/s: forward 4 * B * H * N^2 * D (two matmuls), backward 2.5x that, both halved
when causal. Before timing, each provider's output is checked against torch's
(||out - ref|| / ||ref|| <= 1e-2).

Backward providers tessera_split and tessera_fused: the split dK/dV + dQ kernels and the
one-pass kernel (config BWD_FUSED False / True; "tessera" takes the table's default);
tessera_fused_stagger: the one-pass kernel with FUSED_STAGGER (each key block's program starts
its query sweep at a different block, so that the dQ atomics of programs running together go
to different rows).
Provider tessera_autotuned: tk.attention_forward(..., autotune=True), tuned in its first
(checking) call, so the timed runs launch the winner. Provider tessera_ws: the table's blocks
with WARP_SPECIALIZE=True (a producer warpgroup issues the TMA copies, docs/tma.md; where the
table's forward does not use TMA it is the same kernel as tessera). --sweep adds tessera_tmaws_*
and tessera_tmawspp_* (with PINGPONG).

    python3 bench/attention.py [--quick] [--out DIR] [--providers tessera,torch,cudnn,triton]
                               [--sweep]   # also time other tessera block configs
                               [--fwd-only | --bwd-only] [--bf16-only] [--head-dims 64]
    python3 bench/attention.py --fp8 [--quick] [--sweep] [--head-dims 128] [--ns 16384]

--fp8 (benchmark "attention_fp8", instead of the others): tk.attention_fp8 (e4m3 Q, K and V^T
with per-tensor descales, O bf16; provider tessera_fp8) beside tessera's bf16 forward at the same
shapes (tessera_bf16: tk.attention_forward, its table's blocks) and torch's flash SDPA in bf16,
same run. Inputs: the bf16 tensors of the other benchmark, quantised per tensor (amax / 448);
V^T made contiguous once, outside the timing. Checked before timing against torch's bf16 SDPA on
the dequantised inputs (normwise, fp8 <= 5e-2, bf16 <= 1e-2). --sweep adds tessera_fp8_* block
configs (FP8_SWEEP). Acceptance (issue 30): D128 N16k tessera_fp8 >= 1.4x tessera_bf16.
"""
import importlib.util
import pathlib
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import harness  # noqa: E402

NS = [1024, 4096, 16384]
HEAD_DIMS = [64, 128]
DTYPES = ["float16", "bfloat16"]
TOKENS, MODEL_DIM = 16384, 2048
# --sweep: forward (BLOCK_M, BLOCK_N, num_warps, num_stages, maxnreg) alternatives to the table's
# choice; maxnreg 128 keeps two 8-warp CTAs on an SM (None: ptxas's choice).
SWEEP = [(128, 64, 8, 3, 128), (128, 64, 8, 4, 128), (128, 64, 8, 3, None), (128, 128, 8, 3, None),
         (64, 64, 4, 4, None), (64, 64, 4, 3, None), (64, 64, 4, 3, 128), (64, 64, 4, 4, 128)]
# --sweep: the same with OVERLAP (both dots of a key step in flight, kernels/attention.py).
SWEEP_OVERLAP = [(128, 64, 8, 3, 128), (128, 64, 8, 4, 128), (128, 128, 8, 2, None), (128, 128, 8, 3, None)]
# --sweep: with PINGPONG (the two warpgroups of an 8-warp program take turns to issue their dots).
SWEEP_PINGPONG = [(128, 64, 8, 3, 128), (128, 64, 8, 3, None), (128, 128, 8, 3, None)]
# --sweep: with TMA (K and V through tensor descriptors and an mbarrier ring, kernels/attention.py).
SWEEP_TMA = [(64, 64, 4, 3, 128), (64, 64, 4, 4, 128), (128, 64, 8, 3, 128), (128, 128, 8, 3, None),
             (128, 128, 8, 2, None), (128, 64, 8, 3, None), (64, 128, 4, 2, None), (64, 128, 4, 3, None), (64, 128, 4, 2, 168)]
# --sweep: Triton on the same source with other blocks (BLOCK_M, BLOCK_N, warps, stages), to see
# whether the blocks the table gives both compilers are Triton's best too.
SWEEP_TRITON = [(64, 128, 4, 2), (64, 128, 4, 3), (128, 64, 8, 3), (128, 128, 8, 2), (128, 128, 8, 3),
                (128, 64, 4, 3)]
# --sweep, backward: (DKDV_BLOCK_M, DKDV_BLOCK_N, dkdv warps, DQ_BLOCK_M, DQ_BLOCK_N, dq warps, stages).
SWEEP_BWD = [(64, 64, 4, 64, 64, 4, 2), (64, 64, 4, 128, 64, 8, 2), (32, 128, 8, 128, 32, 8, 2),
             (64, 64, 4, 64, 64, 4, 3), (64, 128, 8, 128, 64, 8, 2), (32, 32, 8, 128, 64, 8, 2)]
# --sweep, backward in one pass (BWD_FUSED): (FUSED_BLOCK_M, FUSED_BLOCK_N, warps, stages).
SWEEP_BWD_FUSED = [(64, 128, 8, 2), (64, 128, 8, 3), (64, 64, 4, 2), (64, 64, 4, 3), (32, 128, 8, 2), (128, 128, 8, 2)]

# --fp8 --sweep: (BLOCK_M, BLOCK_N, num_warps, num_stages, maxnreg, TMA, WARP_SPECIALIZE, PINGPONG) for
# tk.attention_fp8.
FP8_SWEEP = [(128, 128, 8, 3, None, True, True, False), (128, 128, 8, 2, None, True, True, False),
             (128, 128, 8, 3, None, True, False, False), (128, 256, 8, 2, None, True, True, False),
             (128, 64, 8, 3, None, True, True, False), (64, 128, 4, 3, None, True, False, False),
             (128, 128, 8, 3, None, False, False, False), (128, 128, 8, 3, None, True, True, True),
             (128, 128, 8, 3, None, True, False, True)]

ONLY_HEAD_DIMS = None  # --head-dims 64,128: a subset of HEAD_DIMS
ONLY_NS = None  # --ns 16384: a subset of NS
ONLY_BF16 = False  # --bf16-only: the forward in bf16 only (the dtype issue 7 and 8 measure)
_triton_module = None


def triton_kernels():
    """kernels/attention.py compiled by Triton (imports swapped), loaded from a temp file
    (Triton's JIT reads the source through inspect)."""
    global _triton_module
    if _triton_module is None:
        text = (harness.ROOT / "kernels" / "attention.py").read_text()
        text = text.replace("import tessera.language as tl", "import triton.language as tl")
        text = text.replace("import tessera\n", "import triton as tessera\n")
        path = pathlib.Path(tempfile.mkdtemp(prefix="tessera-bench-")) / "attention_triton.py"
        path.write_text(text)
        spec = importlib.util.spec_from_file_location("attention_triton", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _triton_module = module
    return _triton_module


def triton_forward(q, k, v, o, lse, causal, config):
    B, H, N, D = q.shape
    grid = ((N + config["BLOCK_M"] - 1) // config["BLOCK_M"], B * H)
    triton_kernels().attn_fwd_kernel[grid](
        q, k, v, o, lse, *q.stride(), *k.stride(), *v.stride(), *o.stride(), H, k.shape[1], N, k.shape[2],
        D ** -0.5, HEAD_DIM=D, BLOCK_M=config["BLOCK_M"], BLOCK_N=config["BLOCK_N"], CAUSAL=causal,
        num_warps=config["num_warps"], num_stages=config.get("num_stages", 3))


def torch_sdpa(q, k, v, causal, backend="FLASH_ATTENTION"):
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel(getattr(SDPBackend, backend)):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)


def torch_flash(q, k, v, causal):
    return torch_sdpa(q, k, v, causal)


def flops(inputs):
    q, causal, mode = inputs["q"], inputs["causal"], inputs["mode"]
    B, H, N, D = q.shape
    f = 4 * B * H * N * N * D * (0.5 if causal else 1.0)
    return f * (2.5 if mode == "bwd" else 1.0)


def providers(sweep=False):
    import torch
    import tessera.kernels as tk

    def tessera_provider(config=None, autotune=False):
        def make(x):
            if x["mode"] == "fwd":
                return lambda: tk.attention_forward(x["q"], x["k"], x["v"], x["causal"], config=config,
                                                    autotune=autotune)[0]
            o, lse = tk.attention_forward(x["q"], x["k"], x["v"], x["causal"], config=config)
            return lambda: tk.attention_backward(x["do"], x["q"], x["k"], x["v"], o, lse, x["causal"], config=config)
        return make

    def torch_provider(backend):
        def make(x):
            if x["mode"] == "fwd":
                return lambda: torch_sdpa(x["q"], x["k"], x["v"], x["causal"], backend)
            q, k, v = (t.detach().requires_grad_() for t in (x["q"], x["k"], x["v"]))
            o = torch_sdpa(q, k, v, x["causal"], backend)
            return lambda: torch.autograd.grad(o, (q, k, v), x["do"], retain_graph=True)
        return make

    def triton_provider(blocks=None):
        def make(x):
            q = x["q"]
            o = torch.empty_like(q)
            lse = torch.empty(q.shape[:3], device=q.device, dtype=torch.float32)
            config = tk.attention_config(q.shape[-1], x["causal"])
            config["num_stages"] = 3
            if blocks:
                config.update(zip(("BLOCK_M", "BLOCK_N", "num_warps", "num_stages"), blocks))

            def run():
                triton_forward(q, x["k"], x["v"], o, lse, x["causal"], config)
                return o
            return run
        return make

    # "torch" is SDPA's flash back-end (FlashAttention-2); "cudnn" its cuDNN back-end.
    out = {"tessera": tessera_provider(), "torch": torch_provider("FLASH_ATTENTION"),
           "cudnn": torch_provider("CUDNN_ATTENTION"), "triton": triton_provider(),
           "tessera_autotuned": tessera_provider(autotune=True),
           "tessera_ws": tessera_provider({"WARP_SPECIALIZE": True}),
           "tessera_split": tessera_provider({"BWD_FUSED": False}),
           "tessera_fused": tessera_provider({"BWD_FUSED": True}),
           "tessera_fused_stagger": tessera_provider({"BWD_FUSED": True, "FUSED_STAGGER": True})}
    if sweep == "fwd":
        for prefix, table, schedule in (("tessera_", SWEEP, ()), ("tessera_ov_", SWEEP_OVERLAP, ("OVERLAP",)),
                                        ("tessera_pp_", SWEEP_PINGPONG, ("PINGPONG",)),
                                        ("tessera_tma_", SWEEP_TMA, ("TMA",)),
                                        ("tessera_tmaov_", SWEEP_TMA, ("TMA", "OVERLAP")),
                                        ("tessera_tmapp_", SWEEP_PINGPONG, ("TMA", "PINGPONG")),
                                        ("tessera_tmaws_", SWEEP_TMA, ("TMA", "WARP_SPECIALIZE")),
                                        ("tessera_tmawspp_", SWEEP_PINGPONG, ("TMA", "PINGPONG", "WARP_SPECIALIZE"))):
            for bm, bn, w, st, regs in table:
                name = f"{prefix}{bm}x{bn}w{w}s{st}" + (f"r{regs}" if regs else "")
                out[name] = tessera_provider({"BLOCK_M": bm, "BLOCK_N": bn, "num_warps": w, "num_stages": st,
                                              "OVERLAP": "OVERLAP" in schedule, "PINGPONG": "PINGPONG" in schedule,
                                              "TMA": "TMA" in schedule, "maxnreg": regs,
                                              "WARP_SPECIALIZE": "WARP_SPECIALIZE" in schedule})
        for bm, bn, w, st in SWEEP_TRITON:
            out[f"triton_{bm}x{bn}w{w}s{st}"] = triton_provider((bm, bn, w, st))
    if sweep == "bwd":
        for bm, bn, w, st in SWEEP_BWD_FUSED:
            out[f"tessera_fused{bm}x{bn}w{w}s{st}"] = tessera_provider({
                "BWD_FUSED": True, "FUSED_BLOCK_M": bm, "FUSED_BLOCK_N": bn, "fused_num_warps": w,
                "bwd_num_stages": st})
        for km, kn, kw, qm, qn, qw, st in SWEEP_BWD:
            out[f"tessera_kv{km}x{kn}w{kw}_q{qm}x{qn}w{qw}s{st}"] = tessera_provider({
                "DKDV_BLOCK_M": km, "DKDV_BLOCK_N": kn, "dkdv_num_warps": kw, "DQ_BLOCK_M": qm, "DQ_BLOCK_N": qn,
                "dq_num_warps": qw, "bwd_num_stages": st})
    return out


def fp8_quantise(x):
    """(x in float8_e4m3fn, descale as a one-element fp32 tensor): per-tensor, amax at 448."""
    import torch
    descale = (x.abs().amax().float() / 448.0).reshape(1)
    return (x.float() / descale).to(torch.float8_e4m3fn), descale


def fp8_cases():
    import torch
    out = []
    for D in (ONLY_HEAD_DIMS or HEAD_DIMS):
        for N in (ONLY_NS or NS):
            for causal in (False, True):
                def make(D=D, N=N, causal=causal):
                    B, H = max(1, TOKENS // N), MODEL_DIM // D
                    t = lambda: torch.randn((B, H, N, D), device="cuda", dtype=torch.bfloat16)  # noqa: E731
                    x = {"q": t(), "k": t(), "v": t(), "causal": causal, "mode": "fwd"}
                    (x["q8"], x["qd"]), (x["k8"], x["kd"]), (v8, x["vd"]) = (fp8_quantise(x[n]) for n in "qkv")
                    x["vt8"] = v8.transpose(2, 3).contiguous()
                    # The reference's inputs: the dequantised fp8 values, in fp32.
                    x["deq"] = [a.float() * d for a, d in ((x["q8"], x["qd"]), (x["k8"], x["kd"]), (v8, x["vd"]))]
                    return x
                out.append((f"D{D} N{N}{' causal' if causal else ''}", make))
    return out


def fp8_providers(sweep=False):
    import tessera.kernels as tk

    def fp8(config=None):
        return lambda x: lambda: tk.attention_fp8(x["q8"], x["k8"], x["vt8"], x["qd"], x["kd"], x["vd"], x["causal"],
                                                  config=config)
    out = {"tessera_fp8": fp8(),
           "tessera_bf16": lambda x: lambda: tk.attention_forward(x["q"], x["k"], x["v"], x["causal"])[0],
           "torch_bf16": lambda x: lambda: torch_flash(x["q"], x["k"], x["v"], x["causal"])}
    if sweep:
        for bm, bn, w, st, regs, tma, ws, pp in FP8_SWEEP:
            name = f"tessera_fp8_{bm}x{bn}w{w}s{st}" + (f"r{regs}" if regs else "") + ("_tma" if tma else "") + \
                ("ws" if ws else "") + ("pp" if pp else "")
            out[name] = fp8({"BLOCK_M": bm, "BLOCK_N": bn, "num_warps": w, "num_stages": st, "maxnreg": regs,
                             "TMA": tma, "WARP_SPECIALIZE": ws, "PINGPONG": pp})
    return out


def fp8_check(x, provider, fn):
    import torch
    out = fn()
    torch.cuda.synchronize()
    if "fp8" in provider:
        ref = torch.nn.functional.scaled_dot_product_attention(*x["deq"], is_causal=x["causal"])  # fp32 math
        harness.check_close(out, ref, 5e-2, f"{provider} forward (against the dequantised inputs)")
    else:
        harness.check_close(out, torch_flash(x["q"], x["k"], x["v"], x["causal"]), 1e-2, f"{provider} forward")


def run_fp8(options):
    results = harness.run_benchmark("attention_fp8", fp8_cases(), fp8_providers(getattr(options, "sweep", False)),
                                    flops, options, check=fp8_check)
    print("(attention_fp8: the GB/s column above is GFLOP/s)")
    for row in results["rows"]:
        g = row["gbps"]
        ratio = f" fp8/bf16={g['tessera_fp8'] / g['tessera_bf16']:.2f}x" if "tessera_fp8" in g and "tessera_bf16" in g \
            else ""
        print(f"attention_fp8 {row['case']:<20}", " ".join(f"{p}={v / 1000:.1f}" for p, v in g.items()),
              "TFLOP/s" + ratio, row["errors"] or "")
    return [results]


def check(x, provider, fn):
    import torch
    out = fn()
    torch.cuda.synchronize()
    if x["mode"] == "fwd":
        ref = torch_flash(x["q"], x["k"], x["v"], x["causal"])
        harness.check_close(out, ref, 1e-2, f"{provider} forward")
        return
    q, k, v = (t.detach().requires_grad_() for t in (x["q"], x["k"], x["v"]))
    refs = torch.autograd.grad(torch_flash(q, k, v, x["causal"]), (q, k, v), x["do"])
    for name, got, ref in zip(("dq", "dk", "dv"), out, refs):
        harness.check_close(got, ref, 1e-2, f"{provider} backward {name}")


def cases(mode):
    import torch
    out = []
    for dtype in (DTYPES if mode == "fwd" and not ONLY_BF16 else ["bfloat16"]):
        for D in (ONLY_HEAD_DIMS or HEAD_DIMS):
            for N in (ONLY_NS or NS):
                for causal in (False, True):
                    def make(dtype=dtype, D=D, N=N, causal=causal):
                        B, H = max(1, TOKENS // N), MODEL_DIM // D
                        t = lambda: torch.randn((B, H, N, D), device="cuda", dtype=getattr(torch, dtype))  # noqa: E731
                        x = {"q": t(), "k": t(), "v": t(), "causal": causal, "mode": mode}
                        if mode == "bwd":
                            x["do"] = t()
                        return x
                    out.append((f"{dtype[:4]} D{D} N{N}{' causal' if causal else ''}", make))
    return out


def run(options):
    everything = []
    modes = (("fwd", "attention"), ("bwd", "attention_bwd"))
    if getattr(options, "fwd_only", False):
        modes = modes[:1]
    if getattr(options, "bwd_only", False):
        modes = modes[1:]
    for mode, name in modes:
        provs = providers(mode if getattr(options, "sweep", False) else None)
        if mode == "bwd":
            provs = {p: f for p, f in provs.items() if p != "triton"}
        results = harness.run_benchmark(name, cases(mode), provs, flops, options, check=check)
        print(f"({name}: the GB/s column above is GFLOP/s)")
        for row in results["rows"]:
            print(f"{name} {row['case']:<24}", " ".join(f"{p}={row['gbps'][p] / 1000:.1f}" for p in row["gbps"]),
                  "TFLOP/s", row["errors"] or "")
        everything.append(results)
    return everything


if __name__ == "__main__":
    ap = harness.parser(__doc__)
    ap.add_argument("--sweep", action="store_true", help="also time other tessera block configs (SWEEP, SWEEP_BWD)")
    ap.add_argument("--fwd-only", action="store_true", help="skip the backward benchmark")
    ap.add_argument("--bwd-only", action="store_true", help="skip the forward benchmark")
    ap.add_argument("--head-dims", default="", help="comma-separated subset of the head dims (default 64,128)")
    ap.add_argument("--bf16-only", action="store_true", help="forward in bf16 only (default: fp16 and bf16)")
    ap.add_argument("--fp8", action="store_true", help="the FP8 forward beside the bf16 one (benchmark attention_fp8)")
    ap.add_argument("--ns", default="", help="comma-separated subset of the sequence lengths (default 1024,4096,16384)")
    opts = harness.parse(ap)
    ONLY_NS = [int(n) for n in opts.ns.split(",")] if opts.ns else None
    ONLY_BF16 = opts.bf16_only
    ONLY_HEAD_DIMS = [int(d) for d in opts.head_dims.split(",")] if opts.head_dims else None
    reason = harness.skip_reason()
    if reason:
        print(f"attention benchmark skipped: {reason}")
        sys.exit(0)
    run_fp8(opts) if opts.fp8 else run(opts)
