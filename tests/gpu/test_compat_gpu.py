"""The Triton compatibility mode on the GPU (docs/compatibility.md): compat_program.py, written for
Triton, runs unchanged under TESSERA_AS_TRITON=1 (the wheel's .pth hook, through a site
directory); torch keeps what it had (an installed Triton, or none) and torch.compile still works."""
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch")

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = pathlib.Path(__file__).resolve().parent


def run(code_or_file, tmp_path, mode):
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "tessera_as_triton.pth").write_text((ROOT / "python" / "tessera_as_triton.pth").read_text())
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "python"), str(HERE)] +
                                        ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["TESSERA_AS_TRITON"] = "1" if mode else "0"
    env["TESSERA_CACHE_DIR"] = str(tmp_path / "cache")
    program = f"import site\nsite.addsitedir({str(site)!r})\n" + textwrap.dedent(code_or_file)
    proc = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=600,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return proc.stdout


def test_triton_program_runs_unchanged(tmp_path):
    out = run("import runpy\nrunpy.run_path(%r, run_name='__main__')\n" % str(HERE / "compat_program.py"),
              tmp_path, mode=True)
    lines = out.splitlines()
    assert "sms True target cuda" in lines
    assert "assert_close ok" in lines
    assert "do_bench ok True True" in lines
    assert "do_bench_cudagraph ok True" in lines
    i = lines.index("exp-add:")
    assert "Triton (GB/s)" in lines[i + 1] and "Torch (GB/s)" in lines[i + 1] and len(lines) >= i + 4


# What torch sees: whether it has a Triton, which one, and (with one) torch.compile on the GPU.
TORCH_VIEW = """
    import sys
    import torch
    from torch.utils._triton import has_triton_package
    if has_triton_package():
        f = torch.compile(lambda a: torch.sin(a) * 2 + 1)
        a = torch.randn(4096, device="cuda")
        torch.testing.assert_close(f(a), torch.sin(a) * 2 + 1)
    print("torch", has_triton_package(), getattr(sys.modules.get("triton"), "__file__", None))
"""


def test_torch_keeps_its_triton_and_torch_compile_works(tmp_path):
    without = run(TORCH_VIEW, tmp_path, mode=False).splitlines()[-1]
    with_mode = run(TORCH_VIEW + "    import triton\n    print(triton.__name__)\n", tmp_path, mode=True)
    assert with_mode.splitlines()[-2] == without
    assert with_mode.splitlines()[-1] == "tessera.compat.triton"
