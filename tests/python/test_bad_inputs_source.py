"""The bad-input catalogue, kernel files: what Python accepts the front-end
accepts (a byte-order mark, a sum of any number of terms), and what Python
refuses it refuses with a located error (bytes that are not UTF-8, even in a
comment: tests/errors/non_utf8_in_comment.py). docs/errors.md lists them."""
import numpy as np

import tessera
from tessera.jit import SourceKernel

from conftest import run_cli

BOM = "\ufeff"
KERNEL = """import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, {value})
"""
ARGS = ["--kernel", "k", "--signature", "*fp32,*fp32", "--constexpr", "BLOCK=16"]


def write(tmp_path, text, name="kernel.py"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_byte_order_mark_opens_a_file(tmp_path):
    path = write(tmp_path, BOM + KERNEL.format(value="x * 2"))
    proc = run_cli(["compile", str(path), *ARGS, "--emit", "ir"])
    assert proc.returncode == 0 and proc.stdout.strip(), proc.stderr
    compiled = tessera.compile(str(path), "*fp32,*fp32", {"BLOCK": 16}, kernel="k")
    assert ".entry k" in compiled.asm["ptx"]


def test_an_error_after_a_byte_order_mark_is_located_without_it(tmp_path):
    path = write(tmp_path, BOM + "x = 1 $\n" + KERNEL.format(value="x"))
    proc = run_cli(["compile", str(path), *ARGS])
    assert proc.returncode == 1
    assert proc.stderr == f"{path}:1:7: error: invalid character '$'\nx = 1 $\n      ^\n"


def interpret(value, x):
    text = KERNEL.format(value=value)
    kernel = SourceKernel(text, "k", "<long sums>", interpret=True)
    out = np.zeros_like(x)
    kernel[(1,)](x, out, BLOCK=x.size)
    return out


def test_a_flat_sum_of_a_thousand_terms():
    # Not nesting: Python accepts it (up to about 3000 terms), so does the front-end, at any length.
    x = np.arange(16, dtype=np.float32)
    np.testing.assert_array_equal(interpret(" + ".join(["x"] * 1000), x), x * 1000)


def test_a_long_chain_is_left_associative():
    # (((x * 1000) - x) - x) ... = x; grouped to the right it would be 0 or 2x.
    x = np.arange(16, dtype=np.float32)
    np.testing.assert_array_equal(interpret("x * 1000" + " - x" * 999, x), x)
    np.testing.assert_array_equal(interpret("x * 4096" + " / 2" * 12, x), x)


def test_a_flat_sum_compiles_to_ptx(tmp_path):
    path = write(tmp_path, KERNEL.format(value=" + ".join(["x"] * 1000)))
    compiled = tessera.compile(str(path), "*fp32,*fp32", {"BLOCK": 16}, kernel="k")
    assert compiled.asm["ptx"].count("add.f32") == 999  # in order: float addition is not reassociated
