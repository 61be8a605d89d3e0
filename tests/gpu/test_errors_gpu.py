"""The errors users meet with real torch tensors on a GPU machine."""
import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402
from gpu_helpers import poisoned  # noqa: E402
from kernels.copy2d import copy2d_kernel  # noqa: E402
from kernels.vector_add import add_kernel  # noqa: E402


def test_cpu_tensor():
    x = torch.randn(16)
    y = torch.randn(16, device="cuda")
    with pytest.raises(TypeError, match=r"add_kernel\(\): argument 'x_ptr' is a CPU tensor; tessera kernels need "
                                        r"CUDA tensors"):
        add_kernel[(1,)](x, y, y, 16, BLOCK_SIZE=16)


def test_unsupported_dtype():
    z = torch.zeros(16, device="cuda", dtype=torch.complex64)
    y = torch.zeros(16, device="cuda")
    with pytest.raises(TypeError, match=r"argument 'y_ptr' has dtype torch.complex64"):
        add_kernel[(1,)](y, z, y, 16, BLOCK_SIZE=16)


def test_wrong_argument_count_and_missing_constexpr():
    y = torch.zeros(16, device="cuda")
    with pytest.raises(TypeError, match=r"add_kernel\(\) takes 4 arguments \(x_ptr, y_ptr, out_ptr, n_elements\) "
                                        r"but 3 were given"):
        add_kernel[(1,)](y, y, y, BLOCK_SIZE=16)
    with pytest.raises(TypeError, match="missing a value for constexpr parameter 'BLOCK_SIZE'"):
        add_kernel[(1,)](y, y, y, 16)


def test_grid_over_the_limits():
    src = torch.zeros(4, 4, device="cuda")
    dst = poisoned((4, 4), torch.float32)
    with pytest.raises(tessera.LaunchError, match="exceeds the limits"):
        copy2d_kernel[(1, 70000)](src, dst, 4, 4, 4, 4, BLOCK_M=16, BLOCK_N=16)
    assert isinstance(tessera.LaunchError("x"), RuntimeError)


def test_compilation_error_at_launch():
    @tessera.jit
    def broken(x_ptr, BLOCK: tessera.language.constexpr):
        offs = tessera.language.arange(0, BLOCK)
        tessera.language.store(x_ptr + offs, undefined_thing)  # noqa: F821

    with pytest.raises(tessera.CompilationError, match=r"test_errors_gpu.py:\d+:\d+: error: name 'undefined_thing' "
                                                       r"is not defined"):
        broken[(1,)](torch.zeros(16, device="cuda"), BLOCK=16)
