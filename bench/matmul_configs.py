"""Sweeps kernels/matmul.py over block shapes, warps and pipeline stages at
one size (default 4096^3, fp16 and bf16), checks each against torch, and
prints TFLOP/s next to cuBLAS: the data behind the configuration table.

    python3 bench/matmul_configs.py [--size N] [--dtypes float16,bfloat16] [--configs BMxBNxBK/wW/sS,...] [--user]

--user adds, per configuration, bench/user_matmul.py: the same GEMM written
the way a Triton user writes it (pointer blocks advanced each step, % N
wrapping), which must be as fast as the bundled kernel.
"""
import argparse
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import harness  # noqa: E402

DEFAULT_CONFIGS = [
    "128x128x32/w4/s3", "128x128x32/w4/s4", "128x128x32/w8/s3", "128x128x32/w8/s4",
    "128x128x64/w4/s3", "128x128x64/w8/s3", "128x256x32/w8/s3", "128x256x32/w8/s4",
    "256x128x32/w8/s3", "128x64x64/w4/s3", "64x128x64/w4/s4", "128x256x64/w8/s3",
]


def parse_config(text):
    block, warps, stages = text.split("/")
    bm, bn, bk = (int(v) for v in block.split("x"))
    return (bm, bn, bk), int(warps[1:]), int(stages[1:])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--dtypes", default="float16,bfloat16")
    ap.add_argument("--configs", default=",".join(DEFAULT_CONFIGS))
    ap.add_argument("--user", action="store_true", help="also time bench/user_matmul.py")
    args = ap.parse_args(argv)
    import torch
    import tessera
    from kernels.matmul import matmul_kernel
    from user_matmul import user_matmul
    kernels = [("", matmul_kernel)] + ([("user ", user_matmul)] if args.user else [])

    n = args.size
    print(f"matmul configurations, {n}^3, {harness.device_description()}")
    for dt in args.dtypes.split(","):
        d = getattr(torch, dt)
        a = torch.randn((n, n), device="cuda").to(d)
        b = torch.randn((n, n), device="cuda").to(d)
        ref = a.float() @ b.float()
        flops = 2 * n ** 3
        c = torch.empty((n, n), device="cuda", dtype=d)
        cublas = flops / harness.bench(lambda: torch.matmul(a, b, out=c), reps=20)["median_ms"] / 1e9
        print(f"{dt}: cuBLAS {cublas:.1f} TFLOP/s")
        for text in args.configs.split(","):
            for label, kernel in kernels:
                time_config(kernel, label + text, a, b, ref, flops, cublas, d, n)


def time_config(kernel, text, a, b, ref, flops, cublas, d, n):
    import torch
    import tessera
    block, warps, stages = parse_config(text.split()[-1])
    c = torch.full((n, n), float("nan"), device="cuda", dtype=d)
    grid = (tessera.cdiv(n, block[0]) * tessera.cdiv(n, block[1]),)

    def run():
        kernel[grid](a, b, c, n, n, n, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                     c.stride(0), c.stride(1), BLOCK_M=block[0], BLOCK_N=block[1],
                     BLOCK_K=block[2], GROUP_M=8, num_warps=warps, num_stages=stages)
    try:
        run()
        torch.cuda.synchronize()
        err = ((c.float() - ref).norm() / ref.norm()).item()
        ms = harness.bench(run, reps=20)["median_ms"]
    except Exception as e:  # a config that does not compile or launch is reported, not fatal
        print(f"  {text:>23}: failed: {str(e).splitlines()[0][:160]}")
        return
    tf = flops / ms / 1e9
    flag = "" if err <= 1e-2 else f"  WRONG (rel. err {err:.2e})"
    print(f"  {text:>23}: {tf:7.1f} TFLOP/s  {100 * tf / cublas:5.1f}% of cuBLAS  rel.err {err:.1e}{flag}")

if __name__ == "__main__":
    main()
