"""reshape / permute / split / join of register tensors pick registers where the layouts allow it
(compiler/ir/ShapeOpLayouts.h), as Triton's linear layouts do. Triton tutorial 09's subtiled epilogue,
split(permute(reshape(acc, (BM, 2, BN // 2)), (0, 2, 1))), went through three shared-memory round trips
of the whole 128x256 wgmma accumulator: ptxas spilled ~23-60 KB a thread and took minutes. Now each
thread's halves are register subsets (each a wgmma accumulator again): no spills, the same shared
traffic as storing the accumulator whole. The attention tutorial's rescale by halves (split, scale,
join, permute, reshape back) compiles to what `acc * alpha` does. The meaning is checked through the
interpreter against numpy; the register choice itself by tests/unit/ShapeOpLayoutsTest.cpp, element by
element; tests/gpu/test_realworld_perf_paths.py runs the kernels on the GPU."""
import re
import subprocess

import numpy as np
import pytest

from conftest import PTXAS, run_cli
from lang_support import compile_kernel

import tessera

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")

FILE = "subtiled_epilogue.py"
MM_SIG = "*fp16:16,*fp16:16,*fp16:16,i32:16"
RESCALE_SIG = "*fp16:16,*fp16:16,*fp16:16,*fp32:16,*fp32:16"


def ptxas_info(ptx, tmp_path, arch="sm_90a"):
    src = tmp_path / "k.ptx"
    src.write_text(ptx)
    proc = subprocess.run([str(PTXAS), f"-arch={arch}", "-v", str(src), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    spills = sum(int(n) for n in re.findall(r"(\d+) bytes spill stores", proc.stderr))
    regs = int(re.search(r"Used (\d+) registers", proc.stderr).group(1))
    return spills, regs


def shared_traffic(ptx):
    return ptx.count("st.shared"), ptx.count("ld.shared"), ptx.count("bar.sync")


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_subtiled_epilogue_takes_registers(tmp_path, arch):
    cx = {"BM": 128, "BN": 256, "BK": 64}
    whole = compile_kernel(FILE, "matmul_epilogue", MM_SIG, {**cx, "SUB": 0}, arch, extra=["--num-warps", "8"])
    halves = compile_kernel(FILE, "matmul_epilogue", MM_SIG, {**cx, "SUB": 1}, arch, extra=["--num-warps", "8"])
    assert ".local" not in halves
    spills, regs = ptxas_info(halves, tmp_path, arch)
    assert spills == 0
    assert regs <= ptxas_info(whole, tmp_path, arch)[1] + 8
    # the halves are stored as the whole is: one conversion each, no round trips for the shape ops
    st, ld, _ = shared_traffic(halves)
    assert (st, ld) == shared_traffic(whole)[:2]


def test_attention_rescale_by_halves_is_free(tmp_path):
    cx = {"BM": 128, "D": 128}
    plain = compile_kernel(FILE, "rescaled_halves", RESCALE_SIG, {**cx, "SPLIT": 0}, extra=["--num-warps", "8"])
    split = compile_kernel(FILE, "rescaled_halves", RESCALE_SIG, {**cx, "SPLIT": 1}, extra=["--num-warps", "8"])
    assert shared_traffic(split) == shared_traffic(plain)
    assert ptxas_info(split, tmp_path)[0] == 0


def test_the_constructs_mean_what_they_say():
    from conftest import ROOT
    import importlib.util
    spec = importlib.util.spec_from_file_location("subtiled_epilogue", ROOT / "tests/python/lang_kernels" / FILE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rng = np.random.default_rng(7)
    BM, BN, BK, K = 32, 64, 16, 32
    a = rng.standard_normal((BM, K)).astype(np.float16)
    b = rng.standard_normal((K, BN)).astype(np.float16)
    want = a.astype(np.float64) @ b.astype(np.float64)
    for sub in (0, 1):
        c = np.zeros((BM, BN), np.float16)
        tessera.jit(mod.matmul_epilogue.fn, interpret=True)[(1,)](a, b, c, K, SUB=sub, BM=BM, BN=BN, BK=BK)
        np.testing.assert_allclose(c.astype(np.float64), want, rtol=2e-2, atol=2e-2)
    D = 32
    q = rng.standard_normal((BM, D)).astype(np.float16)
    k = rng.standard_normal((D, D)).astype(np.float16)
    v = rng.standard_normal((D, D)).astype(np.float16)
    alpha = rng.standard_normal(BM).astype(np.float32)
    q64 = q.astype(np.float64)
    want = (q64 @ k.astype(np.float64)) * alpha[:, None] + q64 @ v.astype(np.float64)
    for split in (0, 1):
        o = np.zeros((BM, D), np.float32)
        tessera.jit(mod.rescaled_halves.fn, interpret=True)[(1,)](q, k, v, alpha, o, SPLIT=split, BM=BM, D=D)
        np.testing.assert_allclose(o, want, rtol=1e-3, atol=1e-3)


def load_kernels():
    from conftest import ROOT
    import importlib.util
    spec = importlib.util.spec_from_file_location("subtiled_epilogue", ROOT / "tests/python/lang_kernels" / FILE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


CHAIN_SHAPES = [(64, 64), (16, 128), (8, 16)]


def chain_reference(x, op):
    m, n = x.shape
    return {0: lambda: x[:, :n // 2] + 2 * x[:, n // 2:], 1: lambda: np.stack([x, 2 * x], -1).reshape(m, 2 * n),
            2: lambda: x.T, 3: lambda: x.reshape(-1) + 1}[op]()


@pytest.mark.parametrize("op", [0, 1, 2, 3])
@pytest.mark.parametrize("m,n", CHAIN_SHAPES)
def test_shape_chain_interpreted(op, m, n):
    mod = load_kernels()
    x = np.random.default_rng(op).standard_normal((m, n)).astype(np.float32)
    want = chain_reference(x, op)
    out = np.zeros(want.shape, np.float32)
    tessera.jit(mod.shape_chain.fn, interpret=True)[(1,)](x, out, OP=op, M=m, N=n)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("op", [0, 1, 2, 3])
@pytest.mark.parametrize("m,n", CHAIN_SHAPES)
@pytest.mark.parametrize("arch,warps", [("sm_90a", 4), ("sm_80", 1), ("sm_90a", 8)])
def test_shape_chain_compiles(tmp_path, op, m, n, arch, warps):
    ptx = compile_kernel(FILE, "shape_chain", "*fp32:16,*fp32:16", {"OP": op, "M": m, "N": n}, arch,
                         extra=["--num-warps", str(warps)])
    spills, _ = ptxas_info(ptx, tmp_path, arch)
    if warps > 1:  # one warp holds 256 elements a thread of the 64x64 join: it spilled before too
        assert spills == 0


RESHAPED_INDEX = {"D0": 4, "D1": 32, "D2": 32, "D3": 4, "D4": 2}


def test_reshaped_index_pointers_are_recomputed_not_converted():
    # The load wants another layout than the reshape of tl.arange gives: the index math is
    # recomputed there (arange in a layout the reshape only renumbers) instead of converting
    # 32768 pointers through 256 KB of shared memory, more than an SM has.
    ir = compile_kernel(FILE, "reshaped_index_sums", "*i32:16,*i32:16", RESHAPED_INDEX, emit="ir-opt")
    assert not re.search(r"convert_layout[^\n]*ptr<", ir), ir
    compile_kernel(FILE, "reshaped_index_sums", "*i32:16,*i32:16", RESHAPED_INDEX)


def test_reshaped_index_sums_interpreted():
    mod = load_kernels()
    shape = tuple(RESHAPED_INDEX.values())
    x = np.random.default_rng(5).integers(0, 1000, shape).astype(np.int32)
    out = np.zeros(shape[3:], np.int32)
    tessera.jit(mod.reshaped_index_sums.fn, interpret=True)[(1,)](x, out, **RESHAPED_INDEX)
    np.testing.assert_array_equal(out, x.sum(axis=(0, 1, 2)))


SPLIT_TO_SCALARS = '''import tessera
import tessera.language as tl

@tessera.jit
def k(X, Z):
    a, b = tl.split(tl.load(X + tl.arange(0, 2)))
    tl.store(Z, a + b)
'''


def test_split_of_a_pair_into_scalars_compiles(tmp_path):
    # The results of this split are scalars: no layout to choose (the layout pass once asked the
    # anchor of rank 0 for one and crashed).
    src = tmp_path / "k.py"
    src.write_text(SPLIT_TO_SCALARS)
    proc = run_cli(["compile", str(src), "--kernel", "k", "--signature", "*i32,*i32", "-o", str(tmp_path / "k.ptx")])
    assert proc.returncode == 0, proc.stderr
