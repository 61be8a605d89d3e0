"""GEMM epilogues with a full-size operand (a residual tile), issue 35: what the compiler makes of
its loads on sm_90a, checked in the PTX, the SASS and ptxas's report (no GPU needed).

* fusion: the residual, loaded 16-bit in the store's layout and widened for the add, crosses into
  the accumulator's layout as 16-bit values (before: f32, twice the shared-memory traffic);
* hoist-epilogue-loads: its loads are issued before the wait for the K loop's last wgmmas (their
  latency runs under them), marked evict_first (read once: they leave L2 to A and B), without
  spills and without costing the extra configs their second CTA per SM;
* the same for a user's tutorial-style GEMM with one added line (bench/user_matmul.py), the rate
  issue 35's acceptance 3 asks of it."""
import re
import subprocess

import pytest

from conftest import PTXAS, ROOT, run_cli

import tessera  # noqa: E402
import tessera.language as tl  # noqa: E402

from test_tma_ptx import TMA_MATMUL_SIG, compile_tma_epilogue, epilogue_configs, hopper_configs  # noqa: E402
from test_vectorized_access import sass  # noqa: E402

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")

# E0 the residual (row-major: strides N and 1), E1 the scalar alpha; E2, E3 unused.
RESIDUAL_SLOTS = ",*{t}:16,i32:16,i32:1,fp32,i32:16,i32:16" + ",i32:16" * 6
LAST_WAIT = "wgmma.wait_group.sync.aligned 0;"


@tessera.jit
def ep_residual_scale(acc, residual, alpha):
    return acc * alpha + residual


# The TMA epilogue kernel's parameters up to C's strides: M, N, K multiples of 16 (as the launcher
# specialises 4096 or 8192), or not (RAGGED: N's mask then changes every element, loads are 16-bit).
ALIGNED = "tensordesc<{t}[{bm},{bk}]>,tensordesc<{t}[{bk},{bn}]>,*{t}:16,i32:16,i32:16,i32:16,i32:16,i32:1"
RAGGED = TMA_MATMUL_SIG


def config_id(c):
    return "{BLOCK_M}x{BLOCK_N}x{BLOCK_K}".format(**c.kwargs) + f"-w{c.num_warps}-s{c.num_stages}"


def residual_loads(ptx):
    return [m.start() for m in re.finditer(r"ld\.global\.L1::evict_first\.L2::cache_hint\.v4\.b32", ptx)]


def conversions_after_the_loop(ir):
    tail = ir[ir.rindex("yield"):]
    return re.findall(r"convert_layout %\d+ : <\d+x\d+x(\w+)>", tail)


@pytest.mark.parametrize("config", epilogue_configs(), ids=config_id)
def test_residual_epilogue_of_the_tma_gemm(config, tmp_path):
    ptx, ir, report = compile_tma_epilogue(config, "fp16", tmp_path, ep_residual_scale, RESIDUAL_SLOTS, ALIGNED,
                                           NUM_EPI=2, E0_KIND=1, E1_KIND=2)
    kw = config.kwargs
    assert conversions_after_the_loop(ir) == ["f16", "f16"]  # the residual's and the result's
    loads = residual_loads(ptx)
    # Every thread's share of the BLOCK_M x BLOCK_N residual, 8 halves per 16-byte load.
    assert len(loads) == kw["BLOCK_M"] * kw["BLOCK_N"] // (8 * 32 * config.num_warps)
    assert max(loads) < ptx.rindex(LAST_WAIT)
    assert re.search(r"\b0 bytes spill stores, 0 bytes spill loads", report), report
    assert "C7514" not in report, report
    if config in epilogue_configs()[len(hopper_configs()):]:  # the 2-CTA configs keep their second CTA
        registers = int(re.search(r"Used (\d+) registers", report).group(1))
        per_cta = -(-registers * 32 // 256) * 256 * config.num_warps
        assert 65536 // per_cta >= 2, registers


@pytest.mark.parametrize("config", epilogue_configs(), ids=config_id)
def test_ragged_residual_epilogue_does_not_spill(config, tmp_path):
    """Along a ragged N the residual is loaded element by element (a register each): too many to
    hold across the wait beside the accumulator, those loads stay after it. No spills either way."""
    ptx, ir, report = compile_tma_epilogue(config, "fp16", tmp_path, ep_residual_scale, RESIDUAL_SLOTS, RAGGED,
                                           NUM_EPI=2, E0_KIND=1, E1_KIND=2)
    assert conversions_after_the_loop(ir) == ["f16", "f16"]
    assert re.search(r"\b0 bytes spill stores, 0 bytes spill loads", report), report
    assert "evict_first" not in ptx


def test_residual_loads_are_before_the_wait_in_the_sass(tmp_path):
    ptx, _, _ = compile_tma_epilogue(hopper_configs()[0], "bf16", tmp_path, ep_residual_scale, RESIDUAL_SLOTS,
                                     ALIGNED, NUM_EPI=2, E0_KIND=1, E1_KIND=2)
    path = tmp_path / "res.ptx"
    path.write_text(ptx)
    text = sass(tmp_path, path)
    loads = [m.start() for m in re.finditer(r"LDG\.E\.EF\.128", text)]
    assert len(loads) == 16
    assert max(loads) < text.rindex("WARPGROUP.DEPBAR.LE gsb0, 0x0")


def test_a_bias_row_is_neither_hoisted_nor_evict_first(tmp_path):
    """A bias row is read by every tile of its column (L2 hits): it stays after the wait, in the
    accumulator's layout (fusion's third rule), with the default cache policy."""
    ptx, _, _ = compile_tma_epilogue(hopper_configs()[0], "fp16", tmp_path, head=ALIGNED)
    assert "evict_first" not in ptx and "ld.volatile.shared" not in ptx


USER_SIG = "*fp16:16,*fp16:16,*fp16:16,*fp16:16" + ",i32:16" * 4 + ",i32:1,i32:16,i32:1,i32:16,i32:1,i32:16,i32:1"


@pytest.mark.parametrize("bm,bn,bk,warps,stages", [(128, 256, 64, 8, 3), (128, 128, 64, 4, 3), (64, 64, 64, 4, 3)])
def test_user_gemm_with_a_residual(bm, bn, bk, warps, stages, tmp_path):
    """bench/user_matmul.py's user_matmul_residual (pointer loads, `acc += tl.load(r_ptrs, mask=...)`)
    gets what the bundled kernel gets: a 16-bit conversion, loads before the last wait, evict_first."""
    args = ["compile", "bench/user_matmul.py", "--kernel", "user_matmul_residual", "--signature", USER_SIG,
            "--constexpr", f"BLOCK_M={bm}", "--constexpr", f"BLOCK_N={bn}", "--constexpr", f"BLOCK_K={bk}",
            "--constexpr", "GROUP_M=8", "--num-warps", str(warps), "--num-stages", str(stages), "--arch", "sm_90a"]
    ir = run_cli(args + ["--emit", "ir-opt"], check=True).stdout
    assert conversions_after_the_loop(ir) == ["f16", "f16"]
    ptx_path = tmp_path / "user.ptx"
    run_cli(args + ["-o", str(ptx_path)], check=True)
    ptx = ptx_path.read_text()
    loads = residual_loads(ptx)
    assert len(loads) == bm * bn // (8 * 32 * warps)
    assert max(loads) < ptx.rindex(LAST_WAIT)
    proc = subprocess.run([str(PTXAS), "-arch=sm_90a", "-v", str(ptx_path), "-o", str(tmp_path / "u.cubin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"\b0 bytes spill stores, 0 bytes spill loads", proc.stderr), proc.stderr


@tessera.jit
def gemm_then_reread(a_ptr, b_ptr, c_ptr, r_ptr, K, BLOCK: tl.constexpr):
    """Stores its product into C, then reads C back: that load must stay after the store."""
    offs = tl.arange(0, BLOCK)
    ks = tl.arange(0, 64)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k in range(0, K, 64):
        a = tl.load(a_ptr + offs[:, None] * K + (k + ks)[None, :])
        b = tl.load(b_ptr + (k + ks)[:, None] * BLOCK + offs[None, :])
        acc = tl.dot(a, b, acc)
    tile = offs[:, None] * BLOCK + offs[None, :]
    other = tl.load(r_ptr + tile)
    tl.store(c_ptr + tile, acc.to(tl.float16))
    again = tl.load(c_ptr + tile)
    tl.store(r_ptr + tile, again + other)


def test_a_load_after_a_store_stays_after_it():
    k = tessera.compile(gemm_then_reread, signature="*fp16:16,*fp16:16,*fp16:16,*fp16:16,i32:16",
                        constexprs={"BLOCK": 64}, num_warps=4, num_stages=3, target="sm_90a")
    ir = k.asm["ir-opt"]
    body = ir[ir.rindex("yield"):]
    wait = body.index("dot_wait")
    loads = [m.start() for m in re.finditer(r"= load ", body)]
    first_store = body.index("store ")
    assert len(loads) == 2
    assert loads[0] < wait < first_store < loads[1]  # `other` moved up, `again` did not
    assert re.search(r"dot_wait %\d+, %\d+ :", body)  # the moved load anchors the wait


WIDENED_DOT_OPERANDS = '''import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr, y_ptr, z_ptr, DM: tl.constexpr, DK: tl.constexpr, DN: tl.constexpr):
    a = tl.load(x_ptr + tl.arange(0, DM)[:, None] * DK + tl.arange(0, DK)[None, :]).to(tl.float32)
    b = tl.load(y_ptr + tl.arange(0, DK)[:, None] * DN + tl.arange(0, DN)[None, :]).to(tl.float32)
    tl.store(z_ptr + tl.arange(0, DM)[:, None] * DN + tl.arange(0, DN)[None, :], tl.dot(a, b))
'''


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_widened_dot_operands_keep_their_cast_in_a_register_layout(tmp_path, arch):
    # The conversion into a dot-operand layout stays after the widening cast (fuzz_pipeline found
    # the moved cast left in #dot_op, which codegen cannot lower).
    src = tmp_path / "k.py"
    src.write_text(WIDENED_DOT_OPERANDS)
    proc = run_cli(["compile", str(src), "--kernel", "k", "--signature", "*bf16:16,*fp16:16,*fp32:16",
                    "--constexpr", "DM=16", "--constexpr", "DN=32", "--constexpr", "DK=32", "--num-warps", "2",
                    "--arch", arch, "--tensor-cores", "-o", str(tmp_path / "k.ptx")])
    assert proc.returncode == 0, proc.stderr
