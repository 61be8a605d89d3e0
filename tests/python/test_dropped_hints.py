"""tl.multiple_of / max_contiguous / max_constancy whose result is dropped still hint the value, as in
Triton, where the hint is an attribute set on the value itself (semantic.multiple_of:
`x.handle.set_attr`): Triton's tutorial 08 grouped GEMM says `tl.multiple_of(a_ptrs, [16, 16])` as a
statement in its K loop, and its loads of fp16 tiles at runtime strides become 16-byte cp.async
copies. The variables that hold the value hold the hinted one from the call on
(dsl/Builtins.cpp); the pipeliner and the layout pass see loop-carried pointers through hints
(compiler/passes/SoftwarePipelineLoop.cpp, LayoutAssignment.cpp)."""
import re
import subprocess

import numpy as np
import pytest

from conftest import PTXAS
from lang_support import compile_and_assemble, compile_kernel

import tessera

MATMUL_SIG = "*fp16,*fp16,*fp16:16,i32,i32,i32"


def matmul_ptx(tmp_path, hint, bm=128, bn=128, bk=32):
    return compile_and_assemble(tmp_path, "dropped_hints.py", "hinted_matmul", MATMUL_SIG,
                                {"HINT": hint, "BM": bm, "BN": bn, "BK": bk},
                                extra=["--num-warps", "4", "--num-stages", "3"])


def spill_bytes(tmp_path, ptx):
    src = tmp_path / "k.ptx"
    src.write_text(ptx)
    proc = subprocess.run([str(PTXAS), "-arch=sm_90a", "-v", str(src), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return sum(int(n) for n in re.findall(r"(\d+) bytes spill stores", proc.stderr))


@pytest.mark.parametrize("bm, bn", [(128, 128), (64, 64)])
def test_a_dropped_hint_makes_the_k_loop_copies_16_bytes(tmp_path, bm, bn):
    ptx = matmul_ptx(tmp_path, 1, bm, bn)
    copies = re.findall(r"cp\.async\.cg\.shared\.global[^;]*;", ptx)
    # A (bm x 32) and B (32 x bn) fp16 tiles in 16-byte runs, 3 stages, 128 threads
    assert len(copies) == 3 * (bm * 32 + 32 * bn) // (8 * 128), len(copies)
    assert all(", 16" in c for c in copies), copies[:2]
    assert not re.search(r"ld\.global(\.\w+)*\.(b16|u16)", ptx)
    assert "wgmma.mma_async" in ptx
    assert spill_bytes(tmp_path, ptx) == 0


def test_without_the_hint_the_loads_stay_scalar(tmp_path):
    # the same kernel without the hints: nothing says the runtime strides keep 16-byte alignment
    ptx = matmul_ptx(tmp_path, 0)
    assert "cp.async.cg" not in ptx
    assert re.search(r"ld\.global(\.\w+)*\.(b16|u16)", ptx)


def test_the_hinted_pointers_are_carried_in_the_loads_layout():
    # no conversion of the 128 x 32 pointer block in the loop: it is carried in the load's layout
    ir = compile_kernel("dropped_hints.py", "hinted_matmul", MATMUL_SIG,
                        {"HINT": 1, "BM": 128, "BN": 128, "BK": 32}, emit="ir-opt",
                        extra=["--num-warps", "4"])
    loop = ir[ir.index(" = for "):]
    assert not re.search(r"convert_layout %\d+ : <\d+x\d+xptr", loop), loop


def test_a_dropped_hint_holds_for_every_name_of_the_value():
    # `start` is a runtime int (no :16): only the hint says the block starts on 8 elements
    hinted = compile_kernel("dropped_hints.py", "hinted_copy", "*fp32:16,*fp32:16,i32", {"HINT": 1, "BLOCK": 1024})
    assert re.search(r"ld\.global(\.nc)?\.v4", hinted)
    plain = compile_kernel("dropped_hints.py", "hinted_copy", "*fp32:16,*fp32:16,i32", {"HINT": 0, "BLOCK": 1024})
    assert not re.search(r"ld\.global(\.nc)?\.v", plain)


def test_a_carried_value_hinted_in_the_body_and_yielded_unchanged_is_dropped(tmp_path):
    # canonicalize's pass-through iter args look through the hint: only the accumulator is carried
    cx = {"MOVE": 0, "BM": 64, "BN": 64, "BK": 32}
    sig = "*fp16:16,*fp16:16,*fp16:16,i32:16"
    ir = compile_kernel("dropped_hints.py", "hinted_passthrough_matmul", sig, cx, emit="ir-opt",
                        extra=["--stop-after", "canonicalize"])
    loop = next(line for line in ir.splitlines() if " = for " in line)
    assert "<64xi32>" not in loop, loop
    ptx = compile_and_assemble(tmp_path, "dropped_hints.py", "hinted_passthrough_matmul", sig, cx,
                               extra=["--num-warps", "4", "--num-stages", "3"])
    assert "cp.async.cg.shared.global" in ptx


@pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")
@pytest.mark.parametrize("hint", [0, 1])
@pytest.mark.parametrize("K", [32, 96])
def test_interpreted_result(hint, K):
    from conftest import ROOT
    import importlib.util
    spec = importlib.util.spec_from_file_location("dropped_hints", ROOT / "tests/python/lang_kernels/dropped_hints.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    kernel = tessera.jit(mod.hinted_matmul.fn, interpret=True)
    rng = np.random.default_rng(K)
    lda, ldb = K + 16, 64 + 8
    a = rng.standard_normal((64, lda)).astype(np.float16)
    b = rng.standard_normal((K, ldb)).astype(np.float16)
    c = np.full((64, 64), np.nan, np.float16)
    kernel[(1,)](a, b, c, K, lda, ldb, HINT=hint, BM=64, BN=64, BK=32)
    want = a[:, :K].astype(np.float64) @ b[:, :64].astype(np.float64)
    np.testing.assert_allclose(c.astype(np.float64), want, rtol=2e-2, atol=2e-2)
    x = rng.standard_normal(2048).astype(np.float32)
    y = np.zeros(1024, np.float32)
    copy = tessera.jit(mod.hinted_copy.fn, interpret=True)
    copy[(1,)](x, y, 64, HINT=hint, BLOCK=1024)
    np.testing.assert_array_equal(y, x[64:1088])
