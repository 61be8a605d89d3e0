"""An int4 weight-only GEMM shaped as AWQ's (tests/python/lang_kernels/int4_gemm.py: 32 x 32 x 32
blocks on 4 warps, B unpacked from packed words by a triple tl.interleave, the dot accumulating in
fp16) compiles to what Triton makes of it:
  * the fp16-accumulating dot runs on mma.sync m16n8k16 .f16 (compiler/codegen/MmaDot.cpp), not
    the FMA lowering;
  * the [1, BN/8] zero row keeps its copies in registers through join / reshape
    (compiler/ir/ShapeOpLayouts.cpp), the loop-carried K offsets are carried once per layout their
    masks want (compiler/passes/RemoveLayoutConversions.cpp), the packed B words are read one
    iteration ahead (SoftwarePipelinePrefetch.cpp) and the unpacked B gets its own buffer
    (SoftwarePipelineOperandBuffers.cpp): two barriers an iteration, as Triton's loop has;
  * split-K partial sums go out as one 16-byte atomic add a thread (Coalesce.cpp, Atomics.cpp);
  * a GEMV shaped as gemlite's (a [BK, 1] activation column times the unpacked [BK, BN] weights,
    summed over K) keeps the weights' layout: the column is converted, not the block, and the sum
    stays in each thread's registers instead of 320 shuffles (LayoutAssignment.cpp);
  * a small-M GEMM shaped as GPTQ's (16 x 16 blocks on 4 warps, weights gathered through g_idx)
    runs on mma.sync (warps repeating tiles) and reads the next iteration's g_idx, weight words,
    zero words and scales while this one computes (SoftwarePipelinePrefetch.cpp: loads whose
    addresses read a prefetched load, a larger budget where the carried state is small);
and its PTX, run by tests/python/ptx_emulator.py, agrees with numpy."""
import re

import numpy as np
import pytest

from lang_support import assemble, compile_kernel
from ptx_emulator import GlobalMemory, run_kernel

SIG = "*fp16:16,*i32:16,*fp16:16,*i32:16,*fp16:16,i32:16,i32:16,i32:16,i32:16"
WARPS_STAGES = ["--num-warps", "4", "--num-stages", "3"]


def gemm_ptx(split_k=1, arch="sm_90a", block=32):
    cx = {"BM": block, "BN": block, "BK": block, "SPLIT_K": split_k}
    return compile_kernel("int4_gemm.py", "int4_gemm", SIG, cx, arch=arch, extra=WARPS_STAGES)


def main_loop(ptx):
    """The PTX from the label a backward branch jumps to, to that branch."""
    for m in re.finditer(r"^(\$L__BB\d+_\d+):", ptx, flags=re.M):
        back = re.search(r"bra(?:\.uni)?\s+" + re.escape(m.group(1)) + ";", ptx[m.end():])
        if back:
            return ptx[m.start():m.end() + back.end()]
    raise AssertionError("no loop in the PTX")


@pytest.mark.parametrize("split_k", [1, 8])
def test_fp16_accumulating_dot_on_tensor_cores(split_k, tmp_path):
    ptx = gemm_ptx(split_k)
    loop = main_loop(ptx)
    assert loop.count("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16") == 4
    assert "fma.rn.f32" not in loop and "cvt.f32.f16" not in loop
    for arch in ("sm_80", "sm_90a"):
        assemble(gemm_ptx(split_k, arch), arch, tmp_path)


def test_loop_has_two_barriers_and_no_layout_conversions():
    loop = main_loop(gemm_ptx())
    # the ring's head and the B buffer's: no conversions of the K masks, of the zero row's
    # interleaving, nor a barrier after the dot
    assert loop.count("bar.sync") == 2, loop.count("bar.sync")
    assert "ld.shared" not in loop  # shared memory is read by ldmatrix only
    assert loop.count("st.shared") == 1  # the unpacked B, once
    # the packed words, the zeros and the scales of the next iteration load after the dots
    last_mma = loop.rindex("mma.sync")
    assert loop.count("ld.global") == 3 and loop.index("ld.global") > last_mma


def to_int32(words):
    return np.where(words < 2**31, words, words - 2**32).astype(np.int32)


def test_split_k_partial_sums_add_a_vector_at_a_time():
    # the atomic takes the store's coalesced layout (8 consecutive halves a thread) and goes as one
    # 16-byte vector atomic on sm_90 (PTX 8.1), a pair at a time before
    ptx = gemm_ptx(8)
    assert re.search(r"atom\.acq_rel\.gpu\.global\.add\.noftz\.v8\.f16 ", ptx) and ".version 8.1" in ptx
    assert ptx.count("atom.") == 1
    ptx80 = gemm_ptx(8, arch="sm_80")
    assert ptx80.count("atom.acq_rel.gpu.global.add.noftz.f16x2 ") == 4 and ".version 8.0" in ptx80


@pytest.mark.parametrize("M, N, K, group, split_k, arch", [(40, 64, 256, 128, 1, "sm_90a"), (32, 32, 96, 32, 1, "sm_90a"),
                                                          (16, 64, 512, 128, 8, "sm_90a"), (16, 32, 512, 64, 4, "sm_80")])
def test_emulated_ptx_matches_numpy(M, N, K, group, split_k, arch):
    ptx = gemm_ptx(split_k, arch)
    order = [0, 4, 1, 5, 2, 6, 3, 7]
    rng = np.random.default_rng(M + K)
    q, z = rng.integers(0, 16, (K, N)), rng.integers(0, 16, (K // group, N))
    scales = (rng.random((K // group, N)) * 0.02 + 0.005).astype(np.float16)
    pack = lambda t: sum(t[:, j::8] << (4 * order[j]) for j in range(8))  # noqa: E731
    a = (rng.standard_normal((M, K)) * 0.5).astype(np.float16)
    mem = GlobalMemory()
    c = mem.alloc(np.full((M, N), np.nan if split_k == 1 else 0, np.float16))
    args = [mem.alloc(a), mem.alloc(to_int32(pack(q))), c, mem.alloc(to_int32(pack(z))), mem.alloc(scales),
            M, N, K, group]
    run_kernel(ptx, grid=(-(-M // 32) * (N // 32), split_k), block=(128,), args=args, memory=mem,
               shared_bytes=48 * 1024)
    got = mem.read(c, np.float16, M * N).reshape(M, N).astype(np.float64)
    w = ((q - np.repeat(z, group, 0)).astype(np.float16) * np.repeat(scales, group, 0)).astype(np.float16)
    want = a.astype(np.float64) @ w.astype(np.float64)
    # fp16 accumulation over K: a few units in the last place of the partial sums
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=2e-2)


GEMV_SIG = "*fp16:16,*i32:16,*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16"


def gemv_ptx(arch="sm_90a"):
    return compile_kernel("int4_gemm.py", "int4_gemv", GEMV_SIG, {"group_size": 128, "BN": 64, "BK": 32}, arch=arch,
                          extra=["--num-warps", "1", "--num-stages", "1"])


def test_gemv_sums_in_registers(tmp_path):
    ptx = gemv_ptx()
    assert ptx.count("shfl.sync") <= 8, ptx.count("shfl.sync")  # (the column's layout: 320 before)
    assert ptx.count("st.shared") <= 2  # at most the [1, BN] sum's conversion for the atomic
    for arch in ("sm_80", "sm_90a"):
        assemble(gemv_ptx(arch), arch, tmp_path)


@pytest.mark.parametrize("N, K", [(128, 256)])
def test_emulated_gemv_matches_numpy(N, K):
    group = 128
    rng = np.random.default_rng(N + K)
    q, z = rng.integers(0, 16, (K, N)), rng.integers(0, 16, (K // group, N)).astype(np.float16)
    scales = (rng.random((K // group, N)) * 0.02 + 0.005).astype(np.float16)
    packed = sum(q[i::8] << (4 * i) for i in range(8))
    a = (rng.standard_normal(K) * 0.5).astype(np.float16)
    mem = GlobalMemory()
    c = mem.alloc(np.zeros(N, np.float16))
    args = [mem.alloc(a), mem.alloc(to_int32(packed)), c, mem.alloc(scales), mem.alloc(z), N, K]
    run_kernel(gemv_ptx(), grid=(N // 64, K // 32), block=(32,), args=args, memory=mem, shared_bytes=48 * 1024)
    w = ((q.astype(np.float16) - np.repeat(z, group, 0)) * np.repeat(scales, group, 0)).astype(np.float16)
    want = a.astype(np.float64) @ w.astype(np.float64)
    np.testing.assert_allclose(mem.read(c, np.float16, N).astype(np.float64), want, rtol=1e-2, atol=2e-2)


SMALL_M_SIG = "*fp16:16,*i32:16,*fp16:16,*i32:16,*i32:16,*fp16:16,i32"


def small_m_ptx(K, N, arch="sm_90a"):
    cx = {"K": K, "N": N, "GROUPS": K // 128, "BM": 16, "BN": 16, "BK": 256}
    return compile_kernel("int4_gemm.py", "int4_gemm_small_m", SMALL_M_SIG, cx, arch=arch,
                          extra=["--num-warps", "4", "--num-stages", "2"])


def test_small_m_gemm_reads_ahead_on_tensor_cores(tmp_path):
    ptx = small_m_ptx(4096, 4096)
    loop = main_loop(ptx)
    assert loop.count("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") == 16
    # every global load of the loop (the next iteration's) comes after its last dot
    assert loop.index("ld.global") > loop.rindex("mma.sync")
    for arch in ("sm_80", "sm_90a"):
        assemble(small_m_ptx(4096, 4096, arch), arch, tmp_path)


@pytest.mark.parametrize("m", [3, 16])
def test_emulated_small_m_gemm_matches_numpy(m):
    K, N, group = 512, 32, 128
    ng = K // group
    rng = np.random.default_rng(m)
    q, z = rng.integers(0, 16, (K, N)), rng.integers(0, 16, (ng, N))
    scales = (rng.random((ng, N)) * 0.02 + 0.005).astype(np.float16)
    g_idx = (np.arange(K) // group).astype(np.int32)[rng.permutation(K)]
    qw = sum(q[i::8] << (4 * i) for i in range(8))
    qz = sum(z[:, i::8] << (4 * i) for i in range(8))
    x = (rng.standard_normal((m, K)) * 0.5).astype(np.float16)
    mem = GlobalMemory()
    out = mem.alloc(np.full((m, N), np.nan, np.float16))
    args = [mem.alloc(x), mem.alloc(to_int32(qw)), mem.alloc(scales), mem.alloc(to_int32(qz)), mem.alloc(g_idx), out, m]
    run_kernel(small_m_ptx(K, N), grid=(1, N // 16), block=(128,), args=args, memory=mem, shared_bytes=96 * 1024)
    w = ((q - z[g_idx]).astype(np.float32) * scales[g_idx].astype(np.float32)).astype(np.float16)
    want = x.astype(np.float64) @ w.astype(np.float64)
    np.testing.assert_allclose(mem.read(out, np.float16, m * N).reshape(m, N).astype(np.float64), want,
                               rtol=1e-2, atol=1e-2)
