"""wgmma with warpgroups along N as well as M (#mma<version=3, wpc=[4, 2]>, compiler/ir/Layout.h),
as Triton's warpsPerTileV3 picks for a 64-row block on 8 warps (Unsloth's MoE grouped GEMM,
64 x 128 x 64, 8 warps: mma.sync m16n8k16 before). Each warpgroup issues m64n64k16 over the half of
B's tile that stores its columns together (columnGroups = 2): staged by cp.async (K-major B of
a @ w.T, N-major B of a @ b) or by the dot itself; a B the TMA unit writes keeps the old
choice. The numbers are checked against torch by tests/gpu/test_wgmma_split_n.py."""
import re
import subprocess

import pytest

from conftest import PTXAS
from lang_support import compile_and_assemble, compile_kernel

FILE = "split_n_wgmma.py"
SIG = "*bf16:16,*bf16:16,*fp32:16,i32,i32:16,i32:16"


def ptxas_report(tmp_path, ptx):
    src = tmp_path / "k.ptx"
    src.write_text(ptx)
    proc = subprocess.run([str(PTXAS), "-arch=sm_90a", "-v", str(src), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stderr


@pytest.mark.parametrize("rows_are_n", [1, 0])
def test_64_rows_on_8_warps_take_wgmma_split_over_n(tmp_path, rows_are_n):
    ptx = compile_and_assemble(tmp_path, FILE, "split_n_matmul", SIG,
                               {"B_ROWS_ARE_N": rows_are_n, "BM": 64, "BN": 128, "BK": 64},
                               extra=["--num-warps", "8", "--num-stages", "3"])
    wgmmas = re.findall(r"wgmma\.mma_async\.sync\.aligned\.(m64n\d+k16)[^;]*;", ptx)
    # per k-step of 64, each warpgroup: 4 x m64n64k16 over its 64 columns
    assert wgmmas == ["m64n64k16"] * 4, wgmmas
    assert "mma.sync" not in ptx
    # both tiles staged by cp.async in 16-byte runs (3 stages, 256 threads)
    assert len(re.findall(r"cp\.async\.cg\.shared\.global", ptx)) == 3 * (64 * 64 + 128 * 64) // (8 * 256)
    report = ptxas_report(tmp_path, ptx)
    assert " 0 bytes spill stores" in report, report
    assert "C7514" not in report and "C7519" not in report, report  # wgmmas not serialised


def test_the_layout_is_tritons_4_by_2():
    ir = compile_kernel(FILE, "split_n_matmul", SIG, {"B_ROWS_ARE_N": 1, "BM": 64, "BN": 128, "BK": 64},
                        emit="ir-opt", extra=["--num-warps", "8", "--num-stages", "3"])
    assert "#mma<version=3, wpc=[4,2]>" in ir
    assert re.search(r"#shared<opIdx=1, [^>]*columnGroups=2>", ir)
    # a 128-row block keeps all warps along M
    ir128 = compile_kernel(FILE, "split_n_matmul", SIG, {"B_ROWS_ARE_N": 1, "BM": 128, "BN": 128, "BK": 64},
                           emit="ir-opt", extra=["--num-warps", "8", "--num-stages", "3"])
    assert "#mma<version=3, wpc=[8,1]>" in ir128 and "columnGroups" not in ir128


def test_a_dot_that_stages_b_itself(tmp_path):
    ptx = compile_and_assemble(tmp_path, FILE, "split_n_matmul_unpipelined", "*bf16:16,*bf16:16,*fp32:16,i32,i32",
                               {"BM": 64, "BN": 128, "BK": 64}, extra=["--num-warps", "8"])
    assert re.findall(r"wgmma\.mma_async\.sync\.aligned\.(m64n\d+k16)", ptx) == ["m64n64k16"] * 4


def test_a_b_written_by_the_tma_unit_is_not_split(tmp_path):
    ir = compile_kernel(FILE, "split_n_descriptor_b", "*bf16:16,tensordesc<bf16[64,128]>,*fp32:16,i32,i32",
                        {"BM": 64, "BN": 128, "BK": 64}, emit="ir-opt", extra=["--num-warps", "8"])
    assert "#mma<version=3, wpc=[4,2]>" not in ir and "columnGroups" not in ir
