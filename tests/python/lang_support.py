"""Helpers of the test_lang_*.py tests: compile a kernel of tests/python/lang_kernels
with the CLI and assemble its PTX with ptxas for sm_80 and sm_90a."""
import subprocess

from conftest import PTXAS, run_cli

KERNELS = "tests/python/lang_kernels"
ARCHS = ["sm_80", "sm_90a"]


def compile_kernel(file, kernel, signature, constexprs=None, arch="sm_90a", emit="ptx", extra=(), env=None):
    """Returns the CLI's output (PTX by default); fails the test on a compile error."""
    args = ["compile", f"{KERNELS}/{file}", "--kernel", kernel, "--signature", signature,
            "--arch", arch, "--emit", emit]
    for k, v in (constexprs or {}).items():
        args += ["--constexpr", f"{k}={v}"]
    proc = run_cli(args + list(extra)) if env is None else run_env(args + list(extra), env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def compile_error(file, kernel, signature, constexprs=None, arch="sm_90a"):
    """The CLI's error message for a kernel that must not compile."""
    args = ["compile", f"{KERNELS}/{file}", "--kernel", kernel, "--signature", signature, "--arch", arch]
    for k, v in (constexprs or {}).items():
        args += ["--constexpr", f"{k}={v}"]
    proc = run_cli(args)
    assert proc.returncode != 0, "expected a compile error"
    return proc.stderr


def run_env(args, env):
    import os
    from conftest import CLI, ROOT
    return subprocess.run([str(CLI)] + args, cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env})


def assemble(ptx, arch, tmp_path):
    """ptxas must accept the PTX."""
    assert PTXAS.exists(), f"ptxas not found at {PTXAS}"
    src = tmp_path / f"k_{arch}.ptx"
    src.write_text(ptx)
    proc = subprocess.run([str(PTXAS), f"-arch={arch}", str(src), "-o", str(tmp_path / f"k_{arch}.cubin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def compile_and_assemble(tmp_path, file, kernel, signature, constexprs=None, arch="sm_90a", extra=()):
    ptx = compile_kernel(file, kernel, signature, constexprs, arch, extra=extra)
    assemble(ptx, arch, tmp_path)
    return ptx


def first_loop(ir):
    """(the lines before, the lines of) the first `for` of an --emit ir / ir-opt text, braces balanced."""
    lines = ir.splitlines()
    start = next(i for i, line in enumerate(lines) if " = for " in line)
    depth = 0
    for end, line in enumerate(lines[start:], start):
        depth += line.count("{") - line.count("}")
        if depth == 0:
            return lines[:start], lines[start:end + 1]
