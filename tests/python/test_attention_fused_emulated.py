"""attn_bwd_fused_kernel (kernels/attention.py) compiled for sm_80 and run by the PTX emulator
(tests/python/ptx_emulator.py: mma.sync, ldmatrix, cp.async, the dQ atomics in the dot's
#mma layout) against the float64 reference of test_attention_interpreter: ragged N (a
partial key block and query steps past N_Q), causal (diagonal and unmasked loops), GQA (two
query heads summed into one K/V head's dK/dV, each head's dQ from every key block). The CTAs
run one at a time (the emulator runs a launch's CTAs in lockstep, and causal CTAs loop
different numbers of times); their atomics add into the same dQ sums. Error: max |out - ref| /
max |ref| <= 1e-2 (observed < 1e-3)."""
import inspect

import numpy as np
import pytest

import tessera
from conftest import ROOT
from ptx_emulator import GlobalMemory, run_kernel
from test_attention_interpreter import reference

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")

KERNEL = "attn_bwd_fused_kernel"


def signature(dtype="fp16"):
    from tessera.kernels import _files
    out = []
    for name, p in inspect.signature(getattr(_files.load("attention"), KERNEL).fn).parameters.items():
        if "constexpr" in str(p.annotation):
            continue
        if name.startswith("stride_") or name in ("H", "H_KV", "N_Q", "N_KV"):
            out.append("i32")
        elif name == "sm_scale":
            out.append("fp32")
        else:
            out.append(("*fp32" if name in ("LSE", "DELTA", "DQ_ACC") else f"*{dtype}") + ":16")
    return ",".join(out)


@pytest.mark.parametrize("N, causal", [(40, False), (64, False), (40, True), (72, True), (17, True)])
def test_emulated_fused_backward_matches_numpy(N, causal):
    B, H, Hk, D, BM, BN, warps, scale = 1, 2, 1, 16, 16, 32, 4, 0.25
    rng = np.random.default_rng(N + causal)
    q, do = (rng.standard_normal((B, H, N, D)).astype(np.float16) for _ in range(2))
    k, v = (rng.standard_normal((B, Hk, N, D)).astype(np.float16) for _ in range(2))
    ro, rlse, rdq, rdk, rdv = reference(q, k, v, do, causal, scale)
    delta = (do.astype(np.float64) * ro).sum(-1).astype(np.float32)
    compiled = tessera.compile(str(ROOT / "kernels" / "attention.py"), kernel=KERNEL, signature=signature(),
                               constexprs=dict(HEAD_DIM=D, BLOCK_M=BM, BLOCK_N=BN, CAUSAL=causal,
                                               MASK_KEYS=N % BN != 0),
                               num_warps=warps, num_stages=2, target="sm_80")
    mem = GlobalMemory()
    strides = lambda x: [s // x.itemsize for s in x.strides]  # noqa: E731
    dk, dv = np.zeros_like(k), np.zeros_like(v)
    pointers = [mem.alloc(x) for x in (q, k, v, do, rlse.astype(np.float32), delta,
                                        np.zeros((B, H, N, D), np.float32), dk, dv)]
    args = pointers + [*strides(q), *strides(k), *strides(v), *strides(do), *strides(dk), *strides(dv),
                       H, Hk, N, N, scale]
    grid = (-(-N // BN), B * Hk)
    for cta in range(grid[0] * grid[1]):
        run_kernel(compiled.asm["ptx"], grid=grid, block=(32 * warps,), args=args, memory=mem,
                   shared_bytes=compiled.metadata.shared, ctas=[cta])
    got = {"dq": mem.read(pointers[6], np.float32, q.size).reshape(q.shape) * scale,
           "dk": mem.read(pointers[7], np.float16, k.size).reshape(k.shape),
           "dv": mem.read(pointers[8], np.float16, v.size).reshape(v.shape)}
    for name, ref in (("dq", rdq), ("dk", rdk), ("dv", rdv)):
        err = np.abs(got[name].astype(np.float64) - ref).max() / np.abs(ref).max()
        assert err <= 1e-2, f"{name}: relative error {err:.2e}"
