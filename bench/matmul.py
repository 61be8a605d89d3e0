"""GEMM C = A @ B, fp16/bf16 in, fp32 accumulation: tessera's kernels/matmul.py
(tensor cores, mma.sync) vs torch.matmul (cuBLAS) vs Triton's tutorial matmul.
Reports TFLOP/s = 2*M*N*K / time.

    python3 bench/matmul.py [--quick] [--out DIR] [--providers tessera,torch,triton] [--backend llvm|nvrtc|both]

tessera runs with each back-end (--backend, default both): "tessera*" is LLVM's NVPTX
back-end, "tessera-nvrtc*" the NVRTC one (docs/nvrtc.md).
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import harness  # noqa: E402

SIZES = [4096, 8192]
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


def main(argv=None):
    import torch
    ap = harness.parser(__doc__)
    options = harness.parse(ap, argv)
    import os
    os.environ.setdefault("TESSERA_MMA", "1")  # tensor cores (the default; explicit here)
    import tessera
    from kernels.matmul import matmul_kernel
    from tessera.kernels._files import with_backend

    def launcher(kernel, a, b, c, block, warps, stages=None):
        M, K = a.shape
        N = b.shape[1]
        grid = (tessera.cdiv(M, block[0]) * tessera.cdiv(N, block[1]),)
        extra = {} if stages is None else {"num_stages": stages}
        return lambda: kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                    c.stride(0), c.stride(1), BLOCK_M=block[0], BLOCK_N=block[1],
                                    BLOCK_K=block[2], GROUP_M=8, num_warps=warps, **extra)

    providers = {}
    for name, backend in harness.tessera_backends(options):  # "tessera" (LLVM) and/or "tessera-nvrtc"
        kernel = with_backend(matmul_kernel, backend)
        providers[name] = lambda x, k=kernel: launcher(k, *x, (128, 128, 32), 8)
        providers[name.replace("tessera", "tessera_128x64x64w4")] = lambda x, k=kernel: launcher(k, *x, (128, 64, 64), 4)
    providers.update({
        "torch": lambda x: (lambda: torch.matmul(x[0], x[1], out=x[2])),
        "triton": lambda x: launcher(_triton(), *x, (128, 128, 32), 4, stages=4),
    })

    def check(x, name, fn):
        fn()
        torch.cuda.synchronize()
        ref = x[0].float() @ x[1].float()
        harness.check_close(x[2], ref, 1e-2, name)

    sizes = SIZES
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
        print(row["case"], " ".join(f"{p}={row['gbps'][p] / 1000:.1f}TFLOP/s" for p in row["gbps"]), row["errors"] or "")
    return results


if __name__ == "__main__":
    main()
