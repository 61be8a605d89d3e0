"""Compile time by block size (issue 32's cliff), on the CPU: an unmasked
BLOCK x BLOCK fp32 tile copy (tests/python/lang_kernels/big_tiles.py:copy_tile)
compiled source -> PTX by the tessera CLI, one child process per compile, for
BLOCK = 64 .. 1024, with each back-end. Reported per compile: the child's CPU
time (user + system, what a loaded machine does not inflate much), its wall time
and the PTX size. The elements grow 4x per row; compile time should grow about
as much (linear in the block), and stay <= 10 s at 512 and <= 60 s at 1024.

Pointers without a divisibility hint ("*fp32"): element-wise accesses, the worst
case (512 stores a thread at BLOCK = 256); --aligned adds "*fp32:16" rows (128-bit
accesses). No GPU needed.

    python3 bench/compile_time_blocks.py [--quick] [--backend llvm|nvrtc|both] [--aligned]
                                         [--blocks 64,128,...] [--timeout S] [--out DIR] [--json FILE]
"""
import json
import os
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import harness  # noqa: E402

KERNEL_FILE = ROOT / "tests" / "python" / "lang_kernels" / "big_tiles.py"


def cli():
    exe = pathlib.Path(os.environ.get("TESSERA_EXE", ROOT / "build" / "bin" / "tessera"))
    if not exe.exists():
        raise SystemExit(f"compile_time_blocks: no tessera CLI at {exe} (build first, or set TESSERA_EXE)")
    return exe


def compile_once(exe, block, backend, signature, timeout):
    """{'cpu_s', 'wall_s', 'ptx_bytes'} or {'error'} for one compile in a child process."""
    with tempfile.TemporaryDirectory(prefix="bench-blocks-") as tmp:
        out = pathlib.Path(tmp) / "k.ptx"
        args = [str(exe), "compile", str(KERNEL_FILE), "--kernel", "copy_tile", "--signature", signature,
                "--constexpr", f"BLOCK={block}", "--backend", backend, "-o", str(out)]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        try:
            proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"error": f"over {timeout} s"}
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode != 0:
            return {"error": proc.stderr.strip()[-300:]}
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return {"cpu_s": cpu, "wall_s": wall, "ptx_bytes": out.stat().st_size}


def run(options):
    exe = cli()
    # (bench/harness.py's main passes its own options: these three keep their defaults)
    chosen, aligned, timeout = (getattr(options, k, d) for k, d in (("blocks", ""), ("aligned", False), ("timeout", 600)))
    blocks = [int(b) for b in chosen.split(",")] if chosen else \
        ([64, 128, 256, 512] if options.quick else [64, 128, 256, 512, 1024])
    signatures = ["*fp32,*fp32"] + (["*fp32:16,*fp32:16"] if aligned else [])
    results = {"benchmark": "compile_time_blocks", "kernel": "big_tiles.py:copy_tile",
               "date": time.strftime("%Y-%m-%d %H:%M"), "rows": []}
    print(f"\ncompile time by block size: BLOCK x BLOCK fp32 tile copy, source -> PTX (sm_90a, 4 warps), "
          f"one CLI process per compile, {results['date']}")
    print(f"{'back-end':<8} {'signature':<18} {'BLOCK':>6} {'elements':>9} {'/thread':>8} {'cpu s':>8} "
          f"{'wall s':>8} {'PTX KB':>8} {'cpu x':>7}")
    for _, backend in harness.tessera_backends(options):
        for signature in signatures:
            previous = None
            for block in blocks:
                r = compile_once(exe, block, backend, signature, timeout)
                r.update(backend=backend, signature=signature, block=block, elements=block * block)
                results["rows"].append(r)
                head = f"{backend:<8} {signature:<18} {block:>6} {block * block:>9} {block * block // 128:>8}"
                if "error" in r:
                    print(f"{head}  FAILED: {r['error']}", flush=True)
                    previous = None
                    continue
                growth = f"{r['cpu_s'] / previous:7.1f}" if previous else f"{'':>7}"
                previous = max(r["cpu_s"], 1e-3)
                print(f"{head} {r['cpu_s']:8.2f} {r['wall_s']:8.2f} {r['ptx_bytes'] / 1024:8.0f} {growth}",
                      flush=True)
    print("cpu x: CPU time over the previous row's (the elements grow 4x a row; linear = about 4)")
    out = pathlib.Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "compile_time_blocks.json").write_text(json.dumps(results, indent=1))
    return [results]


if __name__ == "__main__":
    ap = harness.parser(__doc__)
    ap.add_argument("--aligned", action="store_true", help="also 16-byte aligned pointers (128-bit accesses)")
    ap.add_argument("--blocks", default="", help="comma-separated BLOCK values (default 64..1024)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds one compile may take")
    opts = harness.parse(ap)
    res = run(opts)
    if opts.json:
        pathlib.Path(opts.json).write_text(json.dumps(res, indent=1))
