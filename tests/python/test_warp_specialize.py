"""tl.range(..., warp_specialize=True) (docs/tma.md): a loop pipelined through TMA rings gets a
producer warpgroup that issues its copies, launched as 4 warps more than num_warps; the
consumers only wait for stages and release them. What the compiler makes of it for sm_90a,
checked in the IR, the PTX and (where ptxas runs) the SASS; the GPU suite runs the kernels
(tests/gpu/test_tma.py, test_attention.py)."""
import re

import pytest

import tessera
from conftest import ROOT, run_cli
from test_tma_ptx import TMA_MATMUL_SIG, compile_ptx, tma_matmul_args

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")

MATMUL = str(ROOT / "kernels" / "matmul.py")


def tma_matmul(warps=8, stages=4, bm=128, bn=256, bk=64, ws=True, target="sm_90a"):
    return tessera.compile(MATMUL, kernel="matmul_tma_kernel",
                           signature=TMA_MATMUL_SIG.format(t="bf16", bm=bm, bn=bn, bk=bk),
                           constexprs={"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8,
                                       "WARP_SPECIALIZE": ws},
                           num_warps=warps, num_stages=stages, target=target)


def producer_and_consumers(ir):
    """The warp_specialize region's text and the rest of the kernel after it."""
    start = ir.index("warp_specialize {")
    depth, i = 0, ir.index("} {", start) + 2  # past the attributes, the region
    for i in range(i, len(ir)):
        depth += {"{": 1, "}": -1}.get(ir[i], 0)
        if depth == 0:
            break
    return ir[start:i], ir[i:]


@pytest.mark.parametrize("warps,stages", [(8, 4), (4, 3)])
def test_the_producer_issues_every_copy_and_waits_on_the_empty_mbarriers(warps, stages):
    k = tma_matmul(warps, stages, bn=256 if warps == 8 else 128)
    ir = k.asm["ir-opt"]
    producer, consumers = producer_and_consumers(ir)
    assert "producer_warps = 4" in producer
    # The buffers and mbarriers come first (the producer copies into them from the start).
    assert ir.index("mbarrier_alloc {arrivals = 2}") < ir.index("warp_specialize")
    assert f"mbarrier_alloc {{arrivals = {32 * warps}}}" in ir  # every consumer thread releases a stage
    # The producer: one loop, per iteration a wait on the stage's empty mbarrier, then A's and B's copies.
    loop = producer[producer.index(" for "):]
    assert loop.index("mbarrier_wait") < loop.index("async_tma_copy")
    assert loop.count("async_tma_copy") == 2 and producer.count("async_tma_copy") == 2  # no prologue
    assert "leader" not in producer
    # The consumers: no copies, no barrier in the loop; they wait for a stage and release it.
    assert "async_tma_copy" not in consumers
    body = consumers[consumers.index(" for "):consumers.index("yield")]
    assert body.index("mbarrier_wait") < body.index("= dot ") < body.index("mbarrier_arrive")
    assert "barrier\n" not in body.replace("mbarrier", "")
    assert "join_producer = 1" in consumers  # before the mbarriers are invalidated
    assert k.metadata.num_warps == warps + 4


@pytest.mark.parametrize("backend", ["llvm", "nvrtc"])
def test_two_consumer_warpgroups_take_the_producers_registers(backend, tmp_path):
    """12 warps, 168 registers at entry (.reqntid 384, .minnctapersm 1; NVRTC: __launch_bounds__(384, 1), .maxntid);
    the producer gives back to 40 and the two consumer warpgroups take 232 (4 x 40 + 8 x 232 =
    12 x 168). After the split, CTA barriers are the consumers' named barrier 3 (256 threads),
    and the producer arrives on barrier 4 as it exits."""
    text = compile_ptx(tma_matmul_args(warps=8, stages=4) + ["--constexpr", "WARP_SPECIALIZE=1", "--backend", backend],
                       tmp_path)
    assert re.search(r"\.%s 384, 1, 1" % ("reqntid" if backend == "llvm" else "maxntid"), text)
    assert ".minnctapersm 1" in text
    assert "setmaxnreg.dec.sync.aligned.u32 40;" in text and "setmaxnreg.inc.sync.aligned.u32 232;" in text
    assert "bar.arrive 4, 384;" in text and "bar.sync 4, 384;" in text
    split = text.index("setmaxnreg.inc")
    assert "bar.sync 3, 256;" in text[split:]
    assert not re.search(r"bar\.sync\s+0;|barrier\.sync\s+0;|bar\.sync 0;", text[split:])
    assert text.count("cp.async.bulk.tensor.2d") == 5  # one loop's copies: A (1 box) and B (4 boxes)


def test_one_consumer_warpgroup_keeps_its_registers(tmp_path):
    text = compile_ptx(tma_matmul_args(128, 128, 64, 4, 3) + ["--constexpr", "WARP_SPECIALIZE=1"], tmp_path)
    assert re.search(r"\.(reqntid|maxntid) 256, 1, 1", text)  # maxntid: NVRTC (TESSERA_BACKEND=nvrtc)
    assert "setmaxnreg" not in text and "bar.sync 3, 128;" in text


def test_sass_has_the_register_handover(tmp_path):
    from test_vectorized_access import sass
    ptx = tmp_path / "ws.ptx"
    run_cli(tma_matmul_args() + ["--constexpr", "WARP_SPECIALIZE=1", "--arch", "sm_90a", "-o", str(ptx)], check=True)
    text = sass(tmp_path, ptx)
    assert text.count("USETMAXREG") == 2, "ptxas dropped setmaxnreg (register count at entry unknown?)"
    assert "UTMALDG.2D" in text and "HGMMA.64x256x16.F32.BF16" in text


def test_without_the_hint_or_without_tma_copies_nothing_is_specialised(tmp_path):
    """A hint: the TMA matmul without it, and a loop with the hint but no TMA copies, are
    pipelined as before, with num_warps warps."""
    k = tma_matmul(ws=False)
    assert "warp_specialize {" not in k.asm["ir-opt"] and k.metadata.num_warps == 8
    path = tmp_path / "ws_plain_loop.py"
    path.write_text('''
import tessera
import tessera.language as tl

@tessera.jit
def running_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for i in tl.range(0, n, BLOCK, warp_specialize=True):
        acc += tl.load(x_ptr + i + offs)
    tl.store(out_ptr + offs, acc)
''')
    k = tessera.compile(str(path), kernel="running_sum", signature="*fp32:16,*fp32:16,i32", constexprs={"BLOCK": 128},
                        num_warps=4, target="sm_90a")
    assert "warp_specialize {" not in k.asm["ir-opt"] and k.metadata.num_warps == 4


def test_warp_specialize_must_be_a_constexpr(tmp_path):
    src = tmp_path / "k.py"
    src.write_text('''import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr, n, flag):
    for i in tl.range(0, n, warp_specialize=flag):
        tl.store(x_ptr + i, 1.0)
''')
    proc = run_cli(["compile", str(src), "--kernel", "k", "--signature", "*fp32,i32,i32"])
    assert proc.returncode == 1
    assert f"{src}:6:" in proc.stderr and "warp_specialize must be a constexpr bool" in proc.stderr
    assert "^" in proc.stderr


def test_without_wgmma_the_hint_is_dropped():
    """sm_90 (not sm_90a) has no wgmma: the ring feeds no wgmma dot, nothing is specialised."""
    k = tma_matmul(target="sm_90")
    assert "warp_specialize {" not in k.asm["ir-opt"] and k.metadata.num_warps == 8


def test_attention_specialises_its_unmasked_sweep():
    """attn_fwd_kernel(TMA=True, WARP_SPECIALIZE=True): the first sweep's K and V rings are the
    producer's; the second sweep (diagonal / ragged blocks) stays the consumers' own ring."""
    from test_attention_ptx import KERNEL_FILE, signature
    sig = signature("attn_fwd_kernel", "bf16").split(",")
    sig[1] = sig[2] = "tensordesc<bf16[128,128]>"
    k = tessera.compile(str(KERNEL_FILE), kernel="attn_fwd_kernel", signature=",".join(sig),
                        constexprs={"HEAD_DIM": 128, "BLOCK_M": 128, "BLOCK_N": 128, "CAUSAL": True, "TMA": True,
                                    "WARP_SPECIALIZE": True},
                        num_warps=8, num_stages=3, target="sm_90a")
    producer, consumers = producer_and_consumers(k.asm["ir-opt"])
    assert producer.count("async_tma_copy %K,") == 1 and producer.count("async_tma_copy %V,") == 1
    first = consumers[consumers.index(" for "):]
    first = first[:first.index("yield")]
    assert "async_tma_copy" not in first
    assert consumers.count("async_tma_copy %K,") >= 2  # the second sweep's prologue and loop
    assert k.metadata.num_warps == 12
    assert "setmaxnreg.inc.sync.aligned.u32 232;" in k.asm["ptx"]


def test_the_attention_table_specialises_two_consumer_warpgroups():
    """The TMA forward takes a producer where two consumer warpgroups can have its registers
    (D128's 128 x 128 / 8 warps); D64's 4 warps would lose occupancy, and a config that asks for
    other blocks gets the rule applied to its own."""
    import tessera.kernels as tk
    from tessera.kernels.attention import _config
    assert tk.attention_config(128, tma=True, wgmma=True, keys=4096)["WARP_SPECIALIZE"] is True
    assert tk.attention_config(128, True, tma=True, wgmma=True, keys=1024)["WARP_SPECIALIZE"] is False  # pointer blocks
    assert tk.attention_config(64, tma=True, wgmma=True, keys=4096)["WARP_SPECIALIZE"] is False
    assert tk.attention_config(128, tma=False, wgmma=True)["WARP_SPECIALIZE"] is False
    assert _config(128, False, {"num_warps": 4, "BLOCK_M": 64}, tma=True)["WARP_SPECIALIZE"] is False
    assert _config(128, False, {"WARP_SPECIALIZE": False}, tma=True)["WARP_SPECIALIZE"] is False


def test_barriers_and_register_handover_are_convergent():
    """Named barriers and setmaxnreg are inline PTX that a whole warp must reach at one place
    (.aligned): marked convergent, so that LLVM keeps them out of paths a warp may split across.
    Without the mark, tail duplication copied the consumers' bar.sync into both sides of the
    thread-0 branch that invalidates the mbarriers, and the kernel hung on the GPU."""
    ll = tma_matmul().asm["llir"]
    attrs = dict(re.findall(r"^attributes (#\d+) = \{ (.*) \}$", ll, re.M))
    calls = re.findall(r'call void asm sideeffect "((?:bar\.|setmaxnreg)[^"]*)".*\) (#\d+)', ll)
    assert len(calls) >= 5
    for text, group in calls:
        assert "convergent" in attrs[group].split(), text


def test_a_persistent_kernel_keeps_one_ring_across_its_tiles():
    """matmul_tma_persistent_kernel: the producer mirrors the tile loop around the K loop and its
    stage, phase and count run on from tile to tile; the consumers' K loop takes its stage and
    phase from the tile loop, releases the tile's last stage after the loop (read by the async
    dot, waited for there), and the ring is freed after the tile loop."""
    sig = TMA_MATMUL_SIG.format(t="bf16", bm=128, bn=256, bk=64)
    k = tessera.compile(MATMUL, kernel="matmul_tma_persistent_kernel", signature=sig,
                        constexprs={"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8, "NUM_SMS": 132,
                                    "WARP_SPECIALIZE": True}, num_warps=8, num_stages=3, target="sm_90a")
    producer, consumers = producer_and_consumers(k.asm["ir-opt"])
    assert producer.count("= for ") == 2 and producer.count("async_tma_copy") == 2
    tiles = consumers[consumers.index("= for "):]
    inner = tiles.index("= for ", 1)
    k_loop_end = tiles.index("dot_wait")
    assert tiles[k_loop_end:].index("mbarrier_arrive") < tiles[k_loop_end:].index("store ")  # the last stage
    assert tiles.rindex("barrier {join_producer = 1}") > tiles.rindex("store ")  # after the tile loop
    assert tiles.index("local_dealloc") > tiles.rindex("store ") and inner > 0
    assert "async_tma_copy" not in consumers
