"""The attention kernels after the whole pass pipeline (TESSERA_INTERPRET_PASSES=1: tensor
cores, propagate-mma-layout, the cp.async pipeline), run by the host interpreter against
numpy: the IR code generation sees, with the GPU's block shapes and warps.

The forward's key loop must keep S, P, the row statistics and the accumulator in the
tensor-core layout: its only conversion is P's to the second dot's operand
(docs/attention.md, compiler/passes/PropagateMmaLayout.cpp)."""
import re

import numpy as np
import pytest

import tessera
import tessera.kernels as tk
from tessera.kernels import _files
from test_attention_interpreter import reference, rel

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")


@pytest.fixture
def kernels(monkeypatch):
    """Fresh interpreted kernels that run the pass pipeline first."""
    monkeypatch.setenv("TESSERA_INTERPRET_PASSES", "1")
    module = _files.load("attention")
    monkeypatch.setitem(module.__dict__, "_interpreted", {})
    return module.__dict__["_interpreted"]


def loop_bodies(ir):
    """The text of each innermost `for` body of the printed IR."""
    bodies, stack = [], []
    for line in ir.splitlines():
        if re.search(r"= for |^\s*for ", line):
            stack.append([])
            continue
        if stack:
            if line.strip() == "}":
                body = stack.pop()
                if not any("= for " in l for l in body):
                    bodies.append("\n".join(body))
                if stack:
                    stack[-1].extend(body)
                continue
            stack[-1].append(line)
    return bodies


def run_forward(N, Nk, D, causal, config, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((1, 2, N, D)).astype(np.float16)
    k = rng.standard_normal((1, 1, Nk, D)).astype(np.float16)
    v = rng.standard_normal((1, 1, Nk, D)).astype(np.float16)
    o, lse = tk.attention_forward(q, k, v, causal=causal, config=config)
    ro, rlse, *_ = reference(q, k, v, None, causal, 1 / np.sqrt(D))
    assert rel(o, ro) <= 1e-2
    assert np.abs(lse - rlse).max() <= 1e-3


CONFIGS = {64: dict(BLOCK_M=128, BLOCK_N=64, num_warps=8), 128: dict(BLOCK_M=64, BLOCK_N=32, num_warps=8)}


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("N, Nk", [(150, 150), (70, 200)])
@pytest.mark.parametrize("D", [64, 128])
def test_forward_after_all_passes(kernels, D, N, Nk, causal):
    run_forward(N, Nk, D, causal, CONFIGS[D])
    ir = kernels["attn_fwd_kernel"]._interpreter.ir()
    bodies = [b for b in loop_bodies(ir) if " dot " in b]
    assert len(bodies) == (2 if causal else 1), ir
    for body in bodies:
        assert body.count(" dot ") == 2
        assert "reduce" in body and "#mma" not in body  # layouts are printed as #Ln aliases
        converts = [l for l in body.splitlines() if "convert_layout" in l]
        assert len(converts) == 1, "\n".join(converts)  # P -> the second dot's operand A


def test_backward_after_all_passes(kernels):
    rng = np.random.default_rng(1)
    B, H, N, D = 1, 2, 90, 64
    q, k, v, do = (rng.standard_normal((B, H, N, D)).astype(np.float16) for _ in range(4))
    config = dict(BLOCK_M=64, BLOCK_N=32, num_warps=4, DKDV_BLOCK_M=32, DKDV_BLOCK_N=64, dkdv_num_warps=4,
                  DQ_BLOCK_M=64, DQ_BLOCK_N=32, dq_num_warps=4)
    for causal in (False, True):
        o, lse = tk.attention_forward(q, k, v, causal=causal, config=config)
        dq, dk, dv = tk.attention_backward(do, q, k, v, o, lse, causal=causal, config=config)
        _, _, rdq, rdk, rdv = reference(q, k, v, do, causal, 1 / np.sqrt(D))
        for name, out, ref in (("dq", dq, rdq), ("dk", dk, rdk), ("dv", dv, rdv)):
            assert rel(out, ref) <= 1e-2, name
