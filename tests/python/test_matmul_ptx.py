"""kernels/matmul.py compiles to tensor-core PTX (mma.sync m16n8k16 +
ldmatrix, or on sm_90a wgmma.mma_async) that ptxas accepts for sm_80 and
sm_90a, with no register spills; kernels the MMA path cannot take keep the
FMA lowering. Tensor cores are on by default (--no-tensor-cores /
TESSERA_MMA=0 turn them off); TESSERA_WGMMA=0 keeps sm_90a on mma.sync."""
import os
import subprocess

import pytest

from conftest import PTXAS, run_cli

SIG = "*{t}:16,*{t}:16,*{t}:16,i32,i32,i32:16,i32:16,i32:1,i32:16,i32:1,i32:16,i32:1"


MMA_SYNC = {"TESSERA_WGMMA": "0"}  # sm_90a on mma.sync, as sm_80


def tensor_core_ops(ptx_text):
    return ptx_text.count("mma.sync.aligned") + ptx_text.count("wgmma.mma_async")


def compile_matmul(tmp_path, dtype="fp16", arch="sm_90a", bm=128, bn=128, bk=32, warps=8, env=None,
                   flags=("--tensor-cores",)):
    ptx = tmp_path / f"mm_{dtype}_{arch}_{bm}_{bn}_{bk}_{warps}.ptx"
    args = ["compile", "kernels/matmul.py", "--kernel", "matmul_kernel", "--signature", SIG.format(t=dtype),
            "--constexpr", f"BLOCK_M={bm}", "--constexpr", f"BLOCK_N={bn}", "--constexpr", f"BLOCK_K={bk}",
            "--constexpr", "GROUP_M=8", "--num-warps", str(warps), "--arch", arch, "-o", str(ptx), *flags]
    old = dict(os.environ)
    try:
        if env:
            os.environ.update(env)
        run_cli(args, check=True)
    finally:
        os.environ.clear()
        os.environ.update(old)
    return ptx


def ptxas(ptx, arch, tmp_path):
    proc = subprocess.run([str(PTXAS), f"-arch={arch}", "-v", str(ptx), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stderr


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("warps", [4, 8])
def test_matmul_uses_tensor_cores(tmp_path, arch, dtype, warps):
    assert PTXAS.exists(), f"ptxas not found at {PTXAS}"
    text = compile_matmul(tmp_path, dtype, arch, warps=warps, env=MMA_SYNC).read_text()
    ty = "f16" if dtype == "fp16" else "bf16"
    assert f"mma.sync.aligned.m16n8k16.row.col.f32.{ty}.{ty}.f32" in text
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in text
    assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in text
    # 128x128x32: 128*128/(16*8) mma tiles x 2 k-steps, spread over the warps
    assert text.count("mma.sync.aligned.m16n8k16") == 128 * 128 // 128 * 2 // warps
    info = ptxas(tmp_path / f"mm_{dtype}_{arch}_128_128_32_{warps}.ptx", arch, tmp_path)
    if warps == 8:  # the manifest configuration (4 warps: ~255 registers, may spill a little)
        assert "0 bytes spill stores" in info, info


def test_small_blocks_use_tensor_cores(tmp_path):
    text = compile_matmul(tmp_path, bm=16, bn=16, bk=16, warps=1).read_text()
    assert "mma.sync.aligned.m16n8k16" in text
    ptxas(tmp_path / "mm_fp16_sm_90a_16_16_16_1.ptx", "sm_90a", tmp_path)


def test_tensor_cores_are_on_by_default_and_can_be_switched_off(tmp_path):
    off = compile_matmul(tmp_path, env={"TESSERA_MMA": "0"}, flags=()).read_text()
    assert tensor_core_ops(off) == 0 and "ldmatrix" not in off
    default = compile_matmul(tmp_path, env={}, flags=()).read_text()
    assert "wgmma.mma_async" in default  # sm_90a
    on = compile_matmul(tmp_path, env={"TESSERA_MMA": "1"}, flags=()).read_text()
    assert "wgmma.mma_async" in on
    sync = compile_matmul(tmp_path, env=MMA_SYNC, flags=()).read_text()
    assert "mma.sync" in sync and "wgmma" not in sync
    off = compile_matmul(tmp_path, env={"TESSERA_MMA": "1"}, flags=("--no-tensor-cores",)).read_text()
    assert tensor_core_ops(off) == 0


def test_fma_fallback_when_the_shape_does_not_fit(tmp_path):
    # BLOCK_K = 8 is not a multiple of mma's k = 16: FMA lowering
    text = compile_matmul(tmp_path, bm=32, bn=32, bk=8, warps=4).read_text()
    assert tensor_core_ops(text) == 0
    ptxas(tmp_path / "mm_fp16_sm_90a_32_32_8_4.ptx", "sm_90a", tmp_path)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("config", [(128, 128, 32, 4, 3), (128, 256, 64, 8, 3), (128, 128, 64, 4, 3)])
def test_pipelined_matmul_sass(tmp_path, arch, config):
    """The chosen configurations: tensor cores (HMMA), ldmatrix (LDSM) and
    cp.async (LDGSTS) in the SASS, the copies in flight num_stages - 2 deep,
    and no local-memory spills."""
    from test_vectorized_access import sass
    bm, bn, bk, warps, stages = config
    ptx = compile_matmul(tmp_path, "bf16", arch, bm=bm, bn=bn, bk=bk, warps=warps, flags=("--num-stages", str(stages)),
                         env=MMA_SYNC)
    text = ptx.read_text()
    assert "cp.async.cg.shared.global" in text and f"cp.async.wait_group {stages - 2};" in text
    info = ptxas(ptx, arch, tmp_path)
    if os.environ.get("TESSERA_BACKEND", "llvm") != "nvrtc":  # NVRTC's code needs more registers (docs/nvrtc.md)
        assert "0 bytes spill stores" in info and "0 bytes spill loads" in info, info
    code = sass(tmp_path, ptx, arch)
    for instruction in ("HMMA.16816.F32.BF16", "LDSM.16.M88.4", "LDSM.16.MT88.4", "LDGSTS.E.BYPASS.128", "LDGDEPBAR",
                        "DEPBAR"):
        assert instruction in code, f"{instruction} missing from the SASS"


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("config", [(128, 256, 64, 8, 4), (256, 128, 64, 8, 4), (128, 128, 64, 4, 3),
                                    (128, 128, 32, 4, 4), (64, 128, 64, 4, 4)])
def test_wgmma_matmul_sass(tmp_path, dtype, config):
    """sm_90a: wgmma (HGMMA in the SASS) reading the cp.async ring (LDGSTS)
    through descriptors, one wgmma group left running across iterations
    (wait_group 1), the copies issued after the wgmmas behind a second
    barrier and num_stages - 1 ahead, as Triton does, no spills."""
    from test_vectorized_access import sass
    bm, bn, bk, warps, stages = config
    ptx = compile_matmul(tmp_path, dtype, "sm_90a", bm=bm, bn=bn, bk=bk, warps=warps,
                         flags=("--num-stages", str(stages)))
    text = ptx.read_text()
    ty = "f16" if dtype == "fp16" else "bf16"
    assert f"wgmma.mma_async.sync.aligned.m64n{bn}k16.f32.{ty}.{ty}" in text
    assert "mma.sync" not in text and "ldmatrix" not in text
    # per iteration: (slabs of 64 rows per warpgroup) x (k-steps of 16)
    assert text.count("wgmma.mma_async") == bm // (16 * warps) * (bk // 16)
    assert "fence.proxy.async.shared::cta" in text and "wgmma.wait_group.sync.aligned 1;" in text
    assert f"cp.async.wait_group {stages - 2};" in text
    loop = text[text.index("wgmma.fence.sync.aligned"):]
    assert loop.index("bar.sync") < loop.index("cp.async.cg.shared.global"), "copies before the wgmmas"
    assert text.count("cp.async.commit_group") == stages, text  # stages - 1 in the prologue, 1 in the loop
    info = ptxas(ptx, "sm_90a", tmp_path)
    nvrtc = os.environ.get("TESSERA_BACKEND", "llvm") == "nvrtc"  # NVRTC's code needs more registers (docs/nvrtc.md)
    if not nvrtc:
        assert "0 bytes spill stores" in info and "0 bytes spill loads" in info, info
    if not nvrtc:
        assert "erializ" not in info, info  # ptxas says so when it has to serialise the wgmmas (C7514)
    code = sass(tmp_path, ptx, "sm_90a")
    assert f"HGMMA.64x{bn}x16.F32" in code, "HGMMA missing from the SASS"
    for instruction in ("LDGSTS.E.BYPASS.128", "WARPGROUP.ARRIVE"):
        assert instruction in code, f"{instruction} missing from the SASS"
