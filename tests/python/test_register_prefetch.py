"""Small loads in a pipelined loop that feed a dot through other work (fla's
chunk_gated_delta_rule_fwd_h: v in `v - w @ h`, the gates g and g_last) are read one iteration
ahead into registers (compiler/passes/SoftwarePipelinePrefetch.cpp): a load before the loop, the
next iteration's at the end of the body, carried by the loop. A load from a buffer the loop
writes stays where it is. Checked on the IR code generation sees, run by the interpreter
(TESSERA_INTERPRET_PASSES=1) against numpy in float64, and in PTX."""
import re
import sys

import numpy as np
import pytest

from conftest import ROOT
from lang_support import compile_and_assemble, compile_kernel, first_loop

import tessera

sys.path.insert(0, str(ROOT / "tests" / "python" / "lang_kernels"))
from gated_state_loop import gated_state  # noqa: E402

SIG = "*bf16:16,*bf16:16,*bf16:16,*fp32:16,*fp32:16,*bf16:16,*fp32:16,i32"


def carried_loads(ir):
    """Types of the loop's carried values that the body's last loads produce (prefetched)."""
    before, body = first_loop(ir)
    yielded = re.findall(r"%\d+", next(line for line in reversed(body) if "yield" in line))
    loads = {m.group(1): m.group(2) for line in body for m in [re.search(r"(%\d+) = load .*: (.*)$", line)] if m}
    return [loads[v] for v in yielded if v in loads]


@pytest.mark.parametrize("warps, stages", [(4, 2), (4, 3), (8, 2)])
def test_loads_feeding_dots_are_read_an_iteration_ahead(warps, stages):
    ir = compile_kernel("gated_state_loop.py", "gated_state", SIG, {"K": 128, "BV": 32, "BT": 64}, emit="ir-opt",
                        extra=["--num-warps", str(warps), "--num-stages", str(stages)])
    prefetched = carried_loads(ir)
    assert "<64x32xbf16> #L1" in " ".join(prefetched) and "f32" in prefetched and len(prefetched) == 3, prefetched


def test_gate_row_is_loaded_in_the_layout_it_is_used_in():
    # b_g scales the rows of v (b_g[:, None]): loaded in that slice layout (PropagateMmaLayout's
    # Narrower), not converted from the coalesced row layout through shared memory every iteration
    ir = compile_kernel("gated_state_loop.py", "gated_state", SIG, {"K": 128, "BV": 32, "BT": 64}, emit="ir-opt",
                        extra=["--num-warps", "4", "--num-stages", "2"])
    _, body = first_loop(ir)
    aliases = dict(re.findall(r"^(#L\d+) = (#\w+)", ir, re.M))
    assert not [line for line in body if "convert_layout" in line and "<64xf32>" in line], body
    rows = [t for t in carried_loads(ir) if t.startswith("<64xf32>")]
    assert rows and aliases[rows[0].split()[-1]] == "#slice", rows


def test_load_of_a_buffer_the_loop_writes_stays():
    ir = compile_kernel("gated_state_loop.py", "gated_state", SIG, {"K": 128, "BV": 32, "BT": 64, "IN_PLACE": True},
                        emit="ir-opt", extra=["--num-warps", "4", "--num-stages", "2"])
    prefetched = carried_loads(ir)
    assert len(prefetched) == 2 and not any("x32x" in t for t in prefetched), prefetched  # g and g_last only


def test_no_prefetch_beside_large_accumulators():
    # h [128, 64] f32 over 4 warps: 256 bytes a thread carried already (the attention backward's
    # dK/dV loop spilled with its rows carried too)
    ir = compile_kernel("gated_state_loop.py", "gated_state", SIG, {"K": 128, "BV": 64, "BT": 64}, emit="ir-opt",
                        extra=["--num-warps", "4", "--num-stages", "2"])
    assert carried_loads(ir) == []


def test_no_prefetch_without_pipelining():
    ir = compile_kernel("gated_state_loop.py", "gated_state", SIG, {"K": 128, "BV": 32, "BT": 64}, emit="ir-opt",
                        extra=["--num-warps", "4", "--num-stages", "1"])
    assert carried_loads(ir) == []


def test_prefetched_ptx_assembles(tmp_path):
    ptx = compile_and_assemble(tmp_path, "gated_state_loop.py", "gated_state", SIG, {"K": 128, "BV": 32, "BT": 64},
                               extra=["--num-warps", "4", "--num-stages", "3"])
    assert "wgmma.mma_async" in ptx and "cp.async" in ptx


def reference(k, v, w, g, h0, T, BT):
    f16 = lambda x: x.astype(np.float16).astype(np.float64)  # noqa: E731
    h = h0.astype(np.float64)
    states, vs = [], v.astype(np.float64).copy()
    for c in range(0, T, BT):
        sl = slice(c, min(T, c + BT))
        states.append(f16(h))
        vn = v[sl].astype(np.float64) - w[sl].astype(np.float64) @ f16(h)
        vs[sl] = vn
        last = np.float64(g[sl.stop - 1])
        vn = vn * np.exp2(last - g[sl].astype(np.float64))[:, None]
        h = h * np.exp2(last) + k[sl].astype(np.float64).T @ f16(vn)
    return np.stack(states), h, vs


@pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")
@pytest.mark.parametrize("in_place", [False, True])
@pytest.mark.parametrize("T, stages", [(256, 2), (200, 3), (40, 2)])
def test_interpreted_after_all_passes(monkeypatch, T, stages, in_place):
    monkeypatch.setenv("TESSERA_INTERPRET_PASSES", "1")
    kernel = tessera.jit(gated_state.fn, interpret=True)
    K, BV, BT = 128, 32, 64
    rng = np.random.default_rng(T + stages)
    k = (rng.standard_normal((T, K)) * 0.1).astype(np.float16)
    w = (rng.standard_normal((T, K)) * 0.05).astype(np.float16)
    v = (rng.standard_normal((T, BV)) * 0.5).astype(np.float16)
    g = np.cumsum(-rng.random(T) * 0.05).astype(np.float32)
    h0 = rng.standard_normal((K, BV)).astype(np.float32)
    NT = -(-T // BT)
    h = np.full((NT, K, BV), np.nan, np.float16)
    ht = np.full((K, BV), np.nan, np.float32)
    states, final, v_new = reference(k, v, w, g, h0, T, BT)
    kernel[(1,)](k, v, w, g, h0, h, ht, T, K=K, BV=BV, BT=BT, IN_PLACE=in_place, num_warps=4, num_stages=stages)
    assert len(carried_loads(kernel._interpreter.ir())) == (2 if in_place else 3)
    np.testing.assert_allclose(h.astype(np.float64), states, rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(ht, final, rtol=2e-3, atol=2e-3)
    if in_place:
        np.testing.assert_allclose(v.astype(np.float64), v_new, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("stages", [2, 3])
def test_prefetched_loads_do_not_anchor_the_dot_waits(stages):
    # defer-wgmma-waits anchors a wait on values computed before it (a shared load whose address
    # reads their registers): on a prefetched load that would make the thread wait for the next
    # iteration's data at this iteration's wait, and the prefetch would no longer cross the loop edge
    ir = compile_kernel("gated_state_loop.py", "gated_state", SIG, {"K": 128, "BV": 32, "BT": 64}, emit="ir-opt",
                        extra=["--num-warps", "4", "--num-stages", str(stages)])
    _, body = first_loop(ir)
    loads = {m.group(1) for line in body for m in [re.search(r"(%\d+) = load ", line)] if m}
    yielded = set(re.findall(r"%\d+", next(line for line in reversed(body) if "yield" in line)))
    prefetched = loads & yielded
    waits = [line for line in body if " = dot_wait " in line]
    assert len(prefetched) == 3 and waits, body
    for line in waits:
        anchors = re.findall(r"%\d+", line.split("dot_wait", 1)[1].split("{")[0])[1:]
        assert not prefetched & set(anchors), line


def test_prefetched_loads_do_not_order_the_wait_in_ptx(tmp_path):
    # The same in PTX: no wgmma.wait_group follows a shared load whose address mixes in a global load
    ptx = compile_and_assemble(tmp_path, "gated_state_loop.py", "gated_state", SIG, {"K": 128, "BV": 32, "BT": 64},
                               extra=["--num-warps", "4", "--num-stages", "3"])
    loaded = set(re.findall(r"ld\.global[\w.:]*\s+(%r\d+)", ptx))
    deps = {}  # register -> registers it is computed from (xor / and / or chains)
    for dst, srcs in re.findall(r"(?:xor|and|or)\.b32\s+(%r\d+),\s*([^;]+);", ptx):
        deps[dst] = re.findall(r"%r\d+", srcs)

    def reaches(reg, seen=()):
        if reg in loaded:
            return True
        return any(reaches(r, seen + (reg,)) for r in deps.get(reg, []) if r not in seen)

    anchors = re.findall(r"ld\.volatile\.shared\.b32 %r\d+, \[(%r\d+)\];", ptx)
    assert anchors
    assert not [a for a in anchors if reaches(a)]
