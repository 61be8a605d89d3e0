"""Fusion (docs/fusion.md): what one fused kernel saves.

1. "fusion_elementwise": a 4-op chain y = relu(2x + 1)^2 on 2^28 elements (fp32 and
   bf16): tessera.elementwise (one kernel: read x, write y) vs torch eager (four
   kernels, each reading and writing the whole tensor) vs a copy (y.copy_(x): the
   bandwidth bound for one read and one write). Also a bias add + GELU on (M, N) + (N,)
   (the broadcast path) vs torch eager. GB/s counts one read of each input and one
   write (what the fused kernel must move), so torch's number is its effective rate.
2. "fusion_gemm": C = gelu(A @ B + bias), fp16, 4096^3 and 8192x8192x4096 (and a GEMM
   with a residual + scale epilogue): tk.matmul(..., epilogue=) vs plain tk.matmul (the
   epilogue's cost) vs torch.matmul + separate bias + GELU (torch eager). Column: TFLOP/s
   (2MNK / time). With the residual epilogue, "user-fused" is bench/user_matmul.py's
   user_matmul_residual (Triton's tutorial 03 plus `acc += tl.load(residual tile)`, issue 35's
   acceptance 3: the rate of tessera-fused) and "user-plain" the same GEMM without that line, both
   at USER_CONFIG (128x256x64/w8/s3); other epilogues show them as n/a. On sm_90a (row-major operands) the fused GEMM is
   matmul_tma_epilogue_kernel and the plain one matmul_tma_kernel (TMA + wgmma, both
   autotuned over HOPPER_MATMUL_CONFIGS); elsewhere matmul_epilogue_kernel / matmul_kernel.
3. "fusion_attention": sliding-window attention (window 1024, causal, N = 16384, fp16,
   D = 64 and 128, B = 1, H = 16) with mask_mod + kv_range (key blocks outside the
   window skipped) vs full causal attention (tk.attention(causal=True)) vs the same
   mask without kv_range (every block visited, masked). TFLOP/s of the full causal
   problem, so the window's speed-up shows directly (ideal: ~N / (2 * window) = 8x).

Each provider's output is checked against torch (elementwise/GEMM) or torch SDPA
with an explicit boolean mask (attention) before timing.

    python3 bench/fusion.py [--quick] [--out DIR] [--only elementwise,gemm,attention]
                            [--gemm-configs auto,128x256x64/w8/s4,...] [--gemm-epilogues bias_gelu,bias_gelu_tanh,bias,residual]
                            [--gemm-dtypes fp16,bf16]

--gemm-configs times the GEMM part per configuration, side by side: for each entry the fused
and the plain GEMM ("fused@128x128x64/w4/s3", "plain@..."; "auto" = the autotuned wrappers,
which print the configs they chose), then one line per case with each fused variant's extra
time over the plain GEMM of the same config and over the fastest plain one (issue 11 asks
<= 5 %). --gemm-epilogues picks the epilogues (default bias_gelu,residual; "row_scale" multiplies
by an fp32 (M, 1) column; "bias" is a bias
add alone: the GELU's share is bias_gelu - bias; "bias_gelu_tanh" is GELU's tanh form, torch's
approximate="tanh" and cuBLASLt's GELU epilogue, with the hardware tanh). A config ending in
"/persistent" is the epilogue kernel's persistent form for the fused GEMM and
matmul_tma_persistent_kernel (persistent=True) for the plain one; one ending in "/pingpong" (e.g.
128x128x64/w4/s4/pingpong) their ping-pong forms (two consumer warpgroups on alternate tiles,
docs/tma.md), and then also "user-fused@pingpong" / "user-plain@pingpong": a user's persistent
GEMM written as Triton's tutorial 09 (bench/user_matmul.py user_persistent_matmul_residual, its
residual line on or off) at 128x128x64, 4 warps, 4 stages. --gemm-dtypes: fp16 (default) and/or bf16.
"""
import math
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import harness  # noqa: E402

import tessera  # noqa: E402
import tessera.language as tl  # noqa: E402


@tessera.elementwise
def chain4(x):
    y = x * 2.0
    y = y + 1.0
    y = tl.maximum(y, 0.0)
    return y * y


@tessera.elementwise
def bias_gelu(x, b):
    y = x + b
    return 0.5 * y * (1.0 + tl.erf(y * 0.7071067811865476))


@tessera.jit
def gelu_bias_epilogue(acc, bias):
    y = acc + bias
    return 0.5 * y * (1.0 + tl.erf(y * 0.7071067811865476))


@tessera.jit
def gelu_tanh_bias_epilogue(acc, bias):
    # GELU's tanh form (torch's approximate="tanh"; what cuBLASLt's GELU epilogue computes):
    # 0.5 y (1 + tanh(sqrt(2/pi) (y + 0.044715 y^3))), tanh by the hardware's tanh.approx.f32.
    y = acc + bias
    inner = y * (0.7978845608028654 + 0.035677408136300125 * y * y)
    return 0.5 * y * (1.0 + tl.math.fast_tanhf(inner))


@tessera.jit
def bias_epilogue(acc, bias):
    return acc + bias


@tessera.jit
def residual_epilogue(acc, residual, alpha):
    return acc * alpha + residual


@tessera.jit
def row_scale_epilogue(acc, scale):
    return acc * scale


@tessera.jit
def window_mask(b, h, q_idx, kv_idx, window):
    return (kv_idx <= q_idx) & (q_idx - kv_idx < window)


@tessera.jit
def window_range(q_lo, q_hi, n_kv, window):
    return q_lo - window + 1, q_hi


def torch_chain4(x):
    import torch
    y = x * 2.0
    y = y + 1.0
    y = torch.relu(y)
    return y * y


# ------------------------------------------------------------- elementwise

def elementwise_bench(options):
    import torch
    n = 2 ** 28 if not options.quick else 2 ** 26

    def cases():
        out = []
        for dtype in ("float32", "bfloat16"):
            def make(dtype=dtype):
                x = torch.randn(n, device="cuda", dtype=getattr(torch, dtype))
                return {"op": "chain4", "x": x, "y": torch.empty_like(x)}
            out.append((f"chain4 {dtype} 2^{int(math.log2(n))}", make))
        for dtype in ("float16", "bfloat16", "float32"):  # issue 35's acceptance 2: all three
            def make(dtype=dtype):
                x = torch.randn((16384, 8192), device="cuda", dtype=getattr(torch, dtype))
                b = torch.randn((8192,), device="cuda", dtype=getattr(torch, dtype))
                return {"op": "bias_gelu", "x": x, "b": b, "y": torch.empty_like(x)}
            out.append((f"bias+gelu {dtype} 16384x8192", make))
        return out

    def nbytes(x):
        t = x["x"]
        return 2 * t.numel() * t.element_size() + (x["b"].numel() * x["b"].element_size() if "b" in x else 0)

    def tessera_p(x):
        if x["op"] == "chain4":
            return lambda: chain4(x["x"], out=x["y"])
        return lambda: bias_gelu(x["x"], x["b"], out=x["y"])

    def torch_p(x):
        if x["op"] == "chain4":
            return lambda: torch_chain4(x["x"])
        return lambda: torch.nn.functional.gelu(x["x"] + x["b"])

    def copy_p(x):
        return lambda: x["y"].copy_(x["x"])

    def check(x, provider, fn):
        if provider == "copy":
            return
        out = fn()
        torch.cuda.synchronize()
        ref = torch_chain4(x["x"].double()) if x["op"] == "chain4" else torch.nn.functional.gelu(
            x["x"].double() + x["b"].double())
        harness.check_close(out, ref, 1e-2, f"{provider} {x['op']}")

    return harness.run_benchmark("fusion_elementwise", cases(),
                                 {"tessera": tessera_p, "torch": torch_p, "copy": copy_p}, nbytes, options, check)


# ------------------------------------------------------------------- GEMM

def gemm_bench(options):
    import torch
    import tessera.kernels as tk
    shapes = [(4096, 4096, 4096), (8192, 8192, 4096)] if not options.quick else [(4096, 4096, 4096)]
    epilogues = [e for e in (getattr(options, "gemm_epilogues", "") or "bias_gelu,residual").split(",") if e]
    F = torch.nn.functional
    # epilogue: (the tessera function, its extra arguments, torch eager on the product, reference on acc)
    EPILOGUES = {
        "bias_gelu": (gelu_bias_epilogue, lambda x: (x["bias"],), lambda x, p: F.gelu(p + x["bias"]),
                      lambda x, acc: F.gelu(acc + x["bias"].float())),
        "bias_gelu_tanh": (gelu_tanh_bias_epilogue, lambda x: (x["bias"],),
                           lambda x, p: F.gelu(p + x["bias"], approximate="tanh"),
                           lambda x, acc: F.gelu(acc + x["bias"].float(), approximate="tanh")),
        "bias": (bias_epilogue, lambda x: (x["bias"],), lambda x, p: p + x["bias"],
                 lambda x, acc: acc + x["bias"].float()),
        "residual": (residual_epilogue, lambda x: (x["res"], 0.5), lambda x, p: p * 0.5 + x["res"],
                     lambda x, acc: acc * 0.5 + x["res"].float()),
        "row_scale": (row_scale_epilogue, lambda x: (x["scale"],), lambda x, p: p * x["scale"],
                      lambda x, acc: acc * x["scale"]),
    }
    for ep in epilogues:
        if ep not in EPILOGUES:
            raise SystemExit(f"--gemm-epilogues: unknown epilogue {ep!r} ({', '.join(EPILOGUES)})")
    configs = [c for c in (getattr(options, "gemm_configs", "") or "").split(",") if c]

    dtypes = [d for d in (getattr(options, "gemm_dtypes", "") or "fp16").split(",") if d]
    TORCH_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
    for d in dtypes:
        if d not in TORCH_DTYPES:
            raise SystemExit(f"--gemm-dtypes: unknown dtype {d!r} (fp16, bf16)")

    def cases():
        out = []
        for M, N, K in shapes:
            for dt in dtypes:
                for ep in epilogues:
                    def make(M=M, N=N, K=K, ep=ep, dt=TORCH_DTYPES[dt]):
                        t = lambda *s: torch.randn(s, device="cuda", dtype=dt)  # noqa: E731
                        return {"a": t(M, K), "b": t(K, N), "bias": t(N), "res": t(M, N), "ep": ep,
                                "scale": torch.rand((M, 1), device="cuda", dtype=torch.float32) + 0.5,
                                "c": torch.empty((M, N), device="cuda", dtype=dt)}
                    out.append((f"{ep} {dt} {M}x{N}x{K}" if dtypes != ["fp16"] else f"{ep} {M}x{N}x{K}", make))
        return out

    def flops(x):
        return 2 * x["a"].shape[0] * x["b"].shape[1] * x["a"].shape[1]

    def fused(x, config=None):
        kw = {} if config is None else {"config": config}
        fn, args, _, _ = EPILOGUES[x["ep"]]
        return lambda: tk.matmul(x["a"], x["b"], out=x["c"], epilogue=fn, epilogue_args=args(x), **kw)

    def plain(x, config=None):
        kw = {} if config is None else {"config": config}
        return lambda: tk.matmul(x["a"], x["b"], out=x["c"], **kw)

    def torch_p(x):
        eager = EPILOGUES[x["ep"]][2]
        return lambda: eager(x, torch.matmul(x["a"], x["b"]))

    # Issue 35's acceptance 3: a GEMM written as Triton's tutorial 03 (bench/user_matmul.py) plus
    # one line, `acc += tl.load(residual tile)`, at USER_CONFIG; user-plain is the same without it.
    from user_matmul import user_matmul, user_matmul_residual
    bm, bn, bk, uw, us = USER_CONFIG

    def user_launch(x, residual):
        a, b, c, r = x["a"], x["b"], x["c"], x["res"]
        M, K = a.shape
        N = b.shape[1]
        grid = (triton_cdiv(M, bm) * triton_cdiv(N, bn),)
        common = (M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
        meta = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=uw, num_stages=us)
        if residual:  # the launch returns the compiled kernel (as Triton's): the output is c
            return lambda: (user_matmul_residual[grid](a, b, c, r, *common, r.stride(0), r.stride(1), **meta), c)[1]
        return lambda: (user_matmul[grid](a, b, c, *common, **meta), c)[1]

    def user_fused(x):
        if x["ep"] != "residual":
            raise ValueError("n/a (residual only)")
        return user_launch(x, True)

    def user_plain(x):
        return user_launch(x, False)

    # The same user line in a persistent GEMM as Triton's tutorial 09 writes it (bench/user_matmul.py
    # user_persistent_matmul_residual): at 128x128x64, 4 warps, 4 stages tessera runs it ping-pong.
    from user_matmul import user_persistent_matmul_residual

    def user_pingpong(x, residual):
        if residual and x["ep"] != "residual":
            raise ValueError("n/a (residual only)")
        a, b, c, r = x["a"], x["b"], x["c"], x["res"]
        M, K = a.shape
        N = b.shape[1]
        a_desc = tessera.TensorDescriptor.from_tensor(a, [128, 64])
        b_desc = tessera.TensorDescriptor.from_tensor(b, [64, 128])
        sms = torch.cuda.get_device_properties(a.device).multi_processor_count
        grid = (min(sms, triton_cdiv(M, 128) * triton_cdiv(N, 128)),)
        return lambda: (user_persistent_matmul_residual[grid](
            a_desc, b_desc, c, r, M, N, K, c.stride(0), c.stride(1), r.stride(0), r.stride(1), BLOCK_M=128,
            BLOCK_N=128, BLOCK_K=64, GROUP_M=8, NUM_SMS=grid[0], RESIDUAL=residual, num_warps=4, num_stages=4), c)[1]

    def check(x, provider, fn):
        if provider.startswith("tessera-plain") or provider.startswith("plain@") or provider == "user-plain":
            return
        out = fn()
        torch.cuda.synchronize()
        if provider == "user-plain@pingpong":
            harness.check_close(out, x["a"].float() @ x["b"].float(), 1e-2, provider)
            return
        if provider in ("user-fused", "user-fused@pingpong"):  # acc + residual (no alpha in the user's line)
            harness.check_close(out, x["a"].float() @ x["b"].float() + x["res"].float(), 1e-2, provider)
            return
        ref = EPILOGUES[x["ep"]][3](x, x["a"].float() @ x["b"].float())
        harness.check_close(out, ref, 1e-2, f"{provider} {x['ep']}")

    if not configs:
        providers = {"tessera-fused": fused, "tessera-plain": plain, "torch": torch_p}
        if "residual" in epilogues:
            providers.update({"user-fused": user_fused, "user-plain": user_plain})
    else:
        providers = {}
        for c in configs:
            if c == "auto":
                providers["fused@auto"], providers["plain@auto"] = fused, plain
            else:
                tk.parse_matmul_config(c)  # a bad entry fails here, not per case
                providers[f"fused@{c}"] = lambda x, c=c: fused(x, c)
                providers[f"plain@{c}"] = lambda x, c=c: plain(x, c)
        if any(c.endswith("/pingpong") for c in configs):  # the user's persistent GEMM beside them
            providers["user-fused@pingpong"] = lambda x: user_pingpong(x, True)
            providers["user-plain@pingpong"] = lambda x: user_pingpong(x, False)
        providers["torch"] = torch_p
    results = harness.run_benchmark("fusion_gemm", cases(), providers, flops, options, check)
    print("(fusion_gemm: the GB/s column above is GFLOP/s)")
    if configs:
        _epilogue_overheads(results)
        if "auto" in configs:
            from tessera.kernels.matmul import matmul_config_name
            for ep in epilogues:
                best = tk.matmul_epilogue_autotuner(EPILOGUES[ep][0]).best_config
                if best is not None:
                    print(f"autotuned fused {ep}: {matmul_config_name(best)} (last tuned shape)")
            last = tk.matmul_last_autotuner()
            if last is not None and last.best_config is not None:
                print(f"autotuned plain: {matmul_config_name(last.best_config)} (last tuned shape)")
    return results


USER_CONFIG = (128, 256, 64, 8, 3)  # BLOCK_M, BLOCK_N, BLOCK_K, warps, stages of user-fused / user-plain


def triton_cdiv(a, b):
    return (a + b - 1) // b


def _epilogue_overheads(results):
    """Per case: each fused variant's time over the plain GEMM of its config and over the fastest plain."""
    print("\nepilogue cost (fused time / plain time - 1; issue 11: <= 5 % over the fastest plain GEMM)")
    for row in results["rows"]:
        ms = row["ms"]
        plains = {p[len("plain@"):]: t for p, t in ms.items() if p.startswith("plain@")}
        if not plains:
            continue
        best_plain = min(plains, key=plains.get)
        cells = []
        for p, t in sorted(ms.items(), key=lambda kv: kv[1]):
            if not p.startswith("fused@"):
                continue
            cfg = p[len("fused@"):]
            same = f"{100 * (t / plains[cfg] - 1):+.1f}% vs own plain" if cfg in plains else ""
            cells.append(f"{cfg}: {t * 1e3:.1f} us, {100 * (t / plains[best_plain] - 1):+.1f}% vs best plain, {same}")
        print(f"  {row['case']}: fastest plain {best_plain} {plains[best_plain] * 1e3:.1f} us")
        for c in cells:
            print(f"      {c}")


# -------------------------------------------------------------- attention

def attention_bench(options):
    import torch
    import tessera.kernels as tk
    window = 1024
    N = 16384 if not options.quick else 8192

    def cases():
        out = []
        for D in (64, 128):
            def make(D=D):
                t = lambda: torch.randn((1, 16, N, D), device="cuda", dtype=torch.float16)  # noqa: E731
                return {"q": t(), "k": t(), "v": t()}
            out.append((f"fp16 D{D} N{N} w{window}", make))
        return out

    def flops(x):
        B, H, n, D = x["q"].shape
        return 4 * B * H * n * n * D * 0.5  # the full causal problem

    def windowed(x):
        return lambda: tk.attention_forward(x["q"], x["k"], x["v"], True, mask_mod=window_mask,
                                            kv_range=window_range, mod_args=(window,))[0]

    def masked_only(x):
        return lambda: tk.attention_forward(x["q"], x["k"], x["v"], True, mask_mod=window_mask,
                                            mod_args=(window,))[0]

    def full(x):
        return lambda: tk.attention_forward(x["q"], x["k"], x["v"], True)[0]

    def check(x, provider, fn):
        out = fn()
        torch.cuda.synchronize()
        n = x["q"].shape[2]
        qi = torch.arange(n, device="cuda")[:, None]
        ki = torch.arange(n, device="cuda")[None, :]
        if provider == "tessera-full-causal":
            mask = ki <= qi
        else:
            mask = (ki <= qi) & (qi - ki < window)
        ref = torch.nn.functional.scaled_dot_product_attention(x["q"], x["k"], x["v"], attn_mask=mask)
        harness.check_close(out, ref, 1e-2, f"{provider} attention")

    results = harness.run_benchmark("fusion_attention", cases(),
                                    {"tessera-window": windowed, "tessera-window-no-skip": masked_only,
                                     "tessera-full-causal": full}, flops, options, check)
    print("(fusion_attention: the GB/s column above is GFLOP/s of the full causal problem)")
    return results


def run(options):
    only = set(options.only.split(",")) if options.only else {"elementwise", "gemm", "attention"}
    out = []
    if "elementwise" in only:
        out.append(elementwise_bench(options))
    if "gemm" in only:
        out.append(gemm_bench(options))
    if "attention" in only:
        out.append(attention_bench(options))
    return out


if __name__ == "__main__":
    ap = harness.parser(__doc__)
    ap.add_argument("--only", default="", help="comma-separated subset of elementwise,gemm,attention")
    ap.add_argument("--gemm-configs", default="",
                    help="GEMM part per config, fused and plain side by side: auto,BMxBNxBK/wW/sS,...")
    ap.add_argument("--gemm-dtypes", default="", help="comma-separated GEMM dtypes: fp16 (default), bf16")
    ap.add_argument("--gemm-epilogues", default="",
                    help="subset of bias_gelu,bias_gelu_tanh,bias,residual,row_scale (default bias_gelu,residual)")
    opts = harness.parse(ap)
    reason = harness.skip_reason()
    if reason:
        print(f"fusion benchmark skipped: {reason}")
        sys.exit(0)
    run(opts)
