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

from conftest import PTXAS
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
