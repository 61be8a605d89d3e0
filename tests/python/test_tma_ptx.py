"""Tensor descriptors (desc.load through the TMA unit, docs/tma.md): what the
compiler makes of them for sm_90a, checked by ptxas, and the errors around them;
the TMA matmul with and without a fused epilogue (kernels/matmul.py)."""
import re
import subprocess

import pytest

from conftest import PTXAS, run_cli

import tessera  # noqa: E402
import tessera.language as tl  # noqa: E402

KERNELS = "tests/python/lang_kernels/tensor_descriptors.py"
COPY = ["compile", KERNELS, "--kernel", "desc_copy", "--constexpr", "BLOCK_M=64", "--constexpr", "BLOCK_N=128"]


def compile_ptx(args, tmp_path, arch="sm_90a"):
    ptx = tmp_path / "k.ptx"
    run_cli(args + ["--arch", arch, "-o", str(ptx)], check=True)
    proc = subprocess.run([str(PTXAS), f"-arch={arch}", str(ptx), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return ptx.read_text()


@pytest.mark.parametrize("dtype,block,boxes", [("bf16", "64,128", 2), ("fp32", "32,32", 1), ("fp16", "128,64", 1),
                                               ("fp32", "16,128", 4)])
def test_desc_load_is_tma_boxes_of_at_most_128_bytes(dtype, block, boxes, tmp_path):
    m, n = block.split(",")
    args = ["compile", KERNELS, "--kernel", "desc_copy", "--constexpr", f"BLOCK_M={m}", "--constexpr", f"BLOCK_N={n}",
            "--signature", f"tensordesc<{dtype}[{block}]>,*{dtype}:16,i32:16"]
    text = compile_ptx(args, tmp_path, "sm_90a")
    # The descriptor stays a 128-byte, 64-aligned parameter, read in place (grid constant).
    assert re.search(r"\.param \.align 64 \.b8 desc_copy_param_0\[128\]", text)
    assert "cvta.param.u64" in text
    assert text.count("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes") == boxes
    assert "mbarrier.arrive.expect_tx.shared::cta.b64" in text
    assert "mbarrier.try_wait.parity.shared::cta.b64" in text
    assert "mbarrier.inval.shared::cta.b64" in text


@pytest.mark.parametrize("dtype,block,boxes", [("bf16", "64,128", 2), ("fp32", "32,32", 1), ("fp32", "16,128", 4)])
def test_desc_store_is_one_bulk_store_per_box(dtype, block, boxes, tmp_path):
    """desc.store: the block into the swizzled tile (what desc.load reads), a proxy fence, then
    thread 0 hands it to the TMA unit box by box and waits until the tile has been read."""
    m, n = block.split(",")
    args = ["compile", KERNELS, "--kernel", "desc_store_scaled", "--constexpr", f"BLOCK_M={m}",
            "--constexpr", f"BLOCK_N={n}", "--signature", f"tensordesc<{dtype}[{block}]>,tensordesc<{dtype}[{block}]>,fp32"]
    text = compile_ptx(args, tmp_path, "sm_90a")
    assert text.count("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group") == boxes
    store = text.index("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group")
    assert text.rindex("fence.proxy.async.shared::cta", 0, store) > text.rindex("st.shared", 0, store)
    assert text.index("cp.async.bulk.commit_group", store) < text.index("cp.async.bulk.wait_group.read 0", store)


def test_desc_store_errors():
    wrong = run_cli(["compile", KERNELS, "--kernel", "desc_store_wrong_shape", "--constexpr", "BLOCK_M=64",
                     "--signature", "tensordesc<fp32[64,32]>"])
    assert wrong.returncode == 1
    assert "store()'s value must be a block of the descriptor's shape <64x32xf32>, got <64x8xf32>" in wrong.stderr


def test_desc_load_in_a_loop_assembles(tmp_path):
    args = ["compile", KERNELS, "--kernel", "desc_scaled_sum", "--constexpr", "BLOCK_M=32", "--constexpr", "BLOCK_N=64",
            "--signature", "tensordesc<fp16[32,64]>,*fp32:16,i32"]
    text = compile_ptx(args, tmp_path, "sm_90")
    assert text.count("cp.async.bulk.tensor.2d") == 1


def test_signature_token_round_trips_into_the_ir():
    proc = run_cli(COPY + ["--signature", "tensordesc<bf16[64, 128]> , *bf16:16, i32:16", "--emit", "ir"], check=True)
    assert "%in_desc: tensordesc<64x128xbf16>" in proc.stdout
    assert "desc_load %in_desc" in proc.stdout


@pytest.mark.parametrize("token,why", [
    ("tensordesc<bf16[64,128]", "unterminated tensor descriptor"),
    ("tensordesc<bf16>", "no block shape"),
    ("tensordesc<bf17[64,128]>", "unknown element type"),
    ("tensordesc<bf16[64,x]>", "block dimension 'x' is not a positive integer"),
    ("tensordesc<bf16[0,128]>", "block dimension '0' is not a positive integer"),
])
def test_bad_descriptor_tokens_are_named(token, why):
    proc = run_cli(COPY + ["--signature", f"{token},*bf16:16,i32:16"])
    assert proc.returncode != 0
    assert f"signature entry 1 ('{token}" in proc.stderr and why in proc.stderr, proc.stderr


@pytest.mark.parametrize("kernel,sig", [
    ("desc_copy", "tensordesc<bf16[64,128]>,*bf16:16,i32:16"),
    ("desc_store_scaled", "tensordesc<bf16[64,128]>,tensordesc<bf16[64,128]>,fp32")])
def test_descriptors_before_hopper_are_pointer_blocks(kernel, sig, tmp_path):
    """Before sm_90 (no TMA unit) a descriptor argument's loads and stores are masked pointer
    blocks over its hidden base, shape and strides, as Triton lowers them there."""
    args = ["compile", KERNELS, "--kernel", kernel, "--constexpr", "BLOCK_M=64", "--constexpr", "BLOCK_N=128",
            "--signature", sig]
    text = compile_ptx(args, tmp_path, "sm_80")
    assert "cp.async.bulk" not in text and "mbarrier" not in text
    assert "st.global" in text


def test_the_nvrtc_back_end_takes_descriptors_as_grid_constants(tmp_path):
    """The CUDA C++ printer declares a descriptor `const __grid_constant__ tsr_tensor_map` (128
    bytes, 64-byte aligned) and hands the TMA instructions its address, as the LLVM form does
    (byval + grid_constant): NVRTC's PTX takes the parameter's address (no copy to local memory)
    and ptxas assembles the ring of the pipelined TMA matmul."""
    cuda = run_cli(tma_matmul_args() + ["--emit", "cuda"], check=True).stdout
    assert "struct __align__(64) tsr_tensor_map { unsigned long long words[16]; };" in cuda
    assert "matmul_tma_kernel(const __grid_constant__ tsr_tensor_map a_desc_map, " \
           "const __grid_constant__ tsr_tensor_map b_desc_map," in cuda
    assert "unsigned char *a_desc = (unsigned char *)&a_desc_map;" in cuda
    ptx = tmp_path / "k.ptx"
    run_cli(tma_matmul_args() + ["--backend", "nvrtc", "-o", str(ptx)], check=True)
    text = ptx.read_text()
    assert text.count("cp.async.bulk.tensor.2d") >= 2 and "wgmma.mma_async" in text
    assert "st.local" not in text  # the maps stay in the parameter space
    proc = subprocess.run([str(PTXAS), "-arch=sm_90a", str(ptx), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


# ---- the pipelined TMA matmul (kernels/matmul.py's matmul_tma_kernel) ------------------------------------

TMA_MATMUL_SIG = "tensordesc<{t}[{bm},{bk}]>,tensordesc<{t}[{bk},{bn}]>,*{t}:16,i32,i32,i32,i32:16,i32:1"


def tma_matmul_args(bm=128, bn=256, bk=64, warps=8, stages=4, t="bf16"):
    return ["compile", "kernels/matmul.py", "--kernel", "matmul_tma_kernel",
            "--signature", TMA_MATMUL_SIG.format(t=t, bm=bm, bn=bn, bk=bk),
            "--constexpr", f"BLOCK_M={bm}", "--constexpr", f"BLOCK_N={bn}", "--constexpr", f"BLOCK_K={bk}",
            "--constexpr", "GROUP_M=8", "--num-warps", str(warps), "--num-stages", str(stages)]


@pytest.mark.parametrize("bm,bn,bk,warps,stages", [(128, 256, 64, 8, 4), (128, 128, 64, 4, 3), (64, 64, 64, 4, 2),
                                                   (128, 128, 32, 4, 3)])
def test_tma_matmul_is_an_mbarrier_ring(bm, bn, bk, warps, stages, tmp_path):
    """S-1 stages copied before the loop and one per iteration, each block in <=128-byte
    boxes on the stage's mbarrier; no cp.async and no register staging of the operands. With
    two warpgroups a second mbarrier per stage says every thread is done with it (all 256
    arrive), instead of a CTA barrier each iteration."""
    text = compile_ptx(tma_matmul_args(bm, bn, bk, warps, stages), tmp_path)
    row_bytes = 128 // 2
    boxes = -(-bk // row_bytes) + -(-bn // row_bytes)  # A's K columns, B's N columns
    rings = 2 if warps > 4 else 1
    assert text.count("cp.async.bulk.tensor.2d") == boxes * stages  # (S-1) prologue copies + the loop's
    assert text.count("mbarrier.init.shared::cta.b64") == rings * stages
    assert re.search(r"mbarrier\.init\.shared::cta\.b64 \[%r\d+\], 2;", text)  # A and B arrive on one barrier
    assert text.count("mbarrier.arrive.expect_tx") == 2 * stages
    assert text.count("mbarrier.inval.shared::cta.b64") == rings * stages
    assert ("mbarrier.arrive.shared::cta.b64" in text) == (warps > 4)
    if warps > 4:
        assert re.search(r"mbarrier\.init\.shared::cta\.b64 \[%r\d+\], " + str(32 * warps) + ";", text)
    assert "cp.async.cg" not in text and "cp.async.ca" not in text
    assert "wgmma.mma_async" in text


def test_tma_matmul_pipeline_ir(tmp_path):
    proc = run_cli(tma_matmul_args() + ["--emit", "ir-opt", "--stop-after", "software-pipeline"], check=True)
    body = proc.stdout
    assert "mbarrier_alloc {arrivals = 2} : <4x1x1xi64>" in body
    assert body.count("async_tma_copy") == 8  # 3 stages ahead for A and B, then one pair per iteration
    assert "desc_load" not in body
    loop = body[body.index(" for "):body.index("dot_wait")]
    # 8 warps: every thread arrives on the stage read last iteration, the copying warp waits for
    # all of them ({leader = 1}), then the copies (4 warps: a barrier instead).
    assert "mbarrier_alloc {arrivals = 256} : <4x1x1xi64>" in body
    assert loop.index("mbarrier_wait") < loop.index("local_load") < loop.index("= dot ") < loop.index("mbarrier_arrive")
    assert loop.index("mbarrier_arrive") < loop.index("leader = 1") < loop.index("async_tma_copy")
    assert "barrier\n" not in loop.replace("mbarrier", "")
    four = run_cli(tma_matmul_args(128, 128, 64, 4, 3) + ["--emit", "ir-opt", "--stop-after", "software-pipeline"], check=True)
    loop4 = four.stdout[four.stdout.index(" for "):four.stdout.index("dot_wait")]
    assert "mbarrier_arrive" not in loop4 and loop4.index("  barrier\n") < loop4.index("async_tma_copy")


def test_tma_store_matmul_writes_c_through_the_ring_space(tmp_path):
    """matmul_tma_store_kernel: C's tile goes through shared memory to TMA stores (UTMASTG)
    in the ring's space, free after the loop: no more shared memory than matmul_tma_kernel."""
    from test_vectorized_access import sass
    sig = "tensordesc<bf16[128,64]>,tensordesc<bf16[64,256]>,tensordesc<bf16[128,256]>,i32,i32,i32"
    consts = dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8)
    k = tessera.compile("kernels/matmul.py", kernel="matmul_tma_store_kernel", signature=sig, constexprs=consts,
                        num_warps=8, num_stages=4, target="sm_90a")
    plain = tessera.compile("kernels/matmul.py", kernel="matmul_tma_kernel", signature=TMA_MATMUL_SIG.format(
        t="bf16", bm=128, bn=256, bk=64), constexprs=consts, num_warps=8, num_stages=4, target="sm_90a")
    assert k.metadata.shared == plain.metadata.shared
    assert k.asm["ptx"].count("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group") == 4  # 256 columns: 4 boxes
    ptx = tmp_path / "store.ptx"
    ptx.write_text(k.asm["ptx"])
    text = sass(tmp_path, ptx)
    assert "UTMASTG.2D" in text and "HGMMA.64x256x16.F32.BF16" in text


def test_tma_matmul_sass_has_utmaldg_and_hgmma(tmp_path):
    from test_vectorized_access import sass
    ptx = tmp_path / "k.ptx"
    run_cli(tma_matmul_args() + ["--arch", "sm_90a", "-o", str(ptx)], check=True)
    text = sass(tmp_path, ptx)
    assert "UTMALDG.2D" in text, "no TMA loads in the SASS"
    assert "HGMMA.64x256x16.F32.BF16" in text, "no wgmma in the SASS"
    assert "LDGSTS" not in text  # no cp.async left


# ---- the TMA matmul with a fused epilogue (matmul_tma_epilogue_kernel, docs/fusion.md) ------------------

@tessera.jit
def ep_bias_gelu(acc, bias):
    y = acc + bias
    return 0.5 * y * (1.0 + tl.erf(y * 0.7071067811865476))


# After C's strides: E0 the bias as the wrapper passes it (a row, KIND 3: stride 0 along M, 1 along N),
# E1..E3 unused (zeros).
TMA_EPILOGUE_SLOTS = ",*{t}:16,i32:16,i32:1" + ",i32:16" * 9


def hopper_configs():
    import importlib
    return importlib.import_module("tessera.kernels.matmul").HOPPER_MATMUL_CONFIGS


def epilogue_configs():
    """What the TMA epilogue autotuner times: the Hopper table and the configs that fit 2-3 CTAs per SM."""
    import importlib
    mm = importlib.import_module("tessera.kernels.matmul")
    return mm.HOPPER_MATMUL_CONFIGS + mm.HOPPER_EPILOGUE_EXTRA_CONFIGS


def compile_tma_epilogue(config, t, tmp_path, epilogue=ep_bias_gelu, slots=TMA_EPILOGUE_SLOTS,
                         head=TMA_MATMUL_SIG, **kinds):
    """The composed kernel (kernels/matmul.py + the epilogue's source, as tk.matmul launches it) for
    sm_90a: (PTX, ir-opt, ptxas -v's report). `head`: the parameters up to C's strides."""
    from tessera.kernels import _files
    kw = config.kwargs
    sig = head.format(t=t, bm=kw["BLOCK_M"], bn=kw["BLOCK_N"], bk=kw["BLOCK_K"]) + slots.format(t=t)
    k = tessera.compile(_files.load("matmul").matmul_tma_epilogue_kernel, signature=sig, target="sm_90a",
                        num_warps=config.num_warps, num_stages=config.num_stages,
                        constexprs=dict(kw, EPILOGUE=epilogue, **(kinds or {"NUM_EPI": 1, "E0_KIND": 3})))
    ptx = tmp_path / "epi.ptx"
    ptx.write_text(k.asm["ptx"])
    proc = subprocess.run([str(PTXAS), "-arch=sm_90a", "-v", str(ptx), "-o", str(tmp_path / "epi.cubin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return k.asm["ptx"], k.asm["ir-opt"], proc.stderr


@pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")
@pytest.mark.parametrize("t", ["bf16", "fp16"])
@pytest.mark.parametrize("config", epilogue_configs(), ids=lambda c: "{BLOCK_M}x{BLOCK_N}x{BLOCK_K}".format(**c.kwargs)
                         + f"-w{c.num_warps}-s{c.num_stages}")
def test_tma_epilogue_matmul_is_an_mbarrier_ring_without_spills(config, t, tmp_path):
    """GEMM + bias + GELU through TMA: the same ring as matmul_tma_kernel (S stages of <=128-byte
    boxes on S mbarriers, no cp.async), wgmma, and ptxas neither spills nor serialises the wgmmas
    (C7514) for any Hopper config."""
    text, ir, report = compile_tma_epilogue(config, t, tmp_path)
    kw, stages = config.kwargs, config.num_stages
    boxes = -(-kw["BLOCK_K"] // 64) + -(-kw["BLOCK_N"] // 64)  # 128-byte boxes of A's K and B's N columns
    rings = 2 if config.num_warps > 4 else 1  # several warpgroups: an "empty" mbarrier per stage too
    assert text.count("cp.async.bulk.tensor.2d") == boxes * stages
    assert text.count("mbarrier.init.shared::cta.b64") == rings * stages
    assert text.count("mbarrier.arrive.expect_tx") == 2 * stages
    assert text.count("mbarrier.inval.shared::cta.b64") == rings * stages
    assert "cp.async.cg" not in text and "cp.async.ca" not in text
    assert "wgmma.mma_async" in text
    assert "C7514" not in report, report
    assert re.search(r"\b0 bytes spill stores, 0 bytes spill loads", report), report
    # The bias is a vector reloaded in the accumulator's layout: after the loop the one layout
    # conversion left is the 16-bit result's on its way to the store (docs/fusion.md).
    tail = ir[ir.index("dot_wait"):]
    conversions = re.findall(r"convert_layout %\d+ : <(\d+)x(\d+)x(\w+)>", tail)
    assert conversions == [(str(kw["BLOCK_M"]), str(kw["BLOCK_N"]), t.replace("fp", "f"))], conversions
    assert re.search(r"= load .* : <%dx%s>" % (kw["BLOCK_N"], t.replace("fp", "f")), tail)  # the bias, 1-D


@pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")
def test_tma_epilogue_matmul_residual_and_column_operands(tmp_path):
    """The other operand kinds on the default config: a row-major residual tile and a scalar
    (KIND 1 + 2), a column bias (KIND 4)."""
    config = hopper_configs()[0]

    @tessera.jit
    def ep_residual_scale(acc, residual, alpha):
        return acc * alpha + residual
    text, _, report = compile_tma_epilogue(config, "bf16", tmp_path, ep_residual_scale,
                                           ",*{t}:16,i32:16,i32:1,fp32,i32:16,i32:16" + ",i32:16" * 6,
                                           NUM_EPI=2, E0_KIND=1, E1_KIND=2)
    assert text.count("cp.async.bulk.tensor.2d") == 5 * config.num_stages and "C7514" not in report
    assert re.search(r"\b0 bytes spill stores, 0 bytes spill loads", report), report
    text, _, report = compile_tma_epilogue(config, "bf16", tmp_path, ep_bias_gelu,
                                           ",*{t}:16,i32:1,i32:16" + ",i32:16" * 9, NUM_EPI=1, E0_KIND=4)
    assert text.count("cp.async.bulk.tensor.2d") == 5 * config.num_stages and "C7514" not in report
    assert re.search(r"\b0 bytes spill stores, 0 bytes spill loads", report), report


def persistent_epilogue_configs():
    import importlib
    mm = importlib.import_module("tessera.kernels.matmul")
    return ([c for c in mm._epilogue_tma_configs() if c.kwargs.get("PERSISTENT") and not c.kwargs.get("PINGPONG")]
            + [mm._pingpong_config(c, mm._tma_block_shapes) for c in mm.HOPPER_PINGPONG_CONFIGS])


@pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")
@pytest.mark.parametrize("config", persistent_epilogue_configs(), ids=lambda c: c_name(c))
def test_tma_epilogue_persistent_forms_run_one_ring_across_tiles(config, tmp_path):
    """The epilogue kernel's persistent configs (bias + GELU, fp16): a producer warpgroup (num_warps + 4
    warps; with ping-pong two consumer groups of num_warps, 2 * num_warps + 4) walks the tile loop
    around the K loop, so its copies for the next tile go out while the consumers run this tile's
    epilogue; the consumers' only copies are none, and ptxas neither spills nor serialises the wgmmas."""
    text, ir, report = compile_tma_epilogue(config, "fp16", tmp_path,
                                            **{"NUM_EPI": 1, "E0_KIND": 3, "NUM_SMS": 132})
    start = ir.index("warp_specialize {")
    depth, end = 0, ir.index("} {", start) + 2  # the region after the attributes, to its closing brace
    for end in range(end, len(ir)):
        depth += {"{": 1, "}": -1}.get(ir[end], 0)
        if depth == 0:
            break
    producer = ir[start:end]
    assert producer.count("= for ") == 2 and producer.count("async_tma_copy") == 2
    warps = config.num_warps * (2 if config.kwargs.get("PINGPONG") else 1) + 4
    assert re.search(r"\.maxntid %d" % (32 * warps), text) or re.search(r"\.reqntid %d" % (32 * warps), text)
    assert "wgmma.mma_async" in text
    assert "C7514" not in report, report
    assert re.search(r"\b0 bytes spill stores, 0 bytes spill loads", report), report
    if config.kwargs.get("PINGPONG"):
        assert_pingpong(text, ir)


def c_name(config):
    import importlib
    return importlib.import_module("tessera.kernels.matmul").matmul_config_name(config).replace("/", "-")


def assert_pingpong(text, ir):
    """The ping-pong form (docs/tma.md): two consumer groups under one producer, taking turns at the
    K loop (tl.pingpong_*'s barriers 1 and 2, 256 threads), each group's own CTA barrier (5 or 6,
    128 threads) and scratch (group 1's above group 0's), registers moved to the consumers."""
    assert "warp_specialize {consumer_groups = 2, producer_warps = 4}" in ir
    assert ir.count("consumer_group : i32") == 1
    for kind in ("start", "wait", "pass"):
        assert 'barrier {pingpong = "%s"}' % kind in ir
    assert re.search(r'barrier %\d+ {pingpong = "wait"}', ir)  # the last pass taken back
    assert "@!p bar.sync 1, 256; @p bar.sync 2, 256;" in text
    assert "@!p bar.arrive 2, 256; @p bar.arrive 1, 256;" in text
    assert "@p bar.arrive 1, 256;" in text
    assert "@!p bar.sync 5, 128; @p bar.sync 6, 128;" in text  # the epilogue's conversion, per group
    assert "bar.sync 3, 256" not in text.split("bar.sync 4, 384")[0]  # no consumer-wide barrier before the join
    assert "setmaxnreg.dec.sync.aligned.u32 40" in text and "setmaxnreg.inc.sync.aligned.u32 232" in text
    assert text.count("mbarrier.init.shared::cta.b64") == text.count("mbarrier.inval.shared::cta.b64")  # once, not per group
    assert re.search(r"mbarrier.init.shared::cta.b64 \[%r\d+\], 128;", text)  # one group frees a stage


@pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")
@pytest.mark.parametrize("t", ["fp16", "bf16"])
@pytest.mark.parametrize("blocks", [(128, 128, 64, 4), (128, 128, 64, 3), (64, 128, 64, 4)], ids=str)
def test_pingpong_persistent_matmul(blocks, t, tmp_path):
    """matmul_tma_persistent_kernel with PINGPONG (warp_specialize=True on the tile loop, 4 warps):
    launched as 12 warps, the two consumer groups on alternate tiles (group g's loop starts g steps
    of NUM_SMS on and steps 2 * NUM_SMS), each group's ring position skipping the other's tiles; no
    spills, wgmma, the producer's two copies a step."""
    bm, bn, bk, stages = blocks
    from tessera.kernels import _files
    k = tessera.compile(_files.load("matmul").matmul_tma_persistent_kernel, target="sm_90a",
                        signature=TMA_MATMUL_SIG.format(t=t, bm=bm, bn=bn, bk=bk), num_warps=4, num_stages=stages,
                        constexprs=dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, NUM_SMS=132,
                                        WARP_SPECIALIZE=True, PINGPONG=True))
    assert k.metadata.num_warps == 12
    ptx = tmp_path / "pp.ptx"
    ptx.write_text(k.asm["ptx"])
    proc = subprocess.run([str(PTXAS), "-arch=sm_90a", "-v", str(ptx), "-o", str(tmp_path / "pp.cubin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"\b0 bytes spill stores, 0 bytes spill loads", proc.stderr), proc.stderr
    assert "C7514" not in proc.stderr
    text, ir = k.asm["ptx"], k.asm["ir-opt"]
    assert (".maxntid 384" in text or ".reqntid 384" in text) and "wgmma.mma_async" in text
    assert_pingpong(text, ir)
    assert text.count("cp.async.bulk.tensor.2d") == -(-bk // 64) + -(-bn // 64)  # the producer's copies, once
    # The consumers' tile loop: lb + group * NUM_SMS, step 2 * NUM_SMS.
    assert re.search(r"%(\d+) = consumer_group : i32", ir)
    assert re.search(r"= mul %\d+, %\d+ : i32\n.*= add %\d+, %\d+ : i32\n.*constant {value = 2} : i32\n"
                     r".*= mul %\d+, %\d+ : i32\n\s*barrier {pingpong = \"start\"}", ir)


@pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")
def test_pingpong_needs_four_warps_and_stays_off_by_default(tmp_path):
    """warp_specialize=True on the tile loop with 8 warps: no ping-pong (the groups are warpgroups),
    the K loop's own producer as before; PINGPONG=False: no consumer groups."""
    from tessera.kernels import _files
    sig = TMA_MATMUL_SIG.format(t="fp16", bm=128, bn=256, bk=64)
    kernel = _files.load("matmul").matmul_tma_persistent_kernel
    base = dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, NUM_SMS=132, WARP_SPECIALIZE=True)
    for pingpong in (False, True):
        k = tessera.compile(kernel, signature=sig, target="sm_90a", num_warps=8, num_stages=3,
                            constexprs=dict(base, PINGPONG=pingpong))
        assert k.metadata.num_warps == 12 and "consumer_group" not in k.asm["ir-opt"]
        assert "producer_warps = 4}" in k.asm["ir-opt"] and "consumer_groups" not in k.asm["ir-opt"]


@pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")
@pytest.mark.parametrize("config", epilogue_configs()[len(hopper_configs()):],
                         ids=lambda c: "{BLOCK_M}x{BLOCK_N}x{BLOCK_K}".format(**c.kwargs) + f"-w{c.num_warps}-s{c.num_stages}")
def test_tma_epilogue_extra_configs_fit_two_ctas_per_sm(config, tmp_path):
    """HOPPER_EPILOGUE_EXTRA_CONFIGS are there so that one CTA's epilogue can overlap another's
    wgmmas: with bias + GELU (fp16, the shapes' M, N, K multiples of 16 as the launcher specialises
    them) each must leave room for a second CTA on an H100/H200 SM: 228 KiB of shared memory (1 KiB
    reserved per CTA) and 64 Ki registers (allocated per warp in units of 256)."""
    from tessera.kernels import _files
    kw = config.kwargs
    sig = ("tensordesc<fp16[{bm},{bk}]>,tensordesc<fp16[{bk},{bn}]>,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32:1"
           .format(bm=kw["BLOCK_M"], bn=kw["BLOCK_N"], bk=kw["BLOCK_K"]) + TMA_EPILOGUE_SLOTS.format(t="fp16"))
    k = tessera.compile(_files.load("matmul").matmul_tma_epilogue_kernel, signature=sig, target="sm_90a",
                        num_warps=config.num_warps, num_stages=config.num_stages,
                        constexprs=dict(kw, EPILOGUE=ep_bias_gelu, NUM_EPI=1, E0_KIND=3))
    ptx = tmp_path / "epi.ptx"
    ptx.write_text(k.asm["ptx"])
    proc = subprocess.run([str(PTXAS), "-arch=sm_90a", "-v", str(ptx), "-o", str(tmp_path / "epi.cubin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"\b0 bytes spill stores, 0 bytes spill loads", proc.stderr), proc.stderr
    registers = int(re.search(r"Used (\d+) registers", proc.stderr).group(1))
    per_cta = -(-registers * 32 // 256) * 256 * config.num_warps
    ctas = min(228 * 1024 // (k.metadata.shared + 1024), 65536 // per_cta)
    assert ctas >= 2, (registers, k.metadata.shared)


@pytest.mark.parametrize("dtype,bn,bk,boxes", [("bf16", 128, 128, 2), ("fp8e4nv", 128, 128, 1), ("fp32", 64, 32, 1)])
def test_rank3_descriptor_with_a_leading_block_of_one_is_a_3d_tma_copy(dtype, bn, bk, boxes, tmp_path):
    """A [1, BN, BK] block of an [E, N, K] tensor (SGLang's fused MoE weights): one 3-D TMA copy per box, whose
    coordinates are innermost first (k + box offset, n, e); the store the same way."""
    args = ["compile", KERNELS, "--kernel", "desc_expert_tile", "--constexpr", f"BLOCK_N={bn}",
            "--constexpr", f"BLOCK_K={bk}", "--signature",
            f"tensordesc<{dtype}[1,{bn},{bk}]>,tensordesc<{dtype}[1,{bk},{bn}]>,*i32"]
    text = compile_ptx(args, tmp_path, "sm_90a")
    loads = re.findall(r"cp\.async\.bulk\.tensor\.3d\.shared::cluster\.global\.tile\.mbarrier::complete_tx::bytes "
                       r"\[%r\d+\], \[%rd\d+, \{%r\d+, %r\d+, %r\d+\}\], \[%r\d+\];", text)
    assert len(loads) == boxes
    assert "cp.async.bulk.tensor.2d" not in text
    assert len(re.findall(r"cp\.async\.bulk\.tensor\.3d\.global\.shared::cta\.bulk_group \[%rd\d+, \{%r\d+, %r\d+, "
                          r"%r\d+\}\], \[%r\d+\];", text)) >= 1


@pytest.mark.parametrize("dtype,shape,boxes", [("fp16", (2, 64, 64), 1), ("fp32", (4, 8, 64), 2), ("bf16", (2, 16, 128), 2)])
def test_descriptor_block_with_leading_dims_is_one_box_of_stacked_rows(dtype, shape, boxes, tmp_path):
    """A [B, M, N] block with B > 1: the descriptor's box spans the whole block in its leading dims, so each
    128-byte column box is one 3-D copy bringing B x M rows, and the mbarrier expects all of the block's bytes."""
    b, m, n = shape
    size = {"fp16": 2, "bf16": 2, "fp32": 4}[dtype]
    args = ["compile", KERNELS, "--kernel", "desc_stacked_blocks", "--constexpr", f"B={b}", "--constexpr", f"M={m}",
            "--constexpr", f"N={n}", "--signature", f"tensordesc<{dtype}[{b},{m},{n}]>,tensordesc<{dtype}[{b},{m},{n}]>,"
            "*fp32:16"]
    text = compile_ptx(args, tmp_path, "sm_90a")
    loads = re.findall(r"cp\.async\.bulk\.tensor\.3d\.shared::cluster\.global\.tile", text)
    stores = re.findall(r"cp\.async\.bulk\.tensor\.3d\.global\.shared::cta\.bulk_group", text)
    assert len(loads) == boxes and len(stores) == boxes
    expected = re.search(r"mov\.(?:b|u)32\s+(%r\d+), " + str(b * m * n * size) + ";", text)
    assert expected and re.search(r"mbarrier\.arrive\.expect_tx\.shared::cta\.b64 _, \[%r\d+\], " +
                                  re.escape(expected.group(1)) + ";", text), "expect_tx is not the whole block"


def test_rank4_descriptor_block_with_leading_dims_compiles(tmp_path):
    args = ["compile", KERNELS, "--kernel", "desc_stacked_blocks4", "--constexpr", "A=2", "--constexpr", "B=2",
            "--constexpr", "M=16", "--constexpr", "N=64", "--signature",
            "tensordesc<fp16[2,2,16,64]>,tensordesc<fp16[2,2,16,64]>"]
    text = compile_ptx(args, tmp_path, "sm_90a")
    assert len(re.findall(r"cp\.async\.bulk\.tensor\.4d\.shared::cluster\.global\.tile", text)) == 1


@tessera.jit
def user_persistent_matmul(a_desc, b_desc, c_ptr, M, N, K, stride_cm, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                           BLOCK_K: tl.constexpr, NUM_SMS: tl.constexpr, WARP_SPECIALIZE: tl.constexpr):
    """A user's persistent TMA GEMM in the style of Triton's tutorial 09 (warp_specialize on the
    tile loop, a plain K loop), with a fused residual-free store."""
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_tiles = tl.cdiv(M, BLOCK_M) * num_pid_n
    for tile_id in tl.range(tl.program_id(0), num_tiles, NUM_SMS, warp_specialize=WARP_SPECIALIZE):
        pid_m = tile_id // num_pid_n
        pid_n = tile_id % num_pid_n
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(tl.cdiv(K, BLOCK_K)):
            a = a_desc.load([pid_m * BLOCK_M, ki * BLOCK_K])
            b = b_desc.load([ki * BLOCK_K, pid_n * BLOCK_N])
            acc = tl.dot(a, b, acc)
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
        tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], acc.to(tl.float16), mask=mask)


@pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")
def test_user_persistent_gemm_with_warp_specialize_on_the_tile_loop_pingpongs(tmp_path):
    """Issue 35 item 3: a user's own persistent GEMM (tutorial 09's spelling) with 4 warps takes the
    same ping-pong form as the bundled kernel; without the flag it stays as it was (no producer)."""
    sig = "tensordesc<fp16[128,64]>,tensordesc<fp16[64,128]>,*fp16:16,i32,i32,i32,i32:16"
    consts = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, NUM_SMS=132)
    k = tessera.compile(user_persistent_matmul, signature=sig, target="sm_90a", num_warps=4, num_stages=4,
                        constexprs=dict(consts, WARP_SPECIALIZE=True))
    assert k.metadata.num_warps == 12
    assert_pingpong(k.asm["ptx"], k.asm["ir-opt"])
    ptx = tmp_path / "user.ptx"
    ptx.write_text(k.asm["ptx"])
    proc = subprocess.run([str(PTXAS), "-arch=sm_90a", "-v", str(ptx), "-o", str(tmp_path / "user.cubin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and re.search(r"\b0 bytes spill stores, 0 bytes spill loads", proc.stderr), proc.stderr
    plain = tessera.compile(user_persistent_matmul, signature=sig, target="sm_90a", num_warps=4, num_stages=4,
                            constexprs=dict(consts, WARP_SPECIALIZE=False))
    assert plain.metadata.num_warps == 4 and "warp_specialize {" not in plain.asm["ir-opt"]


@tessera.jit
def user_triangular_matmul(a_desc, b_desc, c_ptr, M, N, K, stride_cm, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                           BLOCK_K: tl.constexpr, NUM_SMS: tl.constexpr):
    """A persistent GEMM whose K loop's length depends on the tile (a lower-triangular A): the two
    groups could not skip each other's ring stages."""
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_tiles = tl.cdiv(M, BLOCK_M) * num_pid_n
    for tile_id in tl.range(tl.program_id(0), num_tiles, NUM_SMS, warp_specialize=True):
        pid_m = tile_id // num_pid_n
        pid_n = tile_id % num_pid_n
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(pid_m + 1):
            acc = tl.dot(a_desc.load([pid_m * BLOCK_M, ki * BLOCK_K]), b_desc.load([ki * BLOCK_K, pid_n * BLOCK_N]), acc)
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
        tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], acc.to(tl.float16), mask=mask)


@pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")
def test_no_pingpong_where_the_k_loop_depends_on_the_tile():
    sig = "tensordesc<fp16[128,64]>,tensordesc<fp16[64,128]>,*fp16:16,i32,i32,i32,i32:16"
    k = tessera.compile(user_triangular_matmul, signature=sig, target="sm_90a", num_warps=4, num_stages=4,
                        constexprs=dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, NUM_SMS=132))
    assert k.metadata.num_warps == 4 and "warp_specialize {" not in k.asm["ir-opt"]
    assert "async_tma_copy" in k.asm["ir-opt"]  # the K loop's ring, as without the flag


@pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")
@pytest.mark.parametrize("residual", [False, True])
def test_bench_user_persistent_gemm_pingpongs_without_spills(residual, tmp_path):
    """bench/fusion.py's user-fused@pingpong / user-plain@pingpong kernel (tutorial 09's persistent
    GEMM plus one residual line) as the bench launches it: the ping-pong form; no spills without the
    residual, a few words with it (the fp16 residual tile beside the fp32 accumulator in 232
    registers; tk.matmul's residual epilogue spills 28 bytes at 128x128x64/w4/s4/pingpong too, and
    12 at 255 registers in the 128x128x64/w4/s4/persistent form)."""
    from conftest import load_bench_module
    kernel = load_bench_module("user_matmul.py", "user_matmul_bench").user_persistent_matmul_residual
    sig = ("tensordesc<fp16[128,64]>,tensordesc<fp16[64,128]>,*fp16:16,*fp16:16,i32,i32,i32,i32:16,i32:1,"
           "i32:16,i32:1")
    k = tessera.compile(kernel, signature=sig, target="sm_90a", num_warps=4, num_stages=4,
                        constexprs=dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, NUM_SMS=132, RESIDUAL=residual))
    assert k.metadata.num_warps == 12
    assert_pingpong(k.asm["ptx"], k.asm["ir-opt"])
    ptx = tmp_path / "u.ptx"
    ptx.write_text(k.asm["ptx"])
    proc = subprocess.run([str(PTXAS), "-arch=sm_90a", "-v", str(ptx), "-o", str(tmp_path / "u.cubin")],
                          capture_output=True, text=True)
    spills = re.search(r"\b(\d+) bytes spill stores", proc.stderr)
    assert proc.returncode == 0 and spills and int(spills.group(1)) <= (32 if residual else 0), proc.stderr
