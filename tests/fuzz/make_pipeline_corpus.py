#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_pipeline (tests/fuzz/corpus-pipeline/).

The bytes are choices for the generator in KernelGenerator.cpp, in its order:
14 configuration bytes (four pointer element types, num_warps, num_stages,
a flags byte — bit 0 sm_90a, bit 1 tensor cores, bits 2-4 all set debug,
bit 5 a non-power-of-two BLOCK, bit 6 ':16' on n, bit 7 n is i64 — then
BLOCK, BM, BN, DM, DN, DK), four prologue bytes (early return, program id,
offset hints, a 2-D load), then statements, each a kind byte (its value
mod 22 picks the statement: 0-1 binary op, 2 unary, 3 cast, 4 where,
5 reduction, 6 scan, 7 broadcasting, 8 shape op, 9 load, 10 store, 11 for
loop, 12 if/else, 13 tl.dot, 14 atomic, 15 binary, 16 two-operand math,
17 zeros/full, 18 while loop, 19 op with a literal, 20 debug op, 21 hint)
and the bytes its own choices take. Each seed leads with one statement kind under one set of
options; the rest of its bytes are pseudo-random (seeded, so the corpus is
reproducible). Run it again after changing the generator's byte layout:

    python3 tests/fuzz/make_pipeline_corpus.py
"""
import pathlib
import random

OUT = pathlib.Path(__file__).resolve().parent / "corpus-pipeline"
KINDS = 22


def seed(rng, kind, warps, stages, flags, tail_statements):
    ptr_types = [rng.choice([0, 1, 2, 3, 4, 8]) for _ in range(4)]  # fp32 fp32 fp16 bf16 i32 f64
    block = rng.choice([0, 1, 2, 3, 4])        # 16 .. 256
    bm, bn = rng.choice([2, 3, 4, 5]), rng.choice([2, 3, 4, 5])  # 4 .. 32
    dm, dn, dk = rng.randrange(2), rng.randrange(2), rng.randrange(2)
    config = ptr_types + [warps, stages, flags, block, bm, bn, dm, dn, dk]
    # No early return; the program id, offset hints and a 2-D load as they come.
    prologue = [rng.randrange(15, 100), rng.randrange(256), rng.randrange(256), rng.randrange(256)]
    body = [kind] + [rng.randrange(256) for _ in range(rng.randrange(8, 24))]
    for _ in range(tail_statements):
        body += [rng.randrange(KINDS)] + [rng.randrange(256) for _ in range(rng.randrange(4, 12))]
    return bytes(config + prologue + body)


def main():
    rng = random.Random(20240612)
    OUT.mkdir(exist_ok=True)
    for old in OUT.iterdir():
        old.unlink()
    seeds = []
    for kind in range(KINDS):
        for variant in range(2):
            warps = rng.randrange(4)
            stages = rng.randrange(3)
            flags = rng.randrange(4) | (0x40 if variant else 0)
            seeds.append((f"kind{kind:02d}-{variant}", seed(rng, kind, warps, stages, flags, variant + 1)))
    # tl.dot under every num_warps x num_stages, both targets, tensor cores on and off.
    for warps in range(4):
        for stages in range(3):
            flags = (warps + stages) % 2 | 2 * (stages != 0)
            seeds.append((f"dot-w{warps}-s{stages}", seed(rng, 13, warps, stages, flags, 0)))
    # A few longer ones, debug mode and an i64 n.
    for i in range(4):
        seeds.append((f"long-{i}", seed(rng, rng.randrange(KINDS), rng.randrange(4), rng.randrange(3),
                                        rng.randrange(4) | (0x1c if i == 0 else 0) | (0x80 if i == 1 else 0), 6)))
    for name, data in seeds:
        (OUT / name).write_bytes(data)
    print(f"wrote {len(seeds)} seeds to {OUT}")


if __name__ == "__main__":
    main()
