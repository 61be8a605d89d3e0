"""A kernel's own file may hold host code beside its kernels: classes (a @dataclass, a decorated class,
a torch.autograd.Function, a class defined under a module-level `if` or `try`). The front-end skips them
(dsl/Parser.cpp, skipHostStatement), so `tessera compile FILE` compiles the file's kernels; a kernel
that names such a class gets one error at that name."""
from conftest import run_cli

SOURCE = '''import torch
from dataclasses import dataclass, field
import triton
import triton.language as tl


@dataclass(frozen=True)
class Config:
    block: int = 128
    names: list = field(default_factory=list)

    def total(self):
        return self.block * 2


class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = torch.empty_like(x)
        double[(1,)](y, BLOCK=128)
        return y


if torch.cuda.is_available():
    class Helper:
        value = 1
else:
    HELPER = 1

try:
    @some.decorator(1)
    class Wrapped: pass
except ImportError:
    Wrapped = None


@triton.jit
def double(x, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x + offs, tl.load(x + offs) * 2)


@triton.jit
def uses_the_dataclass(x, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x + offs, tl.load(x + offs) * Config.block)
'''


def test_the_cli_compiles_a_kernel_file_with_classes(tmp_path):
    src = tmp_path / "k.py"
    src.write_text(SOURCE)
    proc = run_cli(f"compile {src} --kernel double --signature '*fp32' --constexpr BLOCK=128 --arch sm_90a")
    assert proc.returncode == 0, proc.stderr
    assert "ld.global" in proc.stdout and "st.global" in proc.stdout


def test_a_kernel_using_a_class_is_one_located_error(tmp_path):
    src = tmp_path / "k.py"
    src.write_text(SOURCE)
    proc = run_cli(f"compile {src} --kernel uses_the_dataclass --signature '*fp32' --constexpr BLOCK=128")
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"{src}:46:44: error: 'Config' is the class defined on line 8, host code that a "
                                  "kernel cannot use"), proc.stderr
    assert "Config.block" in proc.stderr and proc.stderr.count("error:") == 1
