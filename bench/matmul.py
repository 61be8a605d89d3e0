"""GEMM C = A @ B, fp16/bf16 in, fp32 accumulation: tessera.kernels.matmul
(kernels/matmul.py on tensor cores, mma.sync + cp.async) vs torch.matmul
(cuBLAS) vs Triton's tutorial matmul. Reports TFLOP/s = 2*M*N*K / time.
Square sizes M=N=K in 1024, 2048, 4096, 8192 (--quick: 4096 and 8192, fewer runs).

Providers:
  tessera            tessera.kernels.matmul(a, b, out=c, autotune=False): the default config
                     (matmul_configs()[0]: 128x256x64/w8/s4 on sm_90a, else 128x128x32/w4/s3), wrapper overhead included
  tessera_autotuned  tessera.kernels.matmul(a, b, out=c, autotune=True): tuned per size and dtype
                     before timing (the winner is printed and stored in the JSON; tuning results
                     persist in the tessera cache, so a second run tunes nothing)
  tessera_cpasync    the wrapper with tma=False: the cp.async kernel where TMA would apply (sm_90a)
  tessera_raw        matmul_kernel[grid](...) with the default config (no wrapper)
  tessera_persistent the wrapper with persistent=True: matmul_tma_persistent_kernel, the default config
                     (3 stages), as many programs as SMs looping over the tiles, a producer warpgroup
                     feeding one TMA ring across them (sm_90a, docs/tma.md)
  tessera_tma_raw    matmul_tma_kernel[grid](...) (sm_90a), the default config, descriptors made once
  tessera_tma_store_raw  matmul_tma_store_kernel: the same with C written by a TMA store (desc.store)
  tessera_tma_ws_raw matmul_tma_kernel with WARP_SPECIALIZE=True: a producer warpgroup issues the
                     copies (num_warps + 4 warps, docs/tma.md)
  tessera_persistent_ws_raw  matmul_tma_persistent_kernel with WARP_SPECIALIZE=True at 128x256x64/w8/s3
                     (the ring runs across the tiles and stays allocated through the store: 3 stages)
  torch, triton      cuBLAS; Triton's tutorial kernel at 128x128x32, 4 warps, 4 stages
  triton_wide        the same Triton kernel at 128x256x64, 8 warps, 3 stages (its Hopper pick)

  tessera-nvrtc_raw  tessera_raw through the NVRTC back-end (docs/nvrtc.md; --backend llvm|nvrtc|both,
                     default both)

    python3 bench/matmul.py [--quick] [--out DIR] [--providers tessera,tessera_autotuned,torch,triton]
                            [--backend llvm|nvrtc|both]

--fp8 times fp8 GEMMs instead (benchmark "matmul_fp8", 4096^3 and 8192^3, e4m3 x e4m3,
fp32 accumulation, bf16 C, scales 1): matmul_kernel[grid] at the default config, whose dot
takes Hopper's native fp8 wgmma (docs/tensor-cores.md), against cuBLASLt:
  tessera_fp8         B row-major (K x N): the dot stages B into its K-major tile itself
  tessera_fp8_colb    B column-major (the layout torch._scaled_mm takes): B copied by cp.async as it is
  torch_scaled_mm     torch._scaled_mm(a, b_colmajor, 1, 1, out_dtype=bf16) (promoted accumulation)
  torch_scaled_mm_fast  the same with use_fast_accum=True (fp8 accumulation, as tessera's default)
and tessera.kernels.scaled_matmul (B column-major: the TMA kernel on sm_90a), each at its table's
first config (autotune=False) with scales of each granularity, beside cuBLASLt and Triton:
  tessera_scaled           per-tensor scales (scale_a, scale_b of one element)
  tessera_scaled_rowwise   per-row of A and per-column of B ((M, 1) and (1, N))
  tessera_scaled_block     DeepSeek-V3 blocks: (M, K/128) for A, (K/128, N/128) for B (the table's
                           first: 128x128x128/w8/s3/pair, two K blocks a step, PAIR_K)
  tessera_scaled_block_single  the same at 128x128x128/w8/s4, one K block a step (the default before)
  tessera_scaled_block_persistent  blocks, persistent=True (producer warpgroup) at the table's first
  tessera_scaled_block_ws  blocks, the table's first with WARP_SPECIALIZE=True (a producer warpgroup
                           issues the copies; not persistent)
  tessera_scaled_persistent  per-tensor, persistent=True (a producer warpgroup, one program an SM)
  torch_scaled_mm_rowwise  torch._scaled_mm with (M, 1) / (1, N) scales
  triton_scaled_block      kernels/matmul.py's scaled_matmul_kernel compiled by Triton (the same
                           text, `tessera` bound to triton) with the same blocks at 128x128x128/w8/s4
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import harness  # noqa: E402

SIZES = [1024, 2048, 4096, 8192]
QUICK_SIZES = [4096, 8192]
DTYPES = ["float16", "bfloat16"]
_triton_kernel = None


def _triton():
    global _triton_kernel
    if _triton_kernel is None:
        import triton
        import triton.language as tl

        @triton.jit
        def kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
            pid = tl.program_id(0)
            num_pid_m = tl.cdiv(M, BLOCK_M)
            num_pid_n = tl.cdiv(N, BLOCK_N)
            group = GROUP_M * num_pid_n
            first = (pid // group) * GROUP_M
            gsize = min(num_pid_m - first, GROUP_M)
            pid_m = first + ((pid % group) % gsize)
            pid_n = (pid % group) // gsize
            rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
            rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
            rk = tl.arange(0, BLOCK_K)
            a_ptrs = a_ptr + rm[:, None] * sam + rk[None, :] * sak
            b_ptrs = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for k in range(0, tl.cdiv(K, BLOCK_K)):
                a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BLOCK_K, other=0.0)
                b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BLOCK_K, other=0.0)
                acc = tl.dot(a, b, acc)
                a_ptrs += BLOCK_K * sak
                b_ptrs += BLOCK_K * sbk
            c_ptrs = c_ptr + rm[:, None] * scm + rn[None, :] * scn
            tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))
        _triton_kernel = kernel
    return _triton_kernel


_triton_scaled = None


def _triton_scaled_module():
    """kernels/matmul.py compiled by Triton: the same text with `tessera` bound to triton (Triton's
    @jit reads the source file, so the text is written to a temporary file)."""
    global _triton_scaled
    if _triton_scaled is None:
        import importlib.util
        import tempfile
        text = (pathlib.Path(__file__).resolve().parents[1] / "kernels" / "matmul.py").read_text()
        text = text.replace("import tessera.language as tl", "import triton.language as tl")
        text = text.replace("import tessera\n", "import triton as tessera\n")
        path = pathlib.Path(tempfile.mkdtemp()) / "triton_matmul.py"
        path.write_text(text)
        spec = importlib.util.spec_from_file_location("triton_matmul", path)
        _triton_scaled = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(_triton_scaled)
    return _triton_scaled


def fp8_main(options):
    """The --fp8 benchmark (see the module docstring)."""
    import torch
    import tessera
    import tessera.kernels as tk
    from kernels.matmul import matmul_kernel
    first = tk.matmul_configs()[0]
    cfg = first.kwargs
    one = torch.ones((), device="cuda", dtype=torch.float32)

    def tessera_fp8(x, col_b=False):
        a, b, c = x[0], (x[3] if col_b else x[1]), x[2]
        M, K = a.shape
        N = b.shape[1]
        grid = (tessera.cdiv(M, cfg["BLOCK_M"]) * tessera.cdiv(N, cfg["BLOCK_N"]),)
        return lambda: matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                           c.stride(0), c.stride(1), BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"],
                                           BLOCK_K=cfg["BLOCK_K"], GROUP_M=8, num_warps=first.num_warps,
                                           num_stages=first.num_stages)

    def scaled_mm(x, fast):
        return lambda: torch._scaled_mm(x[0], x[3], scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                        use_fast_accum=fast)

    def scales(x, granularity):
        """(scale_a, scale_b) of a case; powers of two, so the reference is exact."""
        return {"tensor": (one, one), "row": (x[4], x[5]), "block": (x[6], x[7])}[granularity]

    first_block = tk.scaled_matmul_configs("block")[0]
    block_ws = tessera.Config(dict(first_block.kwargs, WARP_SPECIALIZE=True), num_warps=first_block.num_warps,
                              num_stages=first_block.num_stages)

    def tessera_scaled(x, granularity, persistent=False, config=None):
        sa, sb = scales(x, granularity)
        if config is not None:
            return lambda: tk.scaled_matmul(x[0], x[3], sa, sb, torch.bfloat16, out=x[2], config=config,
                                            persistent=persistent)
        return lambda: tk.scaled_matmul(x[0], x[3], sa, sb, torch.bfloat16, out=x[2], autotune=False,
                                        persistent=persistent)

    def scaled_mm_rowwise(x):
        return lambda: torch._scaled_mm(x[0], x[3], scale_a=x[4], scale_b=x[5], out_dtype=torch.bfloat16)

    def triton_scaled_block(x):
        module = _triton_scaled_module()
        a, b, c = x[0], x[3], x[2]
        sa, sb = x[6], x[7]
        M, K = a.shape
        N = b.shape[1]
        config = tk.parse_matmul_config("128x128x128/w8/s4")  # one K block a step, as a Triton user writes it
        kw = config.kwargs
        grid = (tessera.cdiv(M, kw["BLOCK_M"]) * tessera.cdiv(N, kw["BLOCK_N"]),)
        return lambda: module.scaled_matmul_kernel[grid](
            a, b, c, sa, sb, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
            sa.stride(0), sa.stride(1), sb.stride(0), sb.stride(1), 1, *([0] * 12), SCALING="block", SCALE_K=128,
            SCALE_N=128, **config.all_kwargs())

    providers = {
        "tessera_fp8": lambda x: tessera_fp8(x),
        "tessera_fp8_colb": lambda x: tessera_fp8(x, col_b=True),
        "torch_scaled_mm": lambda x: scaled_mm(x, False),
        "torch_scaled_mm_fast": lambda x: scaled_mm(x, True),
        "tessera_scaled": lambda x: tessera_scaled(x, "tensor"),
        "tessera_scaled_rowwise": lambda x: tessera_scaled(x, "row"),
        "tessera_scaled_block": lambda x: tessera_scaled(x, "block"),
        "tessera_scaled_block_single": lambda x: tessera_scaled(x, "block", config="128x128x128/w8/s4"),
        "tessera_scaled_block_persistent": lambda x: tessera_scaled(x, "block", persistent=True),
        "tessera_scaled_block_ws": lambda x: tessera_scaled(x, "block", config=block_ws),
        "tessera_scaled_persistent": lambda x: tessera_scaled(x, "tensor", persistent=True),
        "torch_scaled_mm_rowwise": scaled_mm_rowwise,
        "triton_scaled_block": triton_scaled_block,
    }
    granularity_of = {"tessera_scaled_rowwise": "row", "torch_scaled_mm_rowwise": "row",
                      "tessera_scaled_block": "block", "tessera_scaled_block_single": "block",
                      "tessera_scaled_block_persistent": "block", "tessera_scaled_block_ws": "block",
                      "triton_scaled_block": "block"}

    def check(x, name, fn):
        x[2].fill_(float("nan"))
        out = fn()
        torch.cuda.synchronize()
        got = out if isinstance(out, torch.Tensor) else x[2]
        granularity = granularity_of.get(name, "tensor")
        sa, sb = scales(x, granularity)
        a, b = x[0].float(), x[1].float()
        K, N = a.shape[1], b.shape[1]
        if granularity == "block":
            a = a * sa.repeat_interleave(128, 1)[:, :K]
            b = b * sb.repeat_interleave(128, 0).repeat_interleave(128, 1)[:K, :N]
        elif granularity == "row":
            a, b = a * sa, b * sb
        harness.check_close(got, a @ b, 1e-2, name)

    cases = []
    for n in QUICK_SIZES:
        def make(n=n):
            a = torch.randn((n, n), device="cuda").to(torch.float8_e4m3fn)
            b = torch.randn((n, n), device="cuda").to(torch.float8_e4m3fn)
            kb = n // 128

            def pow2(*shape):
                return torch.exp2(torch.randint(-2, 3, shape, device="cuda").float())
            return (a, b, torch.empty((n, n), device="cuda", dtype=torch.bfloat16), b.t().contiguous().t(),
                    pow2(n, 1), pow2(1, n), pow2(n, kb), pow2(kb, kb))
        cases.append((f"{n}^3 float8_e4m3fn", make))
    results = harness.run_benchmark("matmul_fp8", cases, providers,
                                    lambda x: 2 * x[0].shape[0] * x[0].shape[1] * x[1].shape[1], options, check=check)
    for row in results["rows"]:
        print(row["case"], " ".join(f"{p}={row['gbps'][p] / 1000:.1f}TFLOP/s" for p in row["gbps"]),
              row["errors"] or "")
    return results


def main(argv=None):
    import torch
    ap = harness.parser(__doc__)
    ap.add_argument("--fp8", action="store_true", help="fp8 GEMMs against torch._scaled_mm instead")
    options = harness.parse(ap, argv)
    if options.fp8:
        return fp8_main(options)
    import os
    os.environ.setdefault("TESSERA_MMA", "1")  # tensor cores (the default; explicit here)
    import tessera
    import tessera.kernels as tk
    from kernels.matmul import matmul_kernel
    default = tk.matmul_configs()[0].kwargs
    from tessera.kernels._files import with_backend

    def launcher(kernel, a, b, c, block, warps, stages=None):
        M, K = a.shape
        N = b.shape[1]
        grid = (tessera.cdiv(M, block[0]) * tessera.cdiv(N, block[1]),)
        extra = {} if stages is None else {"num_stages": stages}
        return lambda: kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                    c.stride(0), c.stride(1), BLOCK_M=block[0], BLOCK_N=block[1],
                                    BLOCK_K=block[2], GROUP_M=8, num_warps=warps, **extra)

    tuned = {}  # "4096^3 float16" -> the autotuned config's name

    def autotuned(x):
        tk.matmul(x[0], x[1], out=x[2], autotune=True)  # tunes now (or loads the stored result), not in the timing
        torch.cuda.synchronize()
        name = tk.matmul_config_name(tk.matmul_last_autotuner().best_config)
        tuned[f"{x[0].shape[0]}^3 {str(x[0].dtype).replace('torch.', '')}"] = name
        print(f"    tessera_autotuned: {name}", flush=True)
        return lambda: tk.matmul(x[0], x[1], out=x[2], autotune=True)

    first = tk.matmul_configs()[0]
    providers = {
        "tessera": lambda x: (lambda: tk.matmul(x[0], x[1], out=x[2], autotune=False)),
        "tessera_autotuned": autotuned,
        "tessera_cpasync": lambda x: (lambda: tk.matmul(x[0], x[1], out=x[2], autotune=False, tma=False)),
        "tessera_persistent": lambda x: (lambda: tk.matmul(x[0], x[1], out=x[2], autotune=False, persistent=True)),
        "tessera_raw": lambda x: launcher(matmul_kernel, *x, (default["BLOCK_M"], default["BLOCK_N"],
                                                              default["BLOCK_K"]), first.num_warps,
                                          stages=first.num_stages),
    }
    for name, backend in harness.tessera_backends(options):
        if backend != "llvm":  # the same raw launch through the other back-end
            providers[name + "_raw"] = lambda x, k=with_backend(matmul_kernel, backend): launcher(
                k, *x, (default["BLOCK_M"], default["BLOCK_N"], default["BLOCK_K"]), first.num_warps,
                stages=first.num_stages)
    if tk.matmul_configs() is tk.HOPPER_MATMUL_CONFIGS:
        from kernels.matmul import matmul_tma_kernel, matmul_tma_persistent_kernel, matmul_tma_store_kernel

        def tma_raw(x, store_c=False, warp_specialize=False, persistent=False):
            """The default config's TMA kernel on descriptors made once; store_c: C through a
            descriptor too (matmul_tma_store_kernel), else through its pointer."""
            a, b, c = x
            M, K = a.shape
            N = b.shape[1]
            bm, bn, bk = default["BLOCK_M"], default["BLOCK_N"], default["BLOCK_K"]
            a_desc = tessera.TensorDescriptor.from_tensor(a, [bm, bk])
            b_desc = tessera.TensorDescriptor.from_tensor(b, [bk, bn])
            grid = (tessera.cdiv(M, bm) * tessera.cdiv(N, bn),)
            meta = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=first.num_warps,
                        num_stages=first.num_stages)
            if warp_specialize:
                meta["WARP_SPECIALIZE"] = True
            if persistent:
                from tessera import _ext
                sms = _ext.require().device_properties(-1)["multiprocessor_count"]
                meta.update(NUM_SMS=sms, num_stages=3)
                return lambda: matmul_tma_persistent_kernel[(min(sms, grid[0]),)](
                    a_desc, b_desc, c, M, N, K, c.stride(0), c.stride(1), **meta)
            if store_c:
                c_desc = tessera.TensorDescriptor.from_tensor(c, [bm, bn])
                return lambda: matmul_tma_store_kernel[grid](a_desc, b_desc, c_desc, M, N, K, **meta)
            return lambda: matmul_tma_kernel[grid](a_desc, b_desc, c, M, N, K, c.stride(0), c.stride(1), **meta)
        providers["tessera_tma_raw"] = tma_raw
        providers["tessera_tma_store_raw"] = lambda x: tma_raw(x, store_c=True)
        providers["tessera_tma_ws_raw"] = lambda x: tma_raw(x, warp_specialize=True)
        providers["tessera_persistent_ws_raw"] = lambda x: tma_raw(x, warp_specialize=True, persistent=True)
    providers.update({
        "torch": lambda x: (lambda: torch.matmul(x[0], x[1], out=x[2])),
        "triton": lambda x: launcher(_triton(), *x, (128, 128, 32), 4, stages=4),
        "triton_wide": lambda x: launcher(_triton(), *x, (128, 256, 64), 8, stages=3),
    })

    def check(x, name, fn):
        x[2].fill_(float("nan"))  # the providers share the output: each must write all of it
        fn()
        torch.cuda.synchronize()
        ref = x[0].float() @ x[1].float()
        harness.check_close(x[2], ref, 1e-2, name)

    sizes = QUICK_SIZES if options.quick else SIZES
    cases = []
    for n in sizes:
        for dt in DTYPES:
            def make(n=n, dt=dt):
                d = getattr(torch, dt)
                return (torch.randn((n, n), device="cuda").to(d), torch.randn((n, n), device="cuda").to(d),
                        torch.empty((n, n), device="cuda", dtype=d))
            cases.append((f"{n}^3 {dt}", make))
    # "bytes" = flops, so the harness's GB/s column reads GFLOP/s
    results = harness.run_benchmark("matmul", cases, providers, lambda x: 2 * x[0].shape[0] * x[0].shape[1] * x[1].shape[1],
                                    options, check=check)
    for row in results["rows"]:
        if row["case"] in tuned:
            row["autotuned_config"] = tuned[row["case"]]
        print(row["case"], " ".join(f"{p}={row['gbps'][p] / 1000:.1f}TFLOP/s" for p in row["gbps"]),
              row["errors"] or "", f"(autotuned: {tuned[row['case']]})" if row["case"] in tuned else "")
    harness.write_outputs(results, options)  # again, with the autotuned configs
    return results


if __name__ == "__main__":
    main()
