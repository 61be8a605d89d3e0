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
import tessera.language as tl
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


# The GPU's forward tiles (attention_config), and D=128 with every warp on its own rows.
CONFIGS = [(64, 128, 64), (128, 64, 32), (128, 128, 32)]


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("N, Nk", [(150, 150), (70, 200)])
@pytest.mark.parametrize("D, BLOCK_M, BLOCK_N", CONFIGS, ids=[f"{d}-{m}x{n}" for d, m, n in CONFIGS])
def test_forward_after_all_passes(kernels, D, BLOCK_M, BLOCK_N, N, Nk, causal):
    run_forward(N, Nk, D, causal, dict(BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, num_warps=8))
    ir = kernels["attn_fwd_kernel"]._interpreter.ir()
    bodies = [b for b in loop_bodies(ir) if " dot " in b]
    assert len(bodies) == 2, ir  # the key blocks that need no mask, then the masked ones
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


@tessera.jit
def online_softmax_pv(Q, K, V, O, N, sm_scale, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                      FORM: tl.constexpr):
    """One head, contiguous [N, D]: the forward's key loop with the accumulator update
    written as one expression, in either order."""
    offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + offs_m[:, None] * D + offs_d[None, :], mask=offs_m[:, None] < N, other=0.0)
    m_i = tl.full([BM], -float("inf"), tl.float32)
    l_i = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, D], tl.float32)
    for start in range(0, N, BN):
        offs_n = start + tl.arange(0, BN)
        kt = tl.load(K + offs_n[None, :] * D + offs_d[:, None], mask=offs_n[None, :] < N, other=0.0)
        s = tl.where(offs_n[None, :] < N, tl.dot(q, kt) * sm_scale, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + offs_n[:, None] * D + offs_d[None, :], mask=offs_n[:, None] < N, other=0.0)
        if FORM == 0:
            acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        else:
            acc = tl.dot(p.to(v.dtype), v) + acc * alpha[:, None]
        m_i = m_new
    tl.store(O + offs_m[:, None] * D + offs_d[None, :], (acc / l_i[:, None]).to(O.dtype.element_ty),
             mask=offs_m[:, None] < N)


@pytest.mark.parametrize("form", [0, 1], ids=["acc_first", "dot_first"])
def test_rescaled_accumulator_folds_into_the_dot(monkeypatch, form):
    """`acc = acc * alpha + dot(p, v)` and `acc = dot(p, v) + acc * alpha` both become the dot's
    accumulator (accelerate-dot moves the rescale before the dot), so the loop carries acc in
    the mma layout and its body converts only P."""
    monkeypatch.setenv("TESSERA_INTERPRET_PASSES", "1")
    kernel = tessera.jit(online_softmax_pv.fn, interpret=True)
    rng = np.random.default_rng(form)
    N, D, BM, BN = 100, 32, 64, 32
    q, k, v = (rng.standard_normal((N, D)).astype(np.float16) for _ in range(3))
    o = np.full((N, D), np.nan, np.float16)
    kernel[(tessera.cdiv(N, BM),)](q, k, v, o, N, 0.2, D=D, BM=BM, BN=BN, FORM=form, num_warps=4, num_stages=2)
    ref, *_ = reference(q[None, None], k[None, None], v[None, None], None, False, 0.2)
    assert rel(o, ref[0, 0]) <= 1e-2
    ir = kernel._interpreter.ir()
    (body,) = [b for b in loop_bodies(ir) if " dot " in b]
    assert len([l for l in body.splitlines() if "convert_layout" in l]) == 1, body
    assert not re.search(r"= add %\d+, %\d+ : <64x32xf32>", body), body  # no separate accumulator add
