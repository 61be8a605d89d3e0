"""Candidate softmax kernels for the long bf16 rows (issue 5), measured side by side in one process.

    python3 bench/softmax_variants.py [--quick] [--reps N] [--only SUBSTR,...] [--dtypes bfloat16,float32]
                                      [--shapes 4096x16384,...] [--json FILE]

Every variant x {bf16, fp32} x the four benchmark shapes of bench/softmax.py, plus
tessera.kernels.softmax as shipped ("shipped"), torch.softmax, Triton's fused softmax
(bench/softmax.py's, when triton imports) and y.copy_(x) (the ceiling). Each output is
checked against torch.softmax in float64 before it is timed (a wrong variant raises at
once: no table is better than a wrong one). Timing is bench/harness.py's (CUDA events, L2
flushed before each run, median). The table printed last: GB/s (read + written) and % of copy.

The variants (candidate kernels at the end of kernels/softmax.py; "persistent" = a grid of P programs per SM looping over rows,
P given or from the compiled kernel's registers: "occ"):

  shipped        tessera.kernels.softmax today (register kernel, one program per row; online
                 two-sweep kernel for bf16 rows of 16384 and 32768: python/tessera/kernels/softmax.py).
  persist        (b) kernels/softmax.py's register kernel on a persistent grid, no prefetch.
  prefetch       (a) persistent register kernel that issues the NEXT row's load (kept in the
                 input dtype, i.e. bf16, in registers) before the current row's reductions,
                 so DRAM latency overlaps the max/sum/exp/store of the current row.
  prefetch2      (a) the same two rows ahead (two rows' loads in flight per program).
  prefetch-fma   (a)+(d) prefetch with the exponent as one FMA, x*log2(e) - max*log2(e), and
                 streaming cache hints (loads evict_first, stores .cs: the data is used once).
  packed         (d) bf16 only: prefetch, with the row read, carried and written as 32-bit words
                 holding two bf16 (widened by a shift / a mask where used, so the prefetched row
                 takes half the registers), the output packed back into words.
  online-pf      (c) the online two-sweep kernel with the next column block's load issued
                 before the current block is reduced (both sweeps), one program per row.
  online-pf-p    (c) the same on a persistent grid.
  online         kernels/softmax.py's online kernel with other blocks and warps, one program per row.
  online-keep    the online kernel with KEEP_LAST: the row's last block is loaded first, kept in
                 registers and written from them, so only the blocks before it are read back from L2
                 (rNN: a register cap, maxnreg). What bf16 rows of 32768 ship with (b16384 w16 r64).

Set-up on the GPU machine (after tests/gpu/run.sh built the extension), from the repository root:

    TESSERA_EXT_DIR=$PWD/build-gpu-py/python/tessera PYTHONPATH=$PWD/python python3 bench/softmax_variants.py
"""
import argparse
import math
import pathlib
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import harness  # noqa: E402  (puts python/ and the repository root on sys.path)

import tessera  # noqa: E402

SHAPES = [(16384, 1024), (8192, 4096), (4096, 16384), (2048, 32768)]
DTYPES = ["bfloat16", "float32"]


def _module():
    from tessera.kernels import _files
    return _files.load("softmax")  # kernels/softmax.py (the same module tessera.kernels.softmax uses)


# ----------------------------------------------------------------- variants
# A config: (variant, kernel name, constexprs, num_warps, programs) where programs is
# "rows" (one per row), an int P (P programs per SM) or "occ" (as many per SM as registers allow).

KERNELS = {
    "register": lambda: _module().softmax_kernel,
    "online": lambda: _module().softmax_online_kernel,
    "prefetch": lambda: _module().softmax_prefetch_kernel,
    "prefetch2": lambda: _module().softmax_prefetch2_kernel,
    "packed": lambda: _module().softmax_packed_kernel,
    "online_prefetch": lambda: _module().softmax_online_prefetch_kernel,
}


def _warps_for(n_cols, size, per_thread):
    """num_warps so that each thread holds about per_thread elements of the row (1..32 warps)."""
    return max(1, min(32, n_cols // (32 * per_thread)))


def configs(n_cols, dtype):
    """Every (variant, kernel, constexprs, num_warps, programs) measured for rows of n_cols (a power of 2)."""
    size = 2 if dtype == "bfloat16" else 4
    out = []
    # elements per thread around the shipped table's choice: 16-bit ~32, fp32 ~16 (x2 for long rows).
    ept = [32, 64] if size == 2 else [16, 32]
    if n_cols >= 16384:
        ept = [16, 32, 64] if size == 2 else [16, 32]
    warps = sorted({_warps_for(n_cols, size, e) for e in ept})
    for w in warps:
        for p in ("occ",):
            out.append(("persist", "register", {"BLOCK_SIZE": n_cols}, w, p))
        for p in (1, 2, "occ"):
            out.append(("prefetch", "prefetch", {"BLOCK_SIZE": n_cols}, w, p))
        out.append(("prefetch2", "prefetch2", {"BLOCK_SIZE": n_cols}, w, "occ"))
        out.append(("prefetch-fma", "prefetch", {"BLOCK_SIZE": n_cols, "FMA_EXP": True, "STREAM": True}, w, "occ"))
        if size == 2:
            out.append(("packed", "packed", {"BLOCK_SIZE": n_cols}, w, "occ"))
    if n_cols >= 16384:
        # the shipped online kernel with other blocks, warps and register caps; "online-keep": its last
        # block kept in registers between the sweeps (KEEP_LAST, what bf16 rows of 32768 ship with)
        for block, w in ((8192, 8), (16384, 16)):
            if block <= n_cols and (size == 2 or block == 16384):
                out.append(("online", "online", {"BLOCK_SIZE": block}, w, "rows"))
        for block, w, maxnreg in ((8192, 8, None), (8192, 8, 64), (8192, 16, None), (16384, 16, 64),
                                  (16384, 16, None)):
            if block < n_cols and (size == 2 or block == 16384):
                meta = {"BLOCK_SIZE": block, "KEEP_LAST": True}
                if maxnreg is not None:
                    meta["maxnreg"] = maxnreg
                out.append(("online-keep", "online", meta, w, "rows"))
    if n_cols >= 8192:
        for block, w in ((4096, 4), (4096, 8), (8192, 8), (8192, 16)):
            if block < n_cols and (size == 2 or block == 8192):
                out.append(("online-pf", "online_prefetch", {"BLOCK_SIZE": block}, w, "rows"))
                out.append(("online-pf-p", "online_prefetch", {"BLOCK_SIZE": block}, w, "occ"))
    # drop configs whose threads would not each hold at least one 16-byte vector
    return [c for c in out if c[2]["BLOCK_SIZE"] >= c[3] * 32 * (16 // size)]


def config_name(cfg):
    variant, _, meta, warps, programs = cfg
    block = meta["BLOCK_SIZE"]
    blk = "" if variant in ("persist", "prefetch", "prefetch2", "prefetch-fma", "packed") else f" b{block}"
    cap = f" r{meta['maxnreg']}" if "maxnreg" in meta else ""
    return f"{variant}{blk} w{warps}{cap} p{programs}"


def signature(dtype):
    t = {"bfloat16": "bf16", "float32": "fp32", "float16": "fp16"}[dtype]
    return f"*{t}:16,*{t}:16,i32:16,i32:16,i32,i32:16"


def compile_config(cfg, dtype, target=""):
    """tessera.compile of one config (target "" = the current GPU; "sm_90a" works without one)."""
    _, kname, meta, warps, _ = cfg
    meta = dict(meta)
    maxnreg = meta.pop("maxnreg", None)  # a launch option, not a constexpr
    return tessera.compile(KERNELS[kname](), signature=signature(dtype), constexprs=meta, num_warps=warps,
                           target=target, maxnreg=maxnreg)


def programs_per_sm(compiled, warps, props):
    """How many programs fit on one SM by registers (allocated per warp in 256-register units), threads
    and shared memory."""
    regs_per_warp = math.ceil(max(1, compiled.n_regs) * 32 / 256) * 256
    by_regs = getattr(props, "regs_per_multiprocessor", 65536) // (regs_per_warp * warps)
    by_threads = getattr(props, "max_threads_per_multi_processor", 2048) // (32 * warps)
    smem = getattr(props, "shared_memory_per_multiprocessor", 228 * 1024)
    by_smem = smem // compiled.metadata.shared if compiled.metadata.shared else 32
    return max(1, min(by_regs, by_threads, by_smem, 32))


# ---------------------------------------------------------------- running

def _check(y, ref, dtype, what):
    harness.check_close(y, ref, 1e-5 if dtype == "float32" else 1e-2, what)


def measure(options):
    import torch
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    sms = props.multi_processor_count
    have_triton = True
    try:
        sys.path.insert(0, str(HERE))
        import softmax as bench_softmax  # bench/softmax.py (Triton's kernel)
        import triton  # noqa: F401
    except Exception as e:  # noqa: BLE001
        have_triton = False
        print(f"(no Triton: {type(e).__name__}: {e})")
    import tessera.kernels as tk

    results = []  # (dtype, shape, name, gbps or None, note)
    compiled_cache = {}
    started = time.time()
    print(f"softmax variants on {harness.device_description()}, {time.strftime('%Y-%m-%d %H:%M')}; "
          f"{options.reps} runs, L2 flushed", flush=True)
    for dtype in options.dtypes:
        for shape in options.shapes:
            n_rows, n_cols = shape
            torch.manual_seed(0)
            x = torch.randn(shape, device="cuda", dtype=getattr(torch, dtype))
            y = torch.empty_like(x)
            ref = torch.softmax(x.double(), dim=-1)
            nbytes = 2 * x.numel() * x.element_size()
            case = f"{'bf16' if dtype == 'bfloat16' else 'fp32'} {n_rows}x{n_cols}"

            def timed(name, fn, check=True, note=""):
                try:
                    if check:
                        y.fill_(float("nan"))
                        fn()
                        torch.cuda.synchronize()
                        _check(y, ref, dtype, f"{case} {name}")
                    t = harness.bench(fn, warmup=options.warmup, reps=options.reps)
                    g = harness.gbps(nbytes, t["median_ms"])
                    results.append((case, name, g, note))
                    print(f"  {case:<18} {name:<34} {g:8.0f} GB/s {note}", flush=True)
                except AssertionError as e:  # a wrong result: kept out of the table, reported loudly, exit 1
                    results.append((case, name, None, f"WRONG: {e}"))
                    print(f"  {case:<18} {name:<34}    WRONG {e}  <<<<<<<<<<", flush=True)
                except Exception as e:  # noqa: BLE001 (a config that cannot run is reported, not fatal)
                    results.append((case, name, None, f"{type(e).__name__}: {e}"[:200]))
                    print(f"  {case:<18} {name:<34}     FAIL {type(e).__name__}: {e}"[:300], flush=True)

            timed_grids = set()
            timed("copy", lambda: y.copy_(x), check=False)
            timed("torch", lambda: torch.softmax(x, dim=-1), check=False)
            if have_triton:
                timed("triton", lambda: bench_softmax.triton_softmax(x, y))
            timed("shipped", lambda: tk.softmax(x, out=y))
            for cfg in configs(n_cols, dtype):
                name = config_name(cfg)
                if options.only and not any(s in name for s in options.only):
                    continue
                key = (cfg[1], tuple(sorted(cfg[2].items())), cfg[3], dtype)
                try:
                    if key not in compiled_cache:
                        k = compile_config(cfg, dtype)
                        compiled_cache[key] = (k, programs_per_sm(k, cfg[3], props))
                    k, occ = compiled_cache[key]
                except Exception as e:  # noqa: BLE001
                    results.append((case, name, None, f"compile: {type(e).__name__}: {e}"[:200]))
                    print(f"  {case:<18} {name:<34}     FAIL compile {e}"[:300], flush=True)
                    continue
                programs = cfg[4]
                if programs == "rows":
                    grid = n_rows
                else:
                    grid = min(n_rows, sms * (occ if programs == "occ" else programs))
                if (key, grid) in timed_grids:  # p1 / p2 / occ often give the same grid: time it once
                    continue
                timed_grids.add((key, grid))
                note = f"regs {k.n_regs} occ {occ} grid {grid}" + (f" spills {k.n_spills}" if k.n_spills else "")
                launch = k[(grid,)]
                timed(name, lambda launch=launch: launch(y, x, x.stride(0), y.stride(0), n_rows, n_cols),
                      note=note)
            del x, y, ref
            torch.cuda.empty_cache()
    print(f"(measured in {time.time() - started:.0f} s)")
    return results


PROVIDERS = ("copy", "torch", "triton", "shipped")


def family(name):
    """The variant a config name belongs to ("prefetch w8 p1" -> "prefetch")."""
    return name.split(" ")[0]


def _cell(g, copy, mark=""):
    if g is None:
        return f"{'FAIL':>17}"
    pct = f"{100 * g / copy:5.1f}%" if copy else "      "
    return f"{g:>9.0f} {pct}{mark:1}"


def table(results):
    """Two tables: every config (one row each), then, last, the best config of each variant per case."""
    cases = list(dict.fromkeys(r[0] for r in results))
    names = list(dict.fromkeys(r[1] for r in results))
    got = {(r[0], r[1]): r[2] for r in results}
    head = f"{'config':<30}" + "".join(f"{c:>17}" for c in cases)
    lines = ["", "every config: GB/s (read + written), % of copy; '-' not measured", head]
    for n in names:
        lines.append(f"{n:<30}" + "".join(_cell(got[(c, n)], got.get((c, "copy"))) if (c, n) in got
                                          else f"{'-':>17}" for c in cases))
    families = list(dict.fromkeys(family(n) for n in names))
    best = {}  # (case, family) -> (gbps, config)
    for (c, n), g in got.items():
        if g is not None and (best.get((c, family(n))) is None or g > best[(c, family(n))][0]):
            best[(c, family(n))] = (g, n)
    lines += ["", "softmax variants, best config of each per case: GB/s, % of copy "
              "(* = fastest tessera; '!' = below 90% of copy or slower than triton)", head.replace("config", "variant")]
    for f in families:
        cells = []
        for c in cases:
            b = best.get((c, f))
            if b is None:
                cells.append(f"{'FAIL' if any(family(n) == f for (cc, n) in got if cc == c) else '-':>17}")
                continue
            copy, triton = got.get((c, "copy")), got.get((c, "triton"))
            tessera_best = max((v for (cc, n), v in got.items() if cc == c and v is not None
                                and n not in ("copy", "torch", "triton")), default=None)
            mark = ""
            if f not in ("copy", "torch", "triton"):
                if b[0] == tessera_best:
                    mark = "*"
                elif (copy and b[0] < 0.9 * copy) or (triton and b[0] < triton):
                    mark = "!"
            cells.append(_cell(b[0], copy, mark))
        lines.append(f"{f:<30}" + "".join(cells))
    lines.append("best configs: " + "; ".join(f"{c}: {best[(c, f)][1]}" for c in cases for f in families
                                              if (c, f) in best and f not in PROVIDERS
                                              and best[(c, f)][0] == max(v[0] for (cc, ff), v in best.items()
                                                                         if cc == c and ff not in PROVIDERS[:3])))
    wrong = [f"{r[0]} {r[1]}" for r in results if r[3].startswith("WRONG")]
    if wrong:
        lines.append("WRONG RESULTS (not in the table): " + ", ".join(wrong))
    return "\n".join(lines)


def parse(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="10 runs, 3 warm-up runs")
    ap.add_argument("--only", default="", help="comma-separated substrings of config names to measure")
    ap.add_argument("--dtypes", default=",".join(DTYPES))
    ap.add_argument("--shapes", default=",".join(f"{r}x{c}" for r, c in SHAPES))
    ap.add_argument("--json", default="", help="also write the results here")
    o = ap.parse_args(argv)
    if o.quick:
        o.reps, o.warmup = 10, 3
    o.only = [s for s in o.only.split(",") if s]
    o.dtypes = [d for d in o.dtypes.split(",") if d]
    o.shapes = [tuple(int(v) for v in s.split("x")) for s in o.shapes.split(",") if s]
    return o


def run(options):
    """For bench/harness.py softmax_variants (its --reps/--warmup; every dtype and shape)."""
    o = parse([])
    o.reps, o.warmup = options.reps, options.warmup
    results = measure(o)
    print(table(results))
    return [{"benchmark": "softmax_variants", "device": harness.device_description(),
             "rows": [{"case": c, "config": n, "gbps": g, "note": note} for c, n, g, note in results]}]


def main(argv=None):
    options = parse(argv)
    reason = harness.skip_reason()
    if reason:
        print(f"softmax variants skipped: {reason}")
        return 0
    results = measure(options)
    if options.json:
        import json
        pathlib.Path(options.json).write_text(json.dumps(results, indent=1))
    print(table(results))
    return 1 if any(r[3].startswith("WRONG") for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
