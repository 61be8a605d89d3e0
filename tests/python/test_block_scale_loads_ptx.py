"""Scale vectors loaded in a K loop and broadcast into a wgmma accumulator (the block-scaled
fp8 GEMM that vLLM / SGLang / Unsloth write: `acc += tl.dot(a, b) * a_s[:, None] * b_s[None, :]`
with a_s, b_s loaded every K step from pointer vectors made before the loop).

propagate-mma-layout used to load such a vector again in the accumulator's column (or row)
slice, where every thread holds its own copy of each element: a 128-wide column scale of a
4-warp 128 x 128 wgmma tile is 32 loads a K step and 32 pointers a thread kept alive through
the loop (with the `offs_bn // group_n` division per element), beside 256 registers of
accumulator and partial product. In a loop a vector of more than 4 registers a thread in
that slice is now loaded in its own layout and converted through shared memory (Triton
does the same), so the K loop has one column-scale load a thread and no per-element division.
The interpreter tests of the kernel are in test_scaled_matmul.py (same arithmetic)."""
import re
import subprocess

import pytest

from conftest import PTXAS, run_cli

KERNEL = '''
import tessera
import tessera.language as tl


@tessera.jit
def block_scaled_gemm(A, B, C, As, Bs, M, N, K, group_n, group_k,
                      stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                      stride_as_m, stride_as_k, stride_bs_k, stride_bs_n,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = A + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = B + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn
    as_ptrs = As + offs_am * stride_as_m
    bs_ptrs = Bs + (offs_bn // group_n) * stride_bs_n
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        ks = (k * BLOCK_K) // group_k
        a_s = tl.load(as_ptrs + ks * stride_as_k)
        b_s = tl.load(bs_ptrs + ks * stride_bs_k)
        acc += tl.dot(a, b) * a_s[:, None] * b_s[None, :]
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = C + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, acc.to(C.dtype.element_ty), mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))
'''

# A (M x K) row-major, B read K-major (a row-major N x K weight: stride_bk = 1), scales
# (M, K/128) and (N/128, K/128) as the callers pass them; 16-divisible sizes, unit strides.
SIGNATURE = ("*fp8e4nv:16,*fp8e4nv:16,*bf16:16,*fp32:16,*fp32:16,i32:16,i32:16,i32:16,i32:16,i32:16,"
             "i32:16,i32:1,i32:1,i32:16,i32:16,i32:1,i32:16,i32:1,i32:1,i32:16")


def compile_ptx(tmp_path, warps, stages=3, block=(128, 128, 128)):
    src = tmp_path / "block_scaled_gemm.py"
    src.write_text(KERNEL)
    bm, bn, bk = block
    proc = run_cli(["compile", str(src), "--kernel", "block_scaled_gemm", "--signature", SIGNATURE, "--arch", "sm_90a",
                    "--num-warps", str(warps), "--num-stages", str(stages), "--constexpr", f"BLOCK_M={bm}",
                    "--constexpr", f"BLOCK_N={bn}", "--constexpr", f"BLOCK_K={bk}"])
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def loop_body(ptx):
    """The PTX of the K loop: from the label the wgmmas' loop branches back to, to that branch."""
    lines = ptx.splitlines()
    first = next(i for i, line in enumerate(lines) if "wgmma.mma_async" in line)
    for end in range(first, len(lines)):
        m = re.search(r"bra(?:\.uni)?\s+(\$L__BB\d+_\d+);", lines[end])
        if not m:
            continue
        start = next((i for i in range(end) if lines[i].startswith(m.group(1) + ":")), None)
        if start is not None and start < first:
            return "\n".join(lines[start:end + 1])
    raise AssertionError("no loop around the wgmmas")


@pytest.mark.parametrize("warps", [4, 8])
def test_scale_vectors_are_loaded_once_a_thread_in_the_k_loop(tmp_path, warps):
    ptx = compile_ptx(tmp_path, warps)
    assert "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3" in ptx
    body = loop_body(ptx)
    # The column scale: one load a thread (in its own layout, then through shared memory),
    # not one per column the thread holds (32). The row scale's 2 (8 warps) or 4 (4 warps)
    # rows a thread are loaded in the accumulator's slice as before. Before: 4 + 32 and 2 + 32.
    loads = len(re.findall(r"\bld\.global", body))
    assert loads == {4: 5, 8: 3}[warps], f"{loads} global loads in the K loop"
    # The scale step (k * BLOCK_K) // group_k and the row scale's (re-issued) row index; the
    # column scale's block indices (offs_bn // group_n) stay before the loop. Before: 4.
    divisions = len(re.findall(r"\b(?:div|rem)\.[su]32", body))
    assert divisions <= 2, f"{divisions} integer divisions in the K loop"


def test_no_more_spills_than_before(tmp_path):
    # 4 warps hold a 128 x 128 accumulator and a partial product of the same size: 256
    # registers a thread, so ptxas spills some (Triton 3.6: 296 bytes for this kernel). The
    # 32 pointers the column scale kept alive added to that: 684 bytes of spill loads
    # before, 600 now.
    ptx = compile_ptx(tmp_path, 4)
    src = tmp_path / "k.ptx"
    src.write_text(ptx)
    proc = subprocess.run([str(PTXAS), "-arch=sm_90a", "-v", str(src), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    loads = int(re.search(r"(\d+) bytes spill loads", proc.stderr).group(1))
    assert loads <= 620, proc.stderr


def test_interpreter_after_passes_matches_float64(tmp_path, monkeypatch):
    # The IR code generation sees (sm_90a: wgmma layouts, the cp.async ring, the column scale
    # loaded in its own layout and converted) against float64 of the dequantised inputs.
    ml_dtypes = pytest.importorskip("ml_dtypes")
    import importlib.util
    import numpy as np
    import tessera
    monkeypatch.setenv("TESSERA_INTERPRET_PASSES", "1")
    src = tmp_path / "block_scaled_gemm_mod.py"
    src.write_text(KERNEL)
    spec = importlib.util.spec_from_file_location("block_scaled_gemm_mod", src)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kernel = tessera.jit(module.block_scaled_gemm.fn, interpret=True)
    M, N, K, G = 100, 200, 384, 128
    rng = np.random.default_rng(4)
    a = (rng.standard_normal((M, K)) * 4).astype(ml_dtypes.float8_e4m3fn)
    w = (rng.standard_normal((N, K)) * 4).astype(ml_dtypes.float8_e4m3fn)
    sa = rng.uniform(0.1, 2, (M, K // G)).astype(np.float32)
    sw = rng.uniform(0.1, 2, (-(-N // G), K // G)).astype(np.float32)
    c = np.full((M, N), np.nan, np.float32)
    kernel[(1, 2)](a, w, c, sa, sw, M, N, K, G, G, K, 1, 1, K, N, 1, K // G, 1, 1, K // G,
                   BLOCK_M=128, BLOCK_N=128, BLOCK_K=128, num_warps=4, num_stages=3)
    A = a.astype(np.float64) * np.repeat(sa.astype(np.float64), G, axis=1)
    W = w.astype(np.float64) * np.repeat(np.repeat(sw.astype(np.float64), G, axis=0)[:N], G, axis=1)
    ref = A @ W.T
    magnitude = np.abs(A) @ np.abs(W).T
    assert (np.abs(c - ref) <= magnitude * (K * 2.0 ** -22) + 1e-6).all(), np.abs(c - ref).max()
    ir = kernel._interpreter.ir()
    loop = ir[ir.index("= for "):ir.index("yield")]
    # the column scale, loaded one element a thread, converted into the accumulator's slice
    assert "#mma<version=3" in ir and re.search(r"= convert_layout %\d+ : <128xf32>", loop), loop
