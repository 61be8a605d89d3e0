"""A small loaded vector needed in a second layout (fla's solve_tril_16x16: the row -A[i] both
scales the block as b_a[:, None] and is added to a sum over axis 0) is loaded again in that
layout instead of being converted through shared memory with two barriers an iteration
(compiler/passes/Fusion.cpp, reloadSmallConversion). IR and PTX checks, and the interpreter on
the IR after all passes against numpy."""
import numpy as np
import pytest

from lang_support import compile_and_assemble, compile_kernel, first_loop

import tessera

SIG = "*fp32:16,*fp32:16,i32"


@pytest.mark.parametrize("warps", [1, 2, 4])
def test_row_is_loaded_in_each_layout(warps):
    ir = compile_kernel("tril_rows.py", "tril_inverse_16", SIG, emit="ir-opt", extra=["--num-warps", str(warps)])
    body = "\n".join(first_loop(ir)[1])
    assert "convert_layout" not in body, body
    assert body.count(" = load ") == 2


@pytest.mark.parametrize("warps", [2, 4])
def test_both_row_loads_come_before_the_reduction(warps):
    # the reloaded row goes right after the first load, not after the cross-warp sum
    body = first_loop(compile_kernel("tril_rows.py", "tril_inverse_16", SIG, emit="ir-opt",
                                     extra=["--num-warps", str(warps)]))[1]
    loads = [i for i, line in enumerate(body) if " = load " in line]
    reduce = next(i for i, line in enumerate(body) if " = reduce " in line)
    assert len(loads) == 2 and max(loads) < reduce, body


def test_one_warp_loop_has_no_shared_memory(tmp_path):
    ptx = compile_and_assemble(tmp_path, "tril_rows.py", "tril_inverse_16", SIG, extra=["--num-warps", "1"])
    assert "bar.sync" not in ptx and "st.shared" not in ptx


@pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")
@pytest.mark.parametrize("warps", [1, 2, 4])
@pytest.mark.parametrize("T", [64, 40])
def test_interpreted_after_all_passes(monkeypatch, warps, T):
    monkeypatch.setenv("TESSERA_INTERPRET_PASSES", "1")
    from conftest import ROOT
    import importlib.util
    spec = importlib.util.spec_from_file_location("tril_rows", ROOT / "tests/python/lang_kernels/tril_rows.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    kernel = tessera.jit(mod.tril_inverse_16.fn, interpret=True)
    rng = np.random.default_rng(T + warps)
    A = np.tril(rng.standard_normal((T, 16)) * 0.3, -1).astype(np.float32)
    for c in range(0, T, 16):  # strictly lower triangular within each 16-row block
        A[c:c + 16] = np.tril(A[c:c + 16], -1)
    out = np.full((T, 16), np.nan, np.float32)
    kernel[(T // 16 + (T % 16 > 0),)](A, out, T, num_warps=warps)
    for c in range(0, T, 16):
        n = min(16, T - c)
        ref = np.linalg.inv(np.eye(n) + A[c:c + n, :n].astype(np.float64))
        np.testing.assert_allclose(out[c:c + n, :n], ref, rtol=1e-4, atol=1e-4)
