"""A @jit function whose body does not parse breaks only the kernels that reach it, as in Triton (which
compiles only the functions a kernel calls): the other kernels of its file compile and run. It used to
break every kernel of the file, since the front-end parses the whole file (Triton's test files define
dozens of kernels each). The error itself is unchanged where the function is compiled or called."""
import subprocess

import numpy as np
import pytest

from conftest import PTXAS, run_cli

import tessera

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")

from lang_kernels import broken_neighbour as kernels  # noqa: E402


def test_kernels_beside_a_broken_helper_run():
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(16, np.float32)
    k = kernels.good_kernel
    k.interpret = True
    try:
        k[(1,)](x, out, BLOCK=16)
    finally:
        k.interpret = False
    np.testing.assert_array_equal(out, 2 * x)


def test_kernels_beside_a_broken_helper_compile_for_the_gpu(tmp_path):
    c = tessera.compile(kernels.good_kernel, signature="*fp32,*fp32", constexprs={"BLOCK": 128}, target="sm_90a")
    (tmp_path / "k.ptx").write_text(c.asm["ptx"])
    subprocess.run([str(PTXAS), "-arch=sm_90a", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")], check=True)


@pytest.mark.parametrize("kernel, line, message", [
    ("uses_broken_kernel", 9, "unsupported construct: 'with'"),
    ("broken_kernel", 27, "unsupported construct: dict or set display"),
])
def test_the_broken_function_still_fails_where_it_is_used(kernel, line, message):
    with pytest.raises(tessera.CompilationError, match=message) as e:
        tessera.compile(getattr(kernels, kernel), signature="*fp32", constexprs={"BLOCK": 16} if "uses" in kernel else {},
                        target="sm_90a")
    assert e.value.line == line and e.value.path.endswith("broken_neighbour.py")


def test_the_cli_compiles_a_kernel_beside_a_broken_helper(tmp_path):
    file = "tests/python/lang_kernels/broken_neighbour.py"
    run_cli(f"compile {file} --kernel good_kernel --signature '*fp32,*fp32' --constexpr BLOCK=64 "
            f"-o {tmp_path / 'k.ptx'}", check=True)
    bad = run_cli(f"compile {file} --kernel uses_broken_kernel --signature '*fp32' --constexpr BLOCK=64 "
                  f"-o {tmp_path / 'b.ptx'}")
    assert bad.returncode != 0 and f"{file}:9:5: error: unsupported construct: 'with'" in bad.stderr


HOST_CODE = '''import triton
import triton.language as tl
import torch


class QuantLinear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x


with torch.no_grad():
    ZERO = 0


async def fetch():
    return 1


@triton.jit
def scale(x_ptr, out_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    tl.store(out_ptr + o, tl.load(x_ptr + o) * 2)


@triton.jit
def uses_the_class(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr, QuantLinear(1))


def launch(x, out):
    with torch.cuda.device(x.device):
        scale[(1,)](x, out, BLOCK=16)
'''


def test_the_cli_compiles_a_kernel_of_a_library_file_with_host_code(tmp_path):
    # Host code beside the kernels (a class, module-level `with`, `async def`; GPTQModel's dequant.py
    # defines its autograd Function there) is skipped; a kernel using the class gets an error where it does.
    src = tmp_path / "lib.py"
    src.write_text(HOST_CODE)
    run_cli(f"compile {src} --kernel scale --signature '*fp32,*fp32' --constexpr BLOCK=64 -o {tmp_path / 'k.ptx'}",
            check=True)
    bad = run_cli(f"compile {src} --kernel uses_the_class --signature '*fp32' --constexpr BLOCK=64 "
                  f"-o {tmp_path / 'b.ptx'}")
    assert bad.returncode != 0 and f"{src}:28:21: error: 'QuantLinear' is the class defined on line 6, host code " \
        "that a kernel cannot use" in bad.stderr, bad.stderr
    strict = run_cli(f"compile {src} --kernel scale --signature '*fp32,*fp32' --constexpr BLOCK=64 --emit ast")
    assert strict.returncode != 0 and "unsupported construct: 'class'" in strict.stderr
