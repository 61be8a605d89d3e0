"""The disk cache at scale, on the CPU (no GPU needed): what a cache of 50,000 entries adds to a miss
(compile and store) and to a hit (read one entry), against the same keys in an empty cache.

A store keeps the size cap through a running total (DIR/kernels.usage, docs/runtime.md), so neither
a miss nor a hit should look at the other entries. The two caches are used in turn, key by key, so
that the load of a shared machine falls on both alike. Entries of the full cache are 100-byte files
(only their number matters). Reported: medians over the keys and rounds, and the median of the
paired ratios full / empty (each key in both caches back to back, which cancels slow drifts of load).

    python3 bench/cache_scale.py [--entries 50000] [--rounds 3] [--json FILE]
"""
import argparse
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "python"), str(ROOT)]

import tessera  # noqa: E402
from kernels.vector_add import add_kernel  # noqa: E402

SIGNATURES = ("*fp32:16,*fp32:16,*fp32:16,i32", "*fp32,*fp32,*fp32,i32", "*fp32:16,*fp32:16,*fp32:16,i64")
BLOCKS = (32, 64, 128, 256, 512, 1024, 2048, 4096)


def fill(cache, count):
    payload = b"x" * 100
    for i in range(count):
        digest = f"{i:064x}"[::-1]
        d = cache / "kernels" / digest[:2]
        d.mkdir(parents=True, exist_ok=True)
        (d / (digest + ".tsc")).write_bytes(payload)


def timed_compile(cache, signature, block, warps):
    os.environ["TESSERA_CACHE_DIR"] = str(cache)  # read by the C++ side on each use
    t = time.perf_counter()
    tessera.compile(add_kernel, signature=signature, constexprs={"BLOCK_SIZE": block}, num_warps=warps)
    return time.perf_counter() - t


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--entries", type=int, default=50_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    results = {"miss": {"empty": [], "full": []}, "hit": {"empty": [], "full": []}}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            caches = {"empty": pathlib.Path(tmp) / f"empty{r}", "full": pathlib.Path(tmp) / f"full{r}"}
            fill(caches["full"], args.entries)
            for cache in caches.values():  # the first store counts what is there (once per cache)
                timed_compile(cache, SIGNATURES[0], 16, 4)
            keys = [(s, b, w) for s in SIGNATURES for b in BLOCKS for w in (4, 8) if b >= 32 * w // 4]
            stats0 = tessera._C.cache_stats()
            for kind in ("miss", "hit"):
                for i, key in enumerate(keys):
                    for name in (("empty", "full") if (i + r) % 2 else ("full", "empty")):
                        results[kind][name].append(timed_compile(caches[name], *key))
            stats = tessera._C.cache_stats()
            assert stats["hits"] - stats0["hits"] == 2 * len(keys), "a second compile was not a disk hit"
            assert stats["sweeps"] == stats0["sweeps"], "a store walked the cache"
    report = {}
    for kind in ("miss", "hit"):
        empty = statistics.median(results[kind]["empty"]) * 1e3
        full = statistics.median(results[kind]["full"]) * 1e3
        paired = statistics.median(f / e for f, e in zip(results[kind]["full"], results[kind]["empty"]))
        report[kind] = {"empty_ms": empty, "full_ms": full, "paired_ratio": paired, "n": len(results[kind]["full"])}
        print(f"{kind:5s} empty cache {empty:8.3f} ms   {args.entries} entries {full:8.3f} ms   "
              f"paired full / empty {paired:.3f}   ({len(results[kind]['full'])} each)")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
