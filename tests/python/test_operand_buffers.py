"""wgmma (and mma.sync) B operands computed in a pipelined loop (fla's chunk_gated_delta_rule_fwd_h: the state
halves h1, h2 for v = w1 @ h1 + w2 @ h2, and v for h1 += k1^T @ v, h2 += k2^T @ v) are stored
into their own one-stage buffers right after they are computed, with one fence and barrier before
the first dot reading them (compiler/passes/SoftwarePipelineOperandBuffers.cpp): v, read by two
dots, is stored once, and the dots no longer stage B with a barrier before and after each.
Checked in the IR, in PTX, and by the interpreter on the IR after all passes against numpy."""
import re
import sys

import numpy as np
import pytest

from conftest import ROOT
from lang_support import compile_and_assemble, compile_kernel, first_loop

import tessera

sys.path.insert(0, str(ROOT / "tests" / "python" / "lang_kernels"))
from gated_state_loop import gated_state_halves  # noqa: E402

SIG = "*bf16:16,*bf16:16,*bf16:16,*fp32:16,*fp32:16,*bf16:16,*fp32:16,i32"


def test_b_operands_get_buffers_and_share_barriers():
    ir = compile_kernel("gated_state_loop.py", "gated_state_halves", SIG, {"BV": 32, "BT": 64}, emit="ir-opt",
                        extra=["--num-warps", "4", "--num-stages", "2"])
    body = first_loop(ir)[1]
    stores = [line for line in body if "local_store" in line]
    assert len(stores) == 3, stores  # h1, h2 and v, each once
    # the loop head's barrier, one before the first dot reading h1 / h2, one before v's
    assert sum(line.strip() == "barrier" for line in body) == 3, body


@pytest.mark.parametrize("stages, buffered", [(2, True), (3, False)])
def test_operands_of_async_dots_stay_staged_by_the_dots(stages, buffered):
    # with 3 stages the GEMM's dot runs on into the next iteration (async): a buffer of its B
    # would be overwritten under it by the next iteration's store
    ir = compile_kernel("gated_state_loop.py", "scaled_b_matmul", "*bf16:16,*bf16:16,*fp32:16,i32",
                        {"BM": 64, "BN": 64, "BK": 64}, emit="ir-opt",
                        extra=["--num-warps", "4", "--num-stages", str(stages)])
    body = "\n".join(first_loop(ir)[1])
    assert ("async = 1" in body) != buffered
    assert ("local_store" in body) == buffered


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_state_read_at_the_top_keeps_its_dots_synchronous(stages):
    # h is stored and cast for w @ h at the top of each iteration: an async update would be
    # waited for right there, and would cost the copies a stage
    ir = compile_kernel("gated_state_loop.py", "gated_state_halves", SIG, {"BV": 32, "BT": 64}, emit="ir-opt",
                        extra=["--num-warps", "4", "--num-stages", str(stages)])
    body = "\n".join(first_loop(ir)[1])
    assert "async = 1" not in body and body.count("local_store") == 3
    assert "async_wait {pending = %d}" % (stages - 2) in body


def test_b_operand_buffers_ptx(tmp_path):
    ptx = compile_and_assemble(tmp_path, "gated_state_loop.py", "gated_state_halves", SIG, {"BV": 32, "BT": 64},
                               extra=["--num-warps", "4", "--num-stages", "2"])
    loop = ptx[ptx.index("cp.async.wait_group"):]
    # dots staging their own B: two barriers a dot (eight); here three for the four dots
    # (plus the loop head's and the layout conversions' own)
    assert loop.count("bar.sync") <= 16, loop.count("bar.sync")
    assert loop.count("wgmma.mma_async") == 16


@pytest.mark.parametrize("warps", [2, 8])  # 8: M = 64 fits no two warpgroups
def test_mma_sync_b_operands_get_buffers_without_fences(warps, tmp_path):
    # mma.sync reads B with ldmatrix (the generic proxy): a barrier publishes the stores
    extra = ["--num-warps", str(warps), "--num-stages", "2"]
    ir = compile_kernel("gated_state_loop.py", "gated_state_halves", SIG, {"BV": 32, "BT": 64}, emit="ir-opt",
                        extra=extra)
    body = first_loop(ir)[1]
    assert "#mma<version=2" in ir
    assert sum("local_store" in line for line in body) == 3
    assert sum(line.strip() == "barrier" for line in body) == 3, body
    assert not any("fence_async_shared" in line for line in body)
    ptx = compile_and_assemble(tmp_path, "gated_state_loop.py", "gated_state_halves", SIG, {"BV": 32, "BT": 64},
                               extra=extra)
    loop = ptx[ptx.index("cp.async.wait_group"):]
    assert "fence.proxy.async" not in loop and loop.count("mma.sync") > 0


def reference(k, v, w, g, h0, T, BT):
    f16 = lambda x: x.astype(np.float16).astype(np.float64)  # noqa: E731
    h = h0.astype(np.float64)
    states = []
    for c in range(0, T, BT):
        sl = slice(c, min(T, c + BT))
        states.append(f16(h))
        vn = v[sl].astype(np.float64) - w[sl].astype(np.float64) @ f16(h)
        last = np.float64(g[sl.stop - 1])
        vn = vn * np.exp2(last - g[sl].astype(np.float64))[:, None]
        h = h * np.exp2(last) + k[sl].astype(np.float64).T @ f16(vn)
    return np.stack(states), h


@pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")
@pytest.mark.parametrize("T, stages, warps", [(256, 2, 4), (200, 3, 4), (200, 2, 2)])  # 2 warps: mma.sync
def test_interpreted_after_all_passes(monkeypatch, T, stages, warps):
    monkeypatch.setenv("TESSERA_INTERPRET_PASSES", "1")
    kernel = tessera.jit(gated_state_halves.fn, interpret=True)
    BV, BT = 32, 64
    rng = np.random.default_rng(T)
    k = (rng.standard_normal((T, 128)) * 0.1).astype(np.float16)
    w = (rng.standard_normal((T, 128)) * 0.05).astype(np.float16)
    v = (rng.standard_normal((T, BV)) * 0.5).astype(np.float16)
    g = np.cumsum(-rng.random(T) * 0.05).astype(np.float32)
    h0 = rng.standard_normal((128, BV)).astype(np.float32)
    h = np.full((-(-T // BT), 128, BV), np.nan, np.float16)
    ht = np.full((128, BV), np.nan, np.float32)
    kernel[(1,)](k, v, w, g, h0, h, ht, T, BV=BV, BT=BT, num_warps=warps, num_stages=stages)
    assert kernel._interpreter.ir().count("local_store") == 3
    states, final = reference(k, v, w, g, h0, T, BT)
    np.testing.assert_allclose(h.astype(np.float64), states, rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(ht, final, rtol=2e-3, atol=2e-3)


def test_computed_b_buffer_of_a_dot_split_along_n(tmp_path):
    # A 64-row block on 8 warps runs wgmma with its warpgroups split along N ([4, 2]): B's buffer
    # stores each warpgroup's columns together as the dot reads them (GPTQ's quant_matmul_248 at
    # 64x128x32, 2 stages, 8 warps failed: "B's tile does not store each warpgroup's columns together").
    cx = {"BM": 64, "BN": 128, "BK": 32}
    args = ["--num-warps", "8", "--num-stages", "2"]
    ir = compile_kernel("gated_state_loop.py", "scaled_b_matmul", "*bf16:16,*bf16:16,*fp32:16,i32", cx,
                        emit="ir-opt", extra=args)
    assert "#mma<version=3, wpc=[4,2]>" in ir
    assert re.search(r"local_alloc : <1x32x128xbf16> #L\d+", ir) and "local_store" in "\n".join(first_loop(ir)[1])
    assert re.search(r"#shared<opIdx=1,[^>]*columnGroups=2>", ir)
    ptx = compile_and_assemble(tmp_path, "gated_state_loop.py", "scaled_b_matmul", "*bf16:16,*bf16:16,*fp32:16,i32",
                               cx, extra=args)
    assert ptx.count("wgmma.mma_async") == 2
