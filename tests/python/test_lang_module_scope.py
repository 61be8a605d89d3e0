"""Module-level names as Triton libraries write them (lang_kernels/module_scope.py):
imports chosen under `try` / `except ImportError` (how they pick their
libdevice), globals bound under `if` / `else` (a condition the front-end folds,
or one only Python can evaluate: tessera/_source.py writes the branch Python
took into the text), and aliases of language functions (`fast_tanh =
libdevice.tanh`, `my_cast = tl.cast`, `from ... import load as tload`)."""
import numpy as np
import pytest

import tessera
from conftest import ROOT, run_cli
from lang_support import assemble, compile_kernel

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")

from lang_kernels import module_scope  # noqa: E402

SOURCE = ROOT / "tests" / "python" / "lang_kernels" / "module_scope.py"


def line_of(text):
    return next(i for i, line in enumerate(SOURCE.read_text().splitlines(), 1) if text in line)


def test_module_level_if_and_try_in_the_interpreter():
    x = np.linspace(-2, 2, 16).astype(np.float32)
    out = np.zeros(16, np.float32)
    kernel = tessera.jit(module_scope.module_scope_kernel.fn, interpret=True)
    kernel[(1,)](x, out)
    np.testing.assert_allclose(out, np.tanh(x) * 3.0 + 10.0 + 2 + 7, rtol=1e-6)


def test_reduced_source_keeps_the_branch_python_took():
    lines = module_scope.module_scope_kernel._source()[0].splitlines()
    assert lines[line_of("math.cos(0.0)") - 1].startswith("if True:")
    assert lines[line_of("if PICKED == 2") - 1].startswith("if True:")
    assert lines[line_of("elif PICKED == 1") - 1].startswith("elif False:")
    assert lines[line_of("except ImportError:") - 1] == "except ImportError:"


def test_the_cli_folds_what_it_can(tmp_path):
    # The CLI reads the file as it is: the `try` and the `if` on PICKED fold; the kernel compiles.
    ptx = compile_kernel("module_scope.py", "folded_kernel", "*fp32:16,*fp32:16")
    assemble(ptx, "sm_90a", tmp_path)
    ir = compile_kernel("module_scope.py", "folded_kernel", "*fp32:16,*fp32:16", emit="ir")
    assert "3.0" in ir and "9" in ir  # SCALE, PICKED + FINALLY


def test_a_name_bound_under_an_unknown_branch_is_an_error_on_the_cli():
    # The `if` only Python can evaluate leaves OFFSET unknown to the CLI; using it names that `if`.
    with pytest.raises(tessera.CompilationError) as info:
        tessera.compile(str(SOURCE), kernel="module_scope_kernel", signature="*fp32:16,*fp32:16", target="sm_90a")
    use = line_of("* SCALE + OFFSET")
    col = SOURCE.read_text().splitlines()[use - 1].index("OFFSET") + 1
    assert (f"module_scope.py:{use}:{col}: error: name 'OFFSET' is bound under the module-level statement on "
            f"line {line_of('math.cos(0.0)')}, whose branch is not known at compile time") in str(info.value)


def test_an_unknown_import_outside_try_binds_nothing(tmp_path):
    path = tmp_path / "k.py"
    path.write_text("import tessera\nfrom tessera.language.extra.hip import libdevice\nimport tessera.language as tl\n"
                    "\n@tessera.jit\ndef k(x_ptr):\n    tl.store(x_ptr, 1.0)\n")
    tessera.compile(str(path), kernel="k", signature="*fp32", target="sm_90a")  # tl is still bound


def test_try_inside_a_kernel_is_an_error(tmp_path):
    path = tmp_path / "k.py"
    path.write_text("import tessera\n\n@tessera.jit\ndef k(x_ptr):\n    try:\n        pass\n"
                    "    except ImportError:\n        pass\n")
    with pytest.raises(tessera.CompilationError, match=r"k.py:5:5: error: unsupported construct: 'try'"):
        tessera.compile(str(path), kernel="k", signature="*fp32", target="sm_90a")


def test_triton_spelling_on_the_cli(tmp_path):
    # The front-end reads triton's module names as tessera's: the libdevice choice, aliases, tl.const.
    path = tmp_path / "k.py"
    path.write_text(
        "import triton\nimport triton.language as tl\n"
        "try:\n    from triton.language.extra.cuda import libdevice\n"
        "except ImportError:\n    from triton.language.math import libdevice\n"
        "fast_tanh = libdevice.tanh\nfrom triton.language import load as tload\n"
        "try:\n    from triton.language.libdevice import tanh as old_tanh\n"  # gone in Triton 3
        "except ImportError:\n    old_tanh = None\n"
        "try:\n    from triton.language.extra.hip import libdevice as hip\n"  # exists in Triton 3.6
        "    HIP = True\nexcept ImportError:\n    HIP = False\n"
        "F16_PTR = tl.pointer_type(tl.float16, const=True)\n"
        "\n@triton.jit\ndef k(x_ptr: tl.const, out_ptr, OUT: tl.constexpr):\n"
        "    offs = tl.arange(0, 16)\n"
        "    tl.static_assert(F16_PTR.element_ty == tl.float16)\n"
        "    tl.static_assert(old_tanh is None and HIP)\n"
        "    tl.store(out_ptr + offs, fast_tanh(tload(x_ptr + offs)).to(OUT))\n")
    proc = run_cli(["compile", str(path), "--kernel", "k", "--signature", "*fp32,*fp16", "--constexpr",
                    "OUT=triton.language.float16", "--arch", "sm_90a", "--emit", "ir"])
    assert proc.returncode == 0, proc.stderr
    assert "tanh" in proc.stdout and "f16" in proc.stdout
