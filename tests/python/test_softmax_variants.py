"""bench/softmax_variants.py on the CPU: every candidate kernel through the host
interpreter against numpy in float64 (fp32 and bf16, ragged rows, persistent grids
that do and do not divide the rows, more programs than rows, the benchmark shapes
with fewer rows), and every configuration the benchmark would time compiles for
sm_90a (no GPU needed), with 128-bit accesses and no local memory in the PTX."""
import re

import numpy as np
import pytest

from conftest import load_bench_module, run_cli  # noqa: F401  (conftest: the CLI must be built)

import tessera  # noqa: E402

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")


bench = load_bench_module("softmax_variants.py", "bench_softmax_variants")


class _Bf16Tensor:
    """uint16 bit patterns that interpret mode reads as a torch.bfloat16 CPU tensor (no torch needed)."""

    class _Dtype:
        def __str__(self):
            return "torch.bfloat16"

    class _Device:
        type = "cpu"

    def __init__(self, bits):
        self.array = bits
        self.dtype = self._Dtype()
        self.device = self._Device()
        self.shape = bits.shape

    def data_ptr(self):
        return self.array.__array_interface__["data"][0]

    def stride(self):
        return tuple(s // 2 for s in self.array.strides)

    def element_size(self):
        return 2


def bf16_bits(x):
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_to_f64(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def reference(x64):
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def rel_err(out, ref):
    return np.linalg.norm(out - ref) / np.linalg.norm(ref)


def run_variant(kname, meta, shape, dtype, programs, seed=0):
    """Runs bench kernel kname on a (rows, cols) input in interpret mode; returns (out, ref) in float64."""
    rows, cols = shape
    kernel = tessera.jit(bench.KERNELS[kname]().fn, interpret=True)
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * 3
    if dtype == "bfloat16":
        xb = bf16_bits(x)
        out = np.full(shape, 0x7FC0, np.uint16)  # NaN
        kernel[(programs,)](_Bf16Tensor(out), _Bf16Tensor(xb), cols, cols, rows, cols, **meta)
        return bf16_to_f64(out), reference(bf16_to_f64(xb))
    out = np.full(shape, np.nan, np.float32)
    kernel[(programs,)](out, x, cols, cols, rows, cols, **meta)
    return out.astype(np.float64), reference(x.astype(np.float64))


KERNEL_CASES = [
    ("prefetch", {}),
    ("prefetch", {"FMA_EXP": True, "STREAM": True}),
    ("prefetch2", {}),
    ("packed", {}),
    ("online_prefetch", {}),
    ("register", {}),
    ("online", {}),
    ("online", {"KEEP_LAST": True}),
]


def block_for(kname, cols):
    if kname.startswith("online"):
        return 256  # several blocks per row, the last one ragged for ragged rows
    return tessera.next_power_of_2(cols)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"], ids=["fp32", "bf16"])
@pytest.mark.parametrize("shape,programs", [((7, 1000), 3), ((5, 3000), 2), ((9, 1000), 9), ((3, 1000), 5),
                                            ((10, 768), 4), ((1, 1), 2)],
                         ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else f"P{v}")
@pytest.mark.parametrize("kname,extra", KERNEL_CASES, ids=lambda v: v if isinstance(v, str) else
                         "-".join(k.lower() for k in v) or "plain")
def test_variant_matches_float64(kname, extra, shape, programs, dtype):
    if kname == "packed" and (dtype != "bfloat16" or shape[1] % 2):
        pytest.skip("the packed kernel is for 16-bit rows of even length")
    meta = {"BLOCK_SIZE": block_for(kname, shape[1]), **extra}
    out, ref = run_variant(kname, meta, shape, dtype, programs)
    assert not np.isnan(out).any(), "rows left unwritten"
    tol = 1e-5 if dtype == "float32" else 1e-2
    assert rel_err(out, ref) <= tol
    if dtype == "float32":
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"], ids=["fp32", "bf16"])
@pytest.mark.parametrize("cols", [1024, 4096, 16384, 32768])
def test_benchmark_row_lengths(cols, dtype):
    """The benchmark's rows (fewer of them), with a config of each variant the benchmark times."""
    rows = max(3, 32768 // cols)
    seen = set()
    for variant, kname, meta, warps, programs in bench.configs(cols, dtype):
        key = (kname, tuple(sorted(meta.items())))
        if key in seen:
            continue
        seen.add(key)
        grid = rows if programs == "rows" else 2  # persistent: 2 programs, rows not a multiple of it
        out, ref = run_variant(kname, meta, (rows, cols), dtype, grid, seed=cols)
        assert not np.isnan(out).any(), f"{variant} {meta}: rows left unwritten"
        err = rel_err(out, ref)
        assert err <= (1e-5 if dtype == "float32" else 1e-2), f"{variant} {meta}: relative error {err:.2e}"


def test_configs_cover_every_variant_and_case():
    names = set()
    for dtype in bench.DTYPES:
        for _, cols in bench.SHAPES:
            cfgs = bench.configs(cols, dtype)
            assert cfgs, (dtype, cols)
            names |= {c[0] for c in cfgs}
            for _, kname, meta, warps, programs in cfgs:
                assert kname in bench.KERNELS and 1 <= warps <= 32
                assert programs in ("rows", "occ") or isinstance(programs, int)
    assert {"persist", "prefetch", "prefetch2", "prefetch-fma", "online-pf", "online-pf-p", "online",
            "online-keep"} <= names


def _unique_configs():
    out = {}
    for dtype in bench.DTYPES:
        for _, cols in bench.SHAPES:
            for cfg in bench.configs(cols, dtype):
                out.setdefault((cfg[1], tuple(sorted(cfg[2].items())), cfg[3], dtype), (cfg, dtype))
    return list(out.values())


@pytest.mark.parametrize("cfg,dtype", _unique_configs(),
                         ids=lambda v: bench.config_name(v).replace(" ", "-") if isinstance(v, tuple) else v)
def test_every_config_compiles_for_sm90a(cfg, dtype):
    k = bench.compile_config(cfg, dtype, target="sm_90a")
    ptx = k.asm["ptx"]
    assert re.search(r"ld\.global(\.[a-zA-Z0-9_:]+)*\.v4\.b32", ptx), "row loads are not 128-bit"
    assert re.search(r"st\.global(\.[a-zA-Z0-9_:]+)*\.v4\.b32", ptx), "row stores are not 128-bit"
    assert ".local" not in ptx, "local memory (spilled arrays) in the PTX"


def test_table_and_options():
    o = bench.parse(["--quick", "--only", "packed,prefetch", "--shapes", "4096x16384", "--dtypes", "bfloat16"])
    assert (o.reps, o.warmup, o.only, o.shapes, o.dtypes) == (10, 3, ["packed", "prefetch"], [(4096, 16384)],
                                                               ["bfloat16"])
    results = [("bf16 4096x16384", "copy", 4000.0, ""), ("bf16 4096x16384", "shipped", 3400.0, ""),
               ("bf16 4096x16384", "packed w16 pocc", 3800.0, "regs 64"), ("bf16 4096x16384", "prefetch w8 p1", None,
                                                                           "boom")]
    text = bench.table(results)
    assert "95.0%*" in text and "85.0%!" in text and "FAIL" in text
    assert "best configs: bf16 4096x16384: packed w16 pocc" in text
