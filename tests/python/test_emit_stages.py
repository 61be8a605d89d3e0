"""`tessera compile --emit STAGE` stops at that stage and prints it."""
import os
import re
import subprocess

import pytest

from conftest import CLI, PTXAS, ROOT, run_cli

SOFTMAX = ["compile", "kernels/softmax.py", "--kernel", "softmax_kernel",
           "--signature", "*fp32,*fp32,i32,i32,i32,i32", "--constexpr", "BLOCK_SIZE=1024"]


def emit(stage, extra=()):
    return run_cli(SOFTMAX + ["--emit", stage] + list(extra), check=True).stdout


def test_ast_stage_is_the_parse_tree():
    out = emit("ast")
    assert out.startswith("(module")
    assert "softmax_kernel" in out
    assert "kernel @" not in out


def test_ir_stage_is_block_ir_without_layouts():
    out = emit("ir")
    assert "kernel @softmax_kernel(" in out
    assert "reduce" in out and "for" in out
    assert "#blocked" not in out


def test_ir_opt_stage_has_layouts():
    out = emit("ir-opt")
    assert "#blocked" in out
    assert "kernel @softmax_kernel(" in out


def test_stop_after_a_pass():
    out = emit("ir-opt", ["--stop-after", "canonicalize"])
    assert "#blocked" not in out
    bad = run_cli(SOFTMAX + ["--emit", "ir-opt", "--stop-after", "no-such-pass"])
    assert bad.returncode == 1
    assert "unknown pass 'no-such-pass'" in bad.stderr


# The pipeline's list (compiler/passes/Pipeline.cpp): one {"name", function, condition} per pass.
PASSES = re.findall(r'^\s*\{"([a-z-]+)", \[\]', (ROOT / "compiler" / "passes" / "Pipeline.cpp").read_text(), re.M)


def test_help_lists_every_pass():
    assert len(PASSES) >= 13, PASSES
    out = run_cli(["compile", "--help"], check=True).stdout
    for name in PASSES:
        assert re.search(rf"\s{re.escape(name)}\s", out), name


def test_unknown_pass_lists_the_passes():
    bad = run_cli(SOFTMAX + ["--emit", "ir-opt", "--stop-after", "no-such-pass"])
    assert bad.returncode == 1
    assert "the passes are " + ", ".join(PASSES) in bad.stderr


def test_stop_after_a_pass_that_did_not_run():
    # accelerate-dot runs only for a kernel with a dot: softmax has none.
    proc = run_cli(SOFTMAX + ["--emit", "ir-opt", "--stop-after", "accelerate-dot"])
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert ("pass 'accelerate-dot' did not run for this kernel: it runs only when tensor cores "
            "are on and the kernel has a dot") in proc.stderr


def test_golden_folders_are_named_after_passes():
    stages = {"ir", "cuda"}  # --emit stages, not passes
    for folder in (ROOT / "tests" / "golden").iterdir():
        if folder.is_dir():
            assert folder.name in PASSES or folder.name in stages, folder.name


def test_llvm_stage_is_an_nvptx_module():
    out = emit("llvm")
    assert 'target triple = "nvptx64-nvidia-cuda"' in out
    assert "softmax_kernel" in out


def test_ptx_stage_is_ptx():
    out = emit("ptx")
    assert ".entry softmax_kernel" in out
    assert ".target sm_90a" in out


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_cubin_stage_is_what_ptxas_makes_of_the_ptx(tmp_path, arch):
    """--emit cubin runs ptxas on the PTX stage, as the runtime does (runtime/Ptxas.cpp)."""
    cubin = tmp_path / "k.cubin"
    run_cli(SOFTMAX + ["--arch", arch, "--emit", "cubin", "-o", str(cubin)], check=True)
    data = cubin.read_bytes()
    assert data[:4] == b"\x7fELF"
    ptx = tmp_path / "k.ptx"
    ptx.write_text(emit("ptx", ["--arch", arch]))
    subprocess.run([str(PTXAS), f"-arch={arch}", str(ptx), "-o", str(tmp_path / "direct.cubin")], check=True)
    assert data == (tmp_path / "direct.cubin").read_bytes()


def test_cubin_stage_without_a_ptxas_is_one_clear_error(tmp_path):
    env = dict(os.environ, TESSERA_PTXAS=str(tmp_path / "no-ptxas"))
    proc = subprocess.run([str(CLI)] + SOFTMAX + ["--emit", "cubin", "-o", str(tmp_path / "k.cubin")], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr.strip() == (f"tessera: error: TESSERA_PTXAS='{tmp_path / 'no-ptxas'}' is not a ptxas that runs "
                                   f"(`{tmp_path / 'no-ptxas'} --version` failed or printed no version)")


@pytest.mark.parametrize("args,message", [
    (["--emit", "bogus"], "--emit must be one of ast, ir, ir-opt, llvm, cuda, ptx, cubin; got 'bogus'"),
    (["--arch", "sm_70"], "unsupported architecture 'sm_70'"),
    (["--num-warps", "3"], "--num-warps must be a power of 2 between 1 and 32, got 3"),
    (["--constexpr", "BLOCK_SIZE"], "--constexpr needs NAME=VALUE, got 'BLOCK_SIZE'"),
])
def test_bad_options_give_one_clear_error(args, message):
    proc = run_cli(SOFTMAX + args)
    assert proc.returncode == 1
    assert message in proc.stderr
    assert proc.stdout == ""


def test_bad_signature_names_the_entry():
    proc = run_cli(["compile", "kernels/vector_add.py", "--kernel", "add_kernel",
                    "--signature", "*fp32,*fp33,*fp32,i32", "--constexpr", "BLOCK_SIZE=64"])
    assert proc.returncode == 1
    assert "signature entry 2 ('*fp33'): unknown type" in proc.stderr


def test_help_lists_commands_and_options():
    assert "compile FILE" in run_cli(["--help"], check=True).stdout
    assert "--signature SIG" in run_cli(["compile", "--help"], check=True).stdout
    assert "tessera 0.1.0 (LLVM 19" in run_cli(["version"], check=True).stdout


def test_list_names_the_jit_functions():
    assert run_cli(["list", "kernels/vector_add.py"], check=True).stdout.split() == ["add_kernel"]


def test_dump_ir_prints_every_pass_in_order():
    import os
    import subprocess
    from conftest import CLI, ROOT
    env = dict(os.environ, TESSERA_DUMP_IR="1")
    proc = subprocess.run([str(CLI)] + SOFTMAX + ["--emit", "ir-opt"], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=True)
    headers = [line.split(" (")[0] for line in proc.stderr.splitlines() if line.startswith("// ----- IR after ")]
    passes = [h[len("// ----- IR after "):] for h in headers]
    assert passes == ["canonicalize", "common-subexpression-elimination", "dead-code-elimination",
                      "axis-analysis", "layout-assignment", "coalesce", "remove-layout-conversions",
                      "defer-lane-reductions", "fusion", "hoist-epilogue-loads", "defer-wgmma-waits"]
    assert "kernel @softmax_kernel(" in proc.stderr
