"""JITFunction._unsafe_update_src (Triton's spelling): the kernel becomes the patched text, which
still sees its module's imports and globals (Triton's own tests build kernels from a template so)."""
import importlib.util
import pathlib

import numpy as np
import pytest

import tessera
import tessera.language as tl

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")


def load_template():
    spec = importlib.util.spec_from_file_location(
        "patch_template", pathlib.Path(__file__).parent / "lang_kernels" / "patch_template.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.template_kernel


@pytest.mark.parametrize("expr, ref", [("x * SCALE", lambda x: x * 3), ("tl.abs(x) + 1", lambda x: np.abs(x) + 1)])
def test_patched_kernel_runs_the_new_text(expr, ref):
    kernel = load_template()
    kernel._unsafe_update_src(kernel.src.replace("GENERATE_TEST_HERE", expr))
    assert expr in kernel.src
    x = np.random.RandomState(0).randn(64).astype(np.float32)
    out = np.full_like(x, np.nan)
    kernel.interpret = True
    kernel[(1,)](x, out, N=64)
    np.testing.assert_allclose(out, ref(x), rtol=1e-6)


def test_patched_kernel_compiles_to_ptx():
    kernel = load_template()
    kernel._unsafe_update_src(kernel.src.replace("GENERATE_TEST_HERE", "x + 1.0"))
    k = tessera.compile(kernel, signature="*fp32:16,*fp32:16", constexprs={"N": 128}, target="sm_90a")
    assert "add.f32" in k.asm["ptx"] or "add.rn.f32" in k.asm["ptx"]


def test_unpatched_template_is_a_located_error():
    kernel = load_template()
    with pytest.raises(tessera.CompilationError, match=r"patch_template\.py:\d+:\d+: .*GENERATE_TEST_HERE"):
        tessera.compile(kernel, signature="*fp32:16,*fp32:16", constexprs={"N": 128}, target="sm_90a")


def test_patching_twice_and_tritons_src_spelling_work():
    kernel = load_template()
    template = kernel.src
    assert template.startswith("@tessera.jit\ndef template_kernel(")
    # Triton's JITFunction.src has no decorators; a text in that spelling is taken too.
    kernel._unsafe_update_src(template[template.index("def "):].replace("GENERATE_TEST_HERE", "x * 2.0"))
    kernel._unsafe_update_src(template.replace("GENERATE_TEST_HERE", "x * 2.0"))
    kernel._unsafe_update_src(template.replace("GENERATE_TEST_HERE", "x - 1.0"))
    x = np.arange(64, dtype=np.float32)
    out = np.full_like(x, np.nan)
    kernel.interpret = True
    kernel[(1,)](x, out, N=64)
    np.testing.assert_array_equal(out, x - 1.0)


def nested_template():
    @tessera.jit
    def kernel(x_ptr, out_ptr, FLAG: tl.constexpr):
        x = tl.load(x_ptr + tl.arange(0, 16))
        CHOOSE
        tl.store(out_ptr + tl.arange(0, 16), y)
    return kernel


def test_src_is_the_files_text_and_a_nested_template_patches():
    # The conformance harness's adapter looks src up among the file's lines (from co_firstlineno):
    # src is the text as written, indentation included (dedenting it broke every patched kernel there).
    import linecache
    kernel = nested_template()
    first = kernel.fn.__code__.co_firstlineno
    lines = linecache.getlines(kernel.fn.__code__.co_filename)
    src_lines = kernel.src.splitlines(True)
    assert "".join(lines[first - 1:first - 1 + len(src_lines)]) == kernel.src
    kernel._unsafe_update_src(kernel.src.replace("CHOOSE", "y = x + 1.0 if FLAG else x - 1.0"))
    x = np.arange(16, dtype=np.float32)
    for flag, want in ((True, x + 1), (False, x - 1)):
        out = np.full_like(x, np.nan)
        kernel.interpret = True
        kernel[(1,)](x, out, FLAG=flag)
        np.testing.assert_array_equal(out, want)


def test_compat_src_is_tritons_spelling_and_takes_a_multi_line_patch():
    # Triton's src is dedented from `def` on; Triton's test_const "if" mode substitutes a whole `if`
    # statement written at that indentation (4 spaces) into a kernel nested in a test function.
    import ast
    import tessera.compat
    kernel = nested_template()
    assert kernel.src.lstrip().startswith("@tessera.jit")  # tessera's own spelling: the file's text
    tessera.compat.install()
    try:
        src = kernel.src
        assert src.startswith("def kernel(") and "\n    x = tl.load" in src
        ast.parse(src)
        kernel._unsafe_update_src(src.replace("CHOOSE", "\n    if FLAG:\n        y = x + 1.0\n    else:\n        y = x - 1.0\n"))
    finally:
        tessera.compat.uninstall()
    x = np.arange(16, dtype=np.float32)
    for flag, want in ((True, x + 1), (False, x - 1)):
        out = np.full_like(x, np.nan)
        kernel.interpret = True
        kernel[(1,)](x, out, FLAG=flag)
        np.testing.assert_array_equal(out, want)
