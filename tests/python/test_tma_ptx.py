"""Tensor descriptors (desc.load through the TMA unit, docs/tma.md): what the
compiler makes of them for sm_90a, checked by ptxas, and the errors around them."""
import re
import subprocess

import pytest

from conftest import PTXAS, run_cli

KERNELS = "tests/python/lang_kernels/tensor_descriptors.py"
COPY = ["compile", KERNELS, "--kernel", "desc_copy", "--constexpr", "BLOCK_M=64", "--constexpr", "BLOCK_N=128"]


def compile_ptx(args, tmp_path, arch="sm_90a"):
    ptx = tmp_path / "k.ptx"
    run_cli(args + ["--arch", arch, "-o", str(ptx)], check=True)
    proc = subprocess.run([str(PTXAS), f"-arch={arch}", str(ptx), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return ptx.read_text()


@pytest.mark.parametrize("dtype,block,boxes", [("bf16", "64,128", 2), ("fp32", "32,32", 1), ("fp16", "128,64", 1),
                                               ("fp32", "16,128", 4)])
def test_desc_load_is_tma_boxes_of_at_most_128_bytes(dtype, block, boxes, tmp_path):
    m, n = block.split(",")
    args = ["compile", KERNELS, "--kernel", "desc_copy", "--constexpr", f"BLOCK_M={m}", "--constexpr", f"BLOCK_N={n}",
            "--signature", f"tensordesc<{dtype}[{block}]>,*{dtype}:16,i32:16"]
    text = compile_ptx(args, tmp_path, "sm_90a")
    # The descriptor stays a 128-byte, 64-aligned parameter, read in place (grid constant).
    assert re.search(r"\.param \.align 64 \.b8 desc_copy_param_0\[128\]", text)
    assert "cvta.param.u64" in text
    assert text.count("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes") == boxes
    assert "mbarrier.arrive.expect_tx.shared::cta.b64" in text
    assert "mbarrier.try_wait.parity.shared::cta.b64" in text
    assert "mbarrier.inval.shared::cta.b64" in text


def test_desc_load_in_a_loop_assembles(tmp_path):
    args = ["compile", KERNELS, "--kernel", "desc_scaled_sum", "--constexpr", "BLOCK_M=32", "--constexpr", "BLOCK_N=64",
            "--signature", "tensordesc<fp16[32,64]>,*fp32:16,i32"]
    text = compile_ptx(args, tmp_path, "sm_90")
    assert text.count("cp.async.bulk.tensor.2d") == 1


def test_signature_token_round_trips_into_the_ir():
    proc = run_cli(COPY + ["--signature", "tensordesc<bf16[64, 128]> , *bf16:16, i32:16", "--emit", "ir"], check=True)
    assert "%in_desc: tensordesc<64x128xbf16>" in proc.stdout
    assert "desc_load %in_desc" in proc.stdout


@pytest.mark.parametrize("token,why", [
    ("tensordesc<bf16[64,128]", "unterminated tensor descriptor"),
    ("tensordesc<bf16>", "no block shape"),
    ("tensordesc<bf17[64,128]>", "unknown element type"),
    ("tensordesc<bf16[64,x]>", "block dimension 'x' is not a positive integer"),
    ("tensordesc<bf16[0,128]>", "block dimension '0' is not a positive integer"),
])
def test_bad_descriptor_tokens_are_named(token, why):
    proc = run_cli(COPY + ["--signature", f"{token},*bf16:16,i32:16"])
    assert proc.returncode != 0
    assert f"signature entry 1 ('{token}" in proc.stderr and why in proc.stderr, proc.stderr


def test_descriptors_need_hopper_and_the_llvm_back_end():
    sig = ["--signature", "tensordesc<bf16[64,128]>,*bf16:16,i32:16"]
    proc = run_cli(COPY + sig + ["--arch", "sm_80"])
    assert proc.returncode == 1
    assert "tensor_descriptors.py:10:5: error: tensor descriptors (TMA) need sm_90 or newer, not sm_80" in proc.stderr
    proc = run_cli(COPY + sig + ["--backend", "nvrtc"])
    assert proc.returncode != 0
    assert "need the llvm back-end" in proc.stderr
