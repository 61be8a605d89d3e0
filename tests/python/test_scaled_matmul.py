"""tessera.kernels.scaled_matmul (kernels/matmul.py's scaled_matmul_kernel,
scaled_matmul_tma_kernel, scaled_matmul_tma_persistent_kernel) on the CPU: every default
configuration compiles to fp8 wgmma (sm_90a) or fp8 mma.sync (sm_89) and ptxas -v reports
no spills; the interpreter against numpy's float64 of the dequantised inputs for per-tensor,
per-row / per-column and block scales, with bias and an epilogue; the wrapper's errors.
The GPU tests at real sizes are tests/gpu/test_scaled_matmul.py."""
import importlib
import re
import subprocess

import numpy as np
import pytest

from conftest import PTXAS, ROOT, run_cli

import tessera  # noqa: E402
import tessera.language as tl  # noqa: E402
import tessera.kernels as tk  # noqa: E402

skm = importlib.import_module("tessera.kernels.scaled_matmul")  # the module (tk.scaled_matmul is the function)

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")
ml_dtypes = pytest.importorskip("ml_dtypes")

FP8 = {"e4m3": "fp8e4nv", "e5m2": "fp8e5"}
E12 = ",".join(["i32"] * 12)  # the four epilogue slots, unused
SCALE_STRIDES = "i32,i32,i32,i32,i32"  # sam, sak, sbk, sbn, bias


def pointer_signature(a="e4m3", b="e4m3", out="bf16", bias="i32"):
    # A row-major, B column-major (K contiguous: the K-major B fp8 wgmma reads), C row-major;
    # bias: its pointer type ("i32": none, HAS_BIAS off).
    return (f"*{FP8[a]}:16,*{FP8[b]}:16,*{out}:16,*fp32:16,*fp32:16,{bias},i32,i32,i32:16,"
            f"i32:16,i32:1,i32:1,i32:16,i32:16,i32:1,{SCALE_STRIDES},{E12}")


def tma_signature(config, a="e4m3", b="e4m3", out="bf16", persistent=False, bias="i32"):
    bm, bn, bk = (config.kwargs[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K"))
    sig = (f"tensordesc<{FP8[a]}[{bm},{bk}]>,tensordesc<{FP8[b]}[{bn},{bk}]>,*{out}:16,*fp32:16,*fp32:16,{bias},"
           f"i32,i32,i32:16,i32:16,i32:1,{SCALE_STRIDES}")
    return sig if persistent else sig + "," + E12


def compile_ptx(kernel, signature, config, arch="sm_90a", **constexprs):
    kw = dict(config.kwargs, **constexprs)
    args = ["compile", "kernels/matmul.py", "--kernel", kernel, "--signature", signature, "--arch", arch,
            "--num-warps", str(config.num_warps), "--num-stages", str(config.num_stages)]
    for k, v in kw.items():
        args += ["--constexpr", f"{k}={v}"]
    proc = run_cli(args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def ptxas_info(ptx, arch, tmp_path):
    """(registers, spill store bytes, spill load bytes) from ptxas -v."""
    src = tmp_path / "k.ptx"
    src.write_text(ptx)
    proc = subprocess.run([str(PTXAS), f"-arch={arch}", "-v", str(src), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    regs = int(re.search(r"Used (\d+) registers", proc.stderr).group(1))
    stores = int(re.search(r"(\d+) bytes spill stores", proc.stderr).group(1))
    loads = int(re.search(r"(\d+) bytes spill loads", proc.stderr).group(1))
    return regs, stores, loads


def config_id(c):
    return tk.matmul_config_name(c)


HOPPER_CASES = ([("outer", c) for c in skm.HOPPER_SCALED_MATMUL_CONFIGS] +
                [("block", c) for c in skm.HOPPER_BLOCK_SCALED_MATMUL_CONFIGS])
OTHER_CASES = ([("outer", c) for c in skm.SCALED_MATMUL_CONFIGS] +
               [("block", c) for c in skm.BLOCK_SCALED_MATMUL_CONFIGS])


# ------------------------------------------------------------------ PTX and ptxas

@pytest.mark.parametrize("kernel", ["tma", "tma_persistent", "pointer"])
@pytest.mark.parametrize("scaling,config", HOPPER_CASES, ids=[f"{s}-{config_id(c)}" for s, c in HOPPER_CASES])
def test_hopper_configs_use_fp8_wgmma_without_spills(tmp_path, scaling, config, kernel):
    if kernel == "tma":
        ptx = compile_ptx("scaled_matmul_tma_kernel", tma_signature(config), config, SCALING=scaling)
    elif kernel == "tma_persistent":
        p = skm._persistent(config)
        ptx = compile_ptx("scaled_matmul_tma_persistent_kernel", tma_signature(config, persistent=True), p,
                          SCALING=scaling, NUM_SMS=132)
    else:
        ptx = compile_ptx("scaled_matmul_kernel", pointer_signature(), config, SCALING=scaling)
    n = config.kwargs["BLOCK_N"]
    assert f"wgmma.mma_async.sync.aligned.m64n{n}k32.f32.e4m3.e4m3 " in ptx
    assert "f16.f16" not in ptx  # not widened
    if kernel != "pointer":  # A and B^T through TMA rings: no B staged by the dot through registers
        assert "cp.async.bulk.tensor.2d" in ptx and "st.shared.b8" not in ptx and "st.shared.u8" not in ptx
    regs, stores, loads = ptxas_info(ptx, "sm_90a", tmp_path)
    assert stores == 0 and loads == 0, f"{regs} registers, {stores} bytes of spill stores"


ROW_B_CASES = [(s, c, bias) for s in ("outer", "block") for bias in (False, True)
               for c in skm.scaled_matmul_configs(s, bias, hopper=True, k_major_b=False)]


@pytest.mark.parametrize("scaling,config,bias", ROW_B_CASES,
                         ids=[f"{s}-{config_id(c)}{'-bias' if b else ''}" for s, c, b in ROW_B_CASES])
def test_hopper_row_major_b_configs_without_spills(tmp_path, scaling, config, bias):
    # A row-major B (N contiguous) is staged transposed by the dot itself: its table keeps to
    # tiles of 64 accumulators a thread.
    sig = pointer_signature(bias="*bf16:16" if bias else "i32").split(",")
    sig[11], sig[12] = "i32:16", "i32:1"  # stride_bk, stride_bn: row-major B
    ptx = compile_ptx("scaled_matmul_kernel", ",".join(sig), config, SCALING=scaling, HAS_BIAS=bias)
    assert "k32.f32.e4m3.e4m3 " in ptx
    regs, stores, loads = ptxas_info(ptx, "sm_90a", tmp_path)
    assert stores == 0 and loads == 0, f"{regs} registers, {stores} bytes of spill stores"


@pytest.mark.parametrize("scaling,config", OTHER_CASES, ids=[f"{s}-{config_id(c)}" for s, c in OTHER_CASES])
def test_sm89_configs_use_fp8_mma_sync_without_spills(tmp_path, scaling, config):
    ptx = compile_ptx("scaled_matmul_kernel", pointer_signature("e4m3", "e5m2"), config, "sm_89", SCALING=scaling)
    assert "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32 " in ptx
    regs, stores, loads = ptxas_info(ptx, "sm_89", tmp_path)
    assert stores == 0 and loads == 0, f"{regs} registers, {stores} bytes of spill stores"


BIAS_CASES = [(s, c) for s in ("outer", "block") for c in skm.scaled_matmul_configs(s, bias=True, hopper=True)]


@pytest.mark.parametrize("scaling,config", BIAS_CASES, ids=[f"{s}-{config_id(c)}" for s, c in BIAS_CASES])
@pytest.mark.parametrize("pair", [("e5m2", "e4m3"), ("e4m3", "e5m2"), ("e5m2", "e5m2")], ids="x".join)
def test_mixed_fp8_pairs_with_bias_on_wgmma(tmp_path, pair, scaling, config):
    ptx = compile_ptx("scaled_matmul_tma_kernel", tma_signature(config, *pair, out="fp16", bias="*fp16:16"), config,
                      SCALING=scaling, HAS_BIAS=True)
    assert f"k32.f32.{pair[0]}.{pair[1]} " in ptx
    assert ptxas_info(ptx, "sm_90a", tmp_path)[1] == 0


def test_block_scales_promote_every_k_step():
    # Block scales: each K step's wgmmas make a partial product that is waited for, scaled and
    # added in fp32 in that step (wait_group 0 in the loop); the outer kernel's accumulator is
    # carried by the wgmmas from one step to the next (wait_group 1: the group runs on).
    config = next(c for c in skm.HOPPER_BLOCK_SCALED_MATMUL_CONFIGS if not c.kwargs.get("PAIR_K"))
    block = compile_ptx("scaled_matmul_tma_kernel", tma_signature(config), config, SCALING="block")
    outer = compile_ptx("scaled_matmul_tma_kernel", tma_signature(config), config, SCALING="outer")
    assert "wgmma.wait_group.sync.aligned 1;" in outer
    assert "wgmma.wait_group.sync.aligned 1;" not in block
    assert "fma.rn.f32" in block


def sass_loop(tmp_path, ptx):
    """The instruction texts of the K loop: the smallest SASS loop that issues QGMMAs (the
    mbarrier waits' out-of-line retries branch back into it from after the kernel's end)."""
    from test_attention_ptx import sass_loops
    from test_vectorized_access import sass
    path = tmp_path / "k.ptx"
    path.write_text(ptx)
    loops = [body for body in sass_loops(sass(tmp_path, path)) if any("QGMMA" in t for t in body)]
    assert loops
    return min(loops, key=len)


PAIRED = [c for c in skm.HOPPER_BLOCK_SCALED_MATMUL_CONFIGS if c.kwargs.get("PAIR_K")]


@pytest.mark.parametrize("kernel", ["tma", "tma_ws", "tma_persistent", "pointer"])
def test_paired_block_steps_promote_the_first_under_the_second(tmp_path, kernel):
    # PAIR_K (the Hopper block table's first): two K blocks a step, both dots issued before
    # the first is read. The first's promotion waits with wait_group 1 (the second's wgmmas
    # run on) and only the second's with wait_group 0. The second dot's zero accumulator is
    # no moves into its registers (scale-d = 0), else ptxas would wait for the first dot
    # before them (C7517: "warpgroup.wait is injected") and run the two in sequence.
    config = PAIRED[0]
    assert config is skm.HOPPER_BLOCK_SCALED_MATMUL_CONFIGS[0] and tk.matmul_config_name(config).endswith("/pair")
    if kernel in ("tma", "tma_ws"):
        ptx = compile_ptx("scaled_matmul_tma_kernel", tma_signature(config), config, SCALING="block",
                          WARP_SPECIALIZE=kernel == "tma_ws")
    elif kernel == "tma_persistent":
        p = skm._persistent(config)
        ptx = compile_ptx("scaled_matmul_tma_persistent_kernel", tma_signature(config, persistent=True), p,
                          SCALING="block", NUM_SMS=132)
    else:
        ptx = compile_ptx("scaled_matmul_kernel", pointer_signature(), config, SCALING="block")
    src = tmp_path / "k.ptx"
    src.write_text(ptx)
    proc = subprocess.run([str(PTXAS), "-arch=sm_90a", "-v", str(src), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "0 bytes spill stores" in proc.stderr, proc.stderr
    assert "C7517" not in proc.stderr and "C7519" not in proc.stderr, proc.stderr
    ops = [re.sub(r"^@!?U?P\w+\s+", "", t) for t in sass_loop(tmp_path, ptx)]
    gmma = [i for i, t in enumerate(ops) if t.startswith("QGMMA")]
    waits = [(i, t) for i, t in enumerate(ops) if t.startswith("WARPGROUP.DEPBAR")]
    ffma = [i for i, t in enumerate(ops) if t.startswith("FFMA")]
    n = config.kwargs["BLOCK_K"] // 32  # wgmmas a dot: 64 x 128 x 128 per warpgroup
    assert len(gmma) == 2 * n and len(ffma) == 2 * 64, ops
    assert [t for _, t in waits] == ["WARPGROUP.DEPBAR.LE gsb0, 0x1", "WARPGROUP.DEPBAR.LE gsb0, 0x0"], waits
    first, second = waits[0][0], waits[1][0]
    # both dots issued, then the first's 64 FFMAs, then the second's wait and its 64.
    assert gmma[-1] < first and sum(first < i < second for i in ffma) == 64 and sum(i > second for i in ffma) == 64
    # The refill of the ring (TMA kernel without a producer: its copying warp may wait there
    # for an empty stage) comes after both dots, not between them.
    copies = [i for i, t in enumerate(ops) if t.startswith("UTMALDG")]
    assert kernel != "tma" or (copies and min(copies) > gmma[-1]), ops


PERSISTENT_CASES = [(s, c, out) for s, c in HOPPER_CASES for out in ("bf16", "fp32")]


@pytest.mark.parametrize("scaling,config,out", PERSISTENT_CASES,
                         ids=[f"{s}-{config_id(c)}-{o}" for s, c, o in PERSISTENT_CASES])
def test_persistent_stages_fit_the_stored_tile(scaling, config, out):
    # The persistent kernel keeps its ring while it stores C through shared memory: _persistent
    # takes as many stages as fit beside the C tile (the paired block config: 3 with bf16, 2 with
    # fp32; 128 x 256 with fp32: none, and scaled_matmul's default moves on to the next config).
    # Its size model must be the compiler's: the stages it takes compile, one more does not.
    out_bytes = 4 if out == "fp32" else 2
    p = skm._persistent(config, out_bytes=out_bytes)

    def compiled(stages):
        try:
            k = tessera.compile(str(ROOT / "kernels" / "matmul.py"), tma_signature(config, out=out, persistent=True),
                                constexprs=dict(config.kwargs, SCALING=scaling, NUM_SMS=132, WARP_SPECIALIZE=True),
                                num_warps=config.num_warps, num_stages=stages,
                                kernel="scaled_matmul_tma_persistent_kernel")
            return k.metadata.shared
        except tessera.OutOfResources:
            return None

    if p is None:
        assert compiled(2) is None
        return
    assert compiled(p.num_stages) == skm._persistent_shared_bytes(config.kwargs, p.num_stages, out_bytes)
    if p.num_stages < config.num_stages:
        assert compiled(p.num_stages + 1) is None


def test_persistent_default_config_fits_an_fp32_tile():
    paired = skm.HOPPER_BLOCK_SCALED_MATMUL_CONFIGS[0]
    assert paired.kwargs.get("PAIR_K")
    assert skm._persistent(paired).num_stages == 3 and skm._persistent(paired, out_bytes=4).num_stages == 2
    wide = skm.HOPPER_SCALED_MATMUL_CONFIGS[0]
    assert wide.kwargs["BLOCK_N"] == 256 and skm._persistent(wide, out_bytes=4) is None


@pytest.mark.parametrize("K,paired", [(4096, True), (256, True), (1152, True), (384, False), (128, False)])
def test_default_block_config_pairs_unless_a_short_k_wastes_a_block(K, paired):
    config = skm.default_scaled_matmul_config("block", K, hopper=True)
    assert bool(config.kwargs.get("PAIR_K")) == paired
    assert skm.default_scaled_matmul_config("outer", K, hopper=True) is skm.HOPPER_SCALED_MATMUL_CONFIGS[0]
    # a row-major B (staged through registers) never pairs
    assert not skm.default_scaled_matmul_config("block", K, hopper=True, k_major_b=False).kwargs.get("PAIR_K")


def test_zero_accumulator_dots_move_no_zeros_into_the_wgmma_registers():
    # acc += tl.dot(a, b) * scale: the dot's accumulator is zero. Its first wgmma of each
    # chunk has scale-d = 0 and no accumulator inputs (as Triton's useC = false), instead of
    # 64 mov.f32 of 0.0 into its registers each K step (ptxas dropped those when nothing
    # else ran; with a second dot in flight it waited first, see above).
    config = next(c for c in skm.HOPPER_BLOCK_SCALED_MATMUL_CONFIGS if not c.kwargs.get("PAIR_K"))
    ptx = compile_ptx("scaled_matmul_tma_kernel", tma_signature(config), config, SCALING="block")
    loop = ptx[ptx.index("wgmma.fence.sync.aligned"):]
    loop = loop[:loop.index("wgmma.commit_group")]
    assert "mov.f32" not in loop
    first = re.search(r"wgmma\.mma_async[^;]*;", loop).group(0)
    assert re.search(r"\}, %rd\d+, %rd\d+, 0, 1, 1;", first), first  # scale-d: the immediate 0


# ------------------------------------------------------------------ the interpreter

def fp8(rng, shape, kind, scale=2.0):
    dtype = ml_dtypes.float8_e4m3fn if kind == "e4m3" else ml_dtypes.float8_e5m2
    return (rng.standard_normal(shape) * scale).astype(dtype)


def expand_blocks(s, rows, cols, block_rows, block_cols):
    return np.repeat(np.repeat(s.astype(np.float64), block_rows, axis=0), block_cols, axis=1)[:rows, :cols]


def check(c, ref, magnitude, out):
    # Exact products, f32 sums (one rounding per K step and per scale), then the output's rounding.
    tol = {"float32": 2.0 ** -20, "float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}[out]
    err = np.abs(c.astype(np.float64) - ref)
    assert (err <= tol * (magnitude + np.abs(ref)) + 1e-30).all(), f"max error {err.max():.3g}"


SHAPES = [(70, 90, 300), (33, 17, 129), (128, 64, 256)]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("granularity", ["tensor", "row", "row-col", "tensor-col", "block", "block-tensor"])
@pytest.mark.parametrize("pair", [("e4m3", "e4m3"), ("e4m3", "e5m2")], ids="x".join)
def test_interpreter_matches_float64(pair, granularity, shape):
    M, N, K = shape
    rng = np.random.default_rng(M * 7 + N * 3 + K)
    a, b = fp8(rng, (M, K), pair[0]), fp8(rng, (K, N), pair[1])
    kb, nb = -(-K // 128), -(-N // 128)

    def uniform(*shape):
        return rng.uniform(0.1, 2, shape).astype(np.float32)
    sa, sb = {"tensor": (np.float32([0.25]), np.array(3.0, np.float32)),
              "row": (uniform(M, 1), np.float32([1.5])),
              "row-col": (uniform(M), uniform(1, N)),
              "tensor-col": (np.float32([[0.5]]), uniform(N)),
              "block": (uniform(M, kb), uniform(kb, nb)),
              "block-tensor": (uniform(M, kb), np.float32([2.0]))}[granularity]
    if granularity.startswith("block"):
        da = expand_blocks(sa, M, K, 1, 128)
        db = expand_blocks(sb, K, N, 128, 128) if sb.size > 1 else np.full((K, N), float(sb.item()))
    else:  # one value, or one a row of A / a column of B
        da = np.broadcast_to(sa.astype(np.float64).reshape(-1, 1), (M, K))
        db = np.broadcast_to(sb.astype(np.float64).reshape(1, -1), (K, N))
    A, B = a.astype(np.float64) * da, b.astype(np.float64) * db
    c = tk.scaled_matmul(a, b, sa, sb, "float32", interpret=True)
    assert c.dtype == np.float32 and c.shape == (M, N)
    check(c, A @ B, np.abs(A) @ np.abs(B), "float32")


PASS_CASES = HOPPER_CASES[:1] + HOPPER_CASES[3:4] + [c for c in HOPPER_CASES if c[0] == "block"][:2]


@pytest.mark.parametrize("scaling,config", PASS_CASES, ids=[f"{s}-{config_id(c)}" for s, c in PASS_CASES])
def test_interpreter_after_passes(monkeypatch, scaling, config):
    # The IR after every pass (sm_90a: wgmma layouts, the cp.async ring with B buffered K-major,
    # the block scales' fresh partial products) against float64, on a ragged shape.
    monkeypatch.setenv("TESSERA_INTERPRET_PASSES", "1")
    monkeypatch.setattr(skm, "_state", {})
    M, N, K = 70, 90, 300
    rng = np.random.default_rng(1)
    a, w = fp8(rng, (M, K), "e4m3"), fp8(rng, (N, K), "e5m2")
    b = w.T
    kb, nb = 3, 1
    sa = rng.uniform(0.1, 2, (M, kb) if scaling == "block" else (M, 1)).astype(np.float32)
    sb = rng.uniform(0.1, 2, (kb, nb) if scaling == "block" else (1, N)).astype(np.float32)
    c = tk.scaled_matmul(a, b, sa, sb, "float32", interpret=True, config=config)
    if scaling == "block":
        A = a.astype(np.float64) * expand_blocks(sa, M, K, 1, 128)
        B = b.astype(np.float64) * expand_blocks(sb, K, N, 128, 128)
    else:
        A, B = a.astype(np.float64) * sa, b.astype(np.float64) * sb
    check(c, A @ B, np.abs(A) @ np.abs(B), "float32")
    ir = skm._state["interpreted"]._interpreter.ir()
    assert "#mma<version=3" in ir and "order=[0,1]" in ir


@pytest.mark.parametrize("out", ["float32", "float16", "bfloat16"])
def test_interpreter_bias_epilogue_and_strides(out):
    # b column-major (a transposed view, K contiguous), a weight's (N/128, K/128) block scales
    # passed transposed, a bias, and an epilogue with an argument.
    M, N, K = 40, 150, 260
    rng = np.random.default_rng(5)
    a = fp8(rng, (M, K), "e4m3")
    w = fp8(rng, (N, K), "e4m3")
    b = w.T
    kb, nb = 3, 2
    sa = rng.uniform(0.5, 1.5, (M, kb)).astype(np.float32)
    sw = rng.uniform(0.5, 1.5, (nb, kb)).astype(np.float32)
    bias = rng.standard_normal(N).astype(np.float32)

    @tessera.jit
    def scale_relu(acc, s):
        return tl.maximum(acc * s, 0.0)

    c = tk.scaled_matmul(a, b, sa, sw.T, out, bias=bias, epilogue=scale_relu, epilogue_args=(0.5,),
                         interpret=True)
    A = a.astype(np.float64) * expand_blocks(sa, M, K, 1, 128)
    B = b.astype(np.float64) * expand_blocks(sw.T, K, N, 128, 128)
    ref = np.maximum((A @ B + bias) * 0.5, 0.0)
    check(c, ref, 0.5 * (np.abs(A) @ np.abs(B) + np.abs(bias)), out)


# ------------------------------------------------------------------ errors

def test_errors_name_the_argument():
    rng = np.random.default_rng(0)
    a, b = fp8(rng, (32, 64), "e4m3"), fp8(rng, (64, 48), "e4m3")
    one = np.float32([1.0])
    with pytest.raises(TypeError, match="a has dtype float32; scaled_matmul takes float8_e4m3fn or float8_e5m2"):
        tk.scaled_matmul(a.astype(np.float32), b, one, one, interpret=True)
    with pytest.raises(TypeError, match="scale_b has dtype float16; scales are float32"):
        tk.scaled_matmul(a, b, one, one.astype(np.float16), interpret=True)
    with pytest.raises(ValueError, match=r"scale_a of shape \(32, 2\) and scale_b of shape \(1, 48\) do not name"):
        tk.scaled_matmul(a, b, np.ones((32, 2), np.float32), np.ones((1, 48), np.float32), interpret=True)
    with pytest.raises(ValueError, match=r"b must have K = 64 rows"):
        tk.scaled_matmul(a, b[:32], one, one, interpret=True)
    with pytest.raises(ValueError, match=r"bias must have shape \(48,\)"):
        tk.scaled_matmul(a, b, one, one, bias=np.ones(32, np.float32), interpret=True)
    with pytest.raises(TypeError, match="out_dtype int8 is not one of"):
        tk.scaled_matmul(a, b, one, one, "int8", interpret=True)
    a2, b2 = fp8(rng, (32, 256), "e4m3"), fp8(rng, (256, 48), "e4m3")
    with pytest.raises(ValueError, match="block scales need BLOCK_K dividing 128"):
        tk.scaled_matmul(a2, b2, np.ones((32, 2), np.float32), np.ones((2, 1), np.float32),
                         config="64x64x96/w4/s3", interpret=True)


def test_manifest_lists_the_scaled_kernels():
    from conftest import ROOT
    text = (ROOT / "kernels" / "manifest.txt").read_text()
    for name in ("scaled_matmul_kernel", "scaled_matmul_tma_kernel"):
        assert re.search(rf"^matmul\.py\s+{name}\s", text, re.M), name


def test_kernel_rejects_block_k_not_dividing_the_scale_block():
    config = tk.parse_matmul_config("64x64x256/w4/s3")
    args = ["compile", "kernels/matmul.py", "--kernel", "scaled_matmul_kernel", "--signature", pointer_signature()]
    for k, v in dict(config.kwargs, SCALING="block").items():
        args += ["--constexpr", f"{k}={v}"]
    proc = run_cli(args)
    assert proc.returncode != 0
    assert "static assertion failed: block scales need BLOCK_K dividing SCALE_K" in proc.stderr
    assert "kernels/matmul.py:" in proc.stderr and "^" in proc.stderr
