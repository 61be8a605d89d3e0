"""Reads Nsight Compute source-page exports (ncu --import R --page source --print-source sass
--csv) and compares kernels by where their warps stall:

    python3 bench/profile/ncu_stalls.py A.csv [B.csv] [--top N]

For each file: the stall reasons over all samples, and the hottest loop (the instructions run
most often) cut at its HGMMAs, waits and barriers, with the samples of each piece. With two
files: samples and instructions run per opcode, A against B, largest differences first."""
import argparse
import collections
import csv


def load(path):
    rows = list(csv.reader(open(path)))
    header = next(i for i, r in enumerate(rows) if "Source" in r and "# Samples" in r)
    names = rows[header]
    col = {n: i for i, n in enumerate(names)}
    stalls = [n for n in names if n.startswith("stall_") and "Not Issued" not in n]
    out = []
    for r in rows[header + 1:]:
        if len(r) < len(names):
            continue
        num = lambda n: int(r[col[n]] or 0) if r[col[n]].strip().lstrip("-").isdigit() else 0  # noqa: E731
        out.append({"sass": r[col["Source"]].strip(), "samples": num("# Samples"),
                    "executed": num("Instructions Executed"), "stalls": {s: num(s) for s in stalls}})
    return out


def opcode(sass):
    words = sass.split()
    if not words:
        return ""
    return (words[1] if words[0].startswith("@") and len(words) > 1 else words[0]).split(".")[0]


def report(path, rows, top):
    total = sum(r["samples"] for r in rows)
    reasons = collections.Counter()
    for r in rows:
        reasons.update(r["stalls"])
    print(f"{path}: {total} samples, {len(rows)} instructions")
    for name, n in reasons.most_common(top):
        print(f"  {name:24s} {n:9d} {100 * n / max(total, 1):5.1f} %")
    hottest = max(r["executed"] for r in rows)
    loop = [i for i, r in enumerate(rows) if r["executed"] == hottest]
    lo, hi = min(loop), max(loop)
    print(f"  hottest loop: instructions {lo}-{hi} ({hi - lo + 1}), {sum(r['samples'] for r in rows[lo:hi + 1])} samples")
    start = lo
    for i in range(lo, hi + 1):
        s = rows[i]["sass"]
        if any(m in s for m in ("HGMMA", "WARPGROUP.DEPBAR", "BAR.SYNC", "DEPBAR.LE", "SYNCS.PHASECHK")):
            span = f"{start:5d}-{i - 1:5d} {sum(r['samples'] for r in rows[start:i]):8d}" if start < i else " " * 20
            print(f"    {span}   then {rows[i]['samples']:6d}  {s[:60]}")
            start = i + 1
    print(f"    {start:5d}-{hi:5d} {sum(r['samples'] for r in rows[start:hi + 1]):8d}")


def compare(a, b, top):
    def by_opcode(rows):
        samples, executed = collections.Counter(), collections.Counter()
        for r in rows:
            samples[opcode(r["sass"])] += r["samples"]
            executed[opcode(r["sass"])] += r["executed"]
        return samples, executed
    (sa, ea), (sb, eb) = by_opcode(a), by_opcode(b)
    keys = sorted(set(sa) | set(sb), key=lambda k: -abs(sa[k] - sb[k]))
    print(f"{'opcode':14s} {'samples A':>10s} {'samples B':>10s} {'A - B':>8s} {'run A (M)':>10s} {'run B (M)':>10s}")
    for k in keys[:top]:
        print(f"{k:14s} {sa[k]:10d} {sb[k]:10d} {sa[k] - sb[k]:8d} {ea[k] / 1e6:10.2f} {eb[k] / 1e6:10.2f}")
    print(f"{'total':14s} {sum(sa.values()):10d} {sum(sb.values()):10d}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+")
    ap.add_argument("--top", type=int, default=12)
    args = ap.parse_args()
    tables = [(f, load(f)) for f in args.files[:2]]
    for f, rows in tables:
        report(f, rows, args.top)
    if len(tables) == 2:
        compare(tables[0][1], tables[1][1], 2 * args.top)


if __name__ == "__main__":
    main()
