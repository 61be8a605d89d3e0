"""A loop value the body yields back unchanged (a name assigned only in a branch that a constexpr
`if` dropped: fla's chunk_gated_delta_rule_fwd_h) is its initial value: canonicalize drops the
iter arg, so the pipeliner sees loop-invariant addresses and stages the dot's loads with cp.async
(Pipeline: compiler/passes/Canonicalize.cpp)."""
import re

import numpy as np
import pytest

from lang_support import compile_and_assemble, compile_kernel

import tessera

SIG = "*bf16:16,*bf16:16,*fp32:16,*i32:16,i32"
CX = {"BM": 64, "BN": 64, "BK": 32}


def test_unchanged_iter_arg_is_dropped():
    ir = compile_kernel("passthrough_loop.py", "gated_matmul", SIG, {**CX, "USE_G": 0}, emit="ir-opt",
                        extra=["--stop-after", "canonicalize"])
    loop = next(line for line in ir.splitlines() if " = for " in line)
    assert "<32xi32>" not in loop, loop  # only the accumulator is carried
    taken = compile_kernel("passthrough_loop.py", "gated_matmul", SIG, {**CX, "USE_G": 1}, emit="ir-opt",
                           extra=["--stop-after", "canonicalize"])
    assert "<32xi32>" in next(line for line in taken.splitlines() if " = for " in line)


def test_loads_behind_an_unchanged_iter_arg_are_pipelined(tmp_path):
    ptx = compile_and_assemble(tmp_path, "passthrough_loop.py", "gated_matmul", SIG, {**CX, "USE_G": 0},
                               extra=["--num-warps", "4", "--num-stages", "3"])
    assert "cp.async" in ptx


@pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")
@pytest.mark.parametrize("use_g", [False, True])
@pytest.mark.parametrize("K", [0, 32, 96])
def test_interpreted_result(use_g, K):
    from conftest import ROOT
    import importlib.util
    spec = importlib.util.spec_from_file_location("passthrough_loop", ROOT / "tests/python/lang_kernels/passthrough_loop.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    kernel = tessera.jit(mod.gated_matmul.fn, interpret=True)
    rng = np.random.default_rng(K)
    a = rng.standard_normal((64, max(K, 1))).astype(np.float32)[:, :K].copy()
    b = rng.standard_normal((max(K, 1), 64)).astype(np.float32)[:K].copy()
    c = np.full((64, 64), np.nan, np.float32)
    out = np.full(32, -1, np.int32)
    kernel[(1,)](a, b, c, out, K, USE_G=use_g, BM=64, BN=64, BK=32)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4)
    assert (out == 2 * np.arange(32)).all()


def m_major_ptx(tmp_path, warps, bm=64, bn=64, bk=32):
    return compile_and_assemble(tmp_path, "passthrough_loop.py", "m_major_a_matmul", "*bf16:16,*bf16:16,*fp32:16,i32",
                                {"BM": bm, "BN": bn, "BK": bk}, extra=["--num-warps", str(warps), "--num-stages", "3"])


def test_m_major_a_stays_a_vector_load_for_mma_sync(tmp_path):
    # cp.async would copy an A read along its dim 0 element by element (mma.sync reads no
    # transposed A tile): it stays a 16-byte load; B is still pipelined.
    ptx = m_major_ptx(tmp_path, 2)
    assert "mma.sync" in ptx
    assert not re.search(r"ld\.global(\.\w+)*\.b16", ptx)
    assert "ld.global.v4" in ptx and "cp.async" in ptx


@pytest.mark.parametrize("bm, bn, bk, warps", [(64, 64, 32, 4), (128, 64, 64, 8), (128, 128, 32, 4)])
def test_m_major_a_is_pipelined_for_wgmma(tmp_path, bm, bn, bk, warps):
    # wgmma reads the transposed tile itself ("transpose A" = 1): A and B both arrive by cp.async
    # in 16-byte runs (fla's chunk_gated_delta_rule_fwd_h: k). Checked on the GPU by
    # tests/gpu/test_wgmma_m_major_a.py.
    ptx = m_major_ptx(tmp_path, warps, bm, bn, bk)
    wgmmas = re.findall(r"wgmma\.mma_async[^;]*;", ptx)
    assert wgmmas and all(w.endswith("p, 1, 1, 1, 1;") for w in wgmmas), wgmmas[:2]
    assert not re.search(r"ld\.global(\.\w+)*\.b16", ptx)
    assert ptx.count("cp.async.cg.shared.global") >= 4
