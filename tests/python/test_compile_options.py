"""Compile options that change the code but not the kernel: floating-point contraction
(fp_fusion, Triton's enable_fp_fusion; TESSERA_FP_FUSION, --no-fp-fusion) and the
register cap (maxnreg: PTX .maxnreg, CUDA C++ __maxnreg__), through both back-ends,
the CLI and the disk cache's key."""
import re
import subprocess
import sys

import pytest

from conftest import PTXAS, ROOT, run_cli

import tessera

sys.path.insert(0, str(ROOT / "tests" / "python"))
from lang_kernels.multiply_add import axpy_kernel  # noqa: E402

SIG = "*fp32:16,*fp32:16,*fp32:16,*fp32:16,i32"
FILE = "tests/python/lang_kernels/multiply_add.py"


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TESSERA_FP_FUSION", raising=False)


def ptx_of(backend="llvm", **options):
    return tessera.compile(axpy_kernel, signature=SIG, constexprs={"BLOCK": 256}, backend=backend,
                           **options).asm["ptx"]


@pytest.mark.parametrize("backend", ["llvm", "nvrtc"])
def test_multiply_add_is_contracted_by_default(backend):
    ptx = ptx_of(backend)
    assert re.search(r"\bfma\.rn\.f32\b", ptx), ptx
    assert not re.search(r"\bmul(\.rn)?\.f32\b", ptx)


@pytest.mark.parametrize("backend", ["llvm", "nvrtc"])
def test_fp_fusion_off_keeps_two_roundings(backend, monkeypatch):
    monkeypatch.setenv("TESSERA_FP_FUSION", "0")
    ptx = ptx_of(backend)
    assert not re.search(r"\bfma\.rn\.f32\b", ptx), ptx
    if backend == "llvm":  # .rn: ptxas may not contract them either
        assert "mul.rn.f32" in ptx and "add.rn.f32" in ptx


def test_fp_fusion_is_part_of_the_cache_key(monkeypatch):
    fused = tessera.compile(axpy_kernel, signature=SIG, constexprs={"BLOCK": 256})
    monkeypatch.setenv("TESSERA_FP_FUSION", "0")
    apart = tessera.compile(axpy_kernel, signature=SIG, constexprs={"BLOCK": 256})
    assert not apart._h.from_cache and apart.asm["ptx"] != fused.asm["ptx"]


def test_cli_no_fp_fusion():
    args = (f"compile {FILE} --kernel axpy_kernel --signature {SIG} "
            "--constexpr BLOCK=256")
    assert "fma.rn.f32" in run_cli(args, check=True).stdout
    assert "fma.rn.f32" not in run_cli(args + " --no-fp-fusion", check=True).stdout


@pytest.mark.parametrize("backend", ["llvm", "nvrtc"])
def test_maxnreg_caps_the_registers(backend, tmp_path):
    ptx = ptx_of(backend, maxnreg=40)
    assert re.search(r"^\s*\.maxnreg 40\s*$", ptx, re.M), ptx
    assert ".maxnreg" not in ptx_of(backend)
    if backend == "nvrtc":
        cuda = tessera.compile(axpy_kernel, signature=SIG, constexprs={"BLOCK": 256}, backend="nvrtc",
                               maxnreg=40).asm["cuda"]
        assert "__maxnreg__(40)" in cuda and "__launch_bounds__" not in cuda
    assert PTXAS.exists(), f"ptxas not found at {PTXAS}"
    (tmp_path / "k.ptx").write_text(ptx)
    proc = subprocess.run([str(PTXAS), "-arch=sm_90a", "-v", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert int(re.search(r"Used (\d+) registers", proc.stderr).group(1)) <= 40


def test_maxnreg_binds_a_large_kernel(tmp_path):
    """The attention forward at D = 64, 128 x 64 blocks on 8 warps: capped at 96 registers
    ptxas allocates at most 96 (what lets more CTAs share an SM)."""
    from test_attention_ptx import signature
    k = tessera.compile(str(ROOT / "kernels" / "attention.py"), kernel="attn_fwd_kernel",
                        signature=signature("attn_fwd_kernel", "bf16"),
                        constexprs={"HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64, "CAUSAL": False},
                        num_warps=8, num_stages=3, target="sm_90a", maxnreg=96)
    (tmp_path / "k.ptx").write_text(k.asm["ptx"])
    proc = subprocess.run([str(PTXAS), "-arch=sm_90a", "-v", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert int(re.search(r"Used (\d+) registers", proc.stderr).group(1)) <= 96


def test_maxnreg_is_part_of_the_cache_key():
    plain = tessera.compile(axpy_kernel, signature=SIG, constexprs={"BLOCK": 256})
    capped = tessera.compile(axpy_kernel, signature=SIG, constexprs={"BLOCK": 256}, maxnreg=40)
    assert not capped._h.from_cache and ".maxnreg 40" in capped.asm["ptx"] and ".maxnreg" not in plain.asm["ptx"]
    again = tessera.compile(axpy_kernel, signature=SIG, constexprs={"BLOCK": 256}, maxnreg=40)
    assert again._h.from_cache and ".maxnreg 40" in again.asm["ptx"]


@pytest.mark.parametrize("value", [8, 256])
def test_maxnreg_out_of_range_is_one_clear_error(value):
    with pytest.raises(ValueError, match=f"maxnreg must be between 16 and 255 registers a thread .*got {value}"):
        ptx_of(maxnreg=value)


def test_cli_maxnreg():
    out = run_cli(f"compile {FILE} --kernel axpy_kernel --signature {SIG} "
                  "--constexpr BLOCK=256 --maxnreg 64", check=True).stdout
    assert re.search(r"^\s*\.maxnreg 64\s*$", out, re.M)
