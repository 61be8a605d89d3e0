"""The bad-input catalogue, runtime and Python side (the DSL side is
tests/errors/, checked by test_errors.py; the GPU side is
tests/gpu/test_bad_inputs_gpu.py; the table of all of them: docs/errors.md).
Each case asserts the exact message a user sees. All of these run without a
GPU: launches get as far as argument binding, and the launch-time errors come
from argument checks that run before the driver is needed.

Not covered: NVRTC missing — N/A, tessera has no NVRTC back-end (PTX comes
from LLVM's NVPTX back-end and is linked by the driver's JIT / ptxas)."""
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "gpu"))

import tessera  # noqa: E402
from kernels.vector_add import add_kernel  # noqa: E402

SIG = "*fp32:16,*fp32:16,*fp32:16,i32"
VA = str(ROOT / "kernels" / "vector_add.py")
SUPPORTED = "(supported: sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a)"
NO_DRIVER = ("no CUDA driver found: libcuda.so.1 could not be loaded (libcuda.so.1: cannot open shared object "
             "file: No such file or directory)")


class FakeCudaArray:
    """A device array as another library would hand it over (__cuda_array_interface__ v3)."""

    def __init__(self, ptr=0x10000, typestr="<f4", shape=(16,), strides=None):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (ptr, False), "version": 3,
                                         "strides": strides}


def raises_exactly(exc, message, fn):
    """fn() raises exc whose str() is exactly message."""
    with pytest.raises(exc) as info:
        fn()
    assert str(info.value) == message
    return info.value


D = FakeCudaArray()
X = np.zeros(16, np.float32)


def interpreted():
    return tessera.jit(add_kernel.fn, interpret=True)


# ------------------------------------------------------------------ arguments of a launch

def test_wrong_argument_count():
    raises_exactly(TypeError, "add_kernel() takes 4 arguments (x_ptr, y_ptr, out_ptr, n_elements) but 3 were given; "
                              "missing 'n_elements'", lambda: add_kernel[(1,)](D, D, 16, BLOCK_SIZE=16))


def test_wrong_argument_count_in_the_interpreter():
    raises_exactly(TypeError, "add_kernel() missing argument 'n_elements'",
                   lambda: interpreted()[(1,)](X, X, 16, BLOCK_SIZE=16))


def test_unexpected_keyword():
    raises_exactly(TypeError, "add_kernel() got an unexpected keyword argument 'foo' (its parameters: x_ptr, y_ptr, "
                              "out_ptr, n_elements, BLOCK_SIZE; launch options: num_warps, num_stages, maxnreg, stream, num_ctas, "
                              "launch_cooperative_grid, launch_pdl, enable_fp_fusion)",
                   lambda: add_kernel.specialization(D, D, D, 16, BLOCK_SIZE=16, foo=1))


def test_num_ctas_other_than_one():
    # Triton's words (test_core.py::test_num_ctas_pre_sm90 matches them): clusters need sm_90; there
    # num_ctas > 1 is accepted and the program runs in one CTA (docs/compatibility.md).
    raises_exactly(ValueError, "add_kernel(): num_ctas > 1 requires NVIDIA SM90+ (Hopper). Current target is sm_80. "
                               "Please set num_ctas=1 or target an SM90+ GPU.",
                   lambda: add_kernel.warmup(D, D, D, 16, BLOCK_SIZE=16, grid=(1,), num_ctas=2, arch="sm80"))
    raises_exactly(ValueError, "add_kernel(): num_ctas > 1 requires NVIDIA SM90+ (Hopper). Current target is sm_86. "
                               "Please set num_ctas=1 or target an SM90+ GPU.",
                   lambda: add_kernel.warmup(D, D, D, 16, BLOCK_SIZE=16, grid=(1,), num_ctas=4, target="sm_86"))
    one_cta = add_kernel.warmup(D, D, D, 16, BLOCK_SIZE=16, grid=(1,), num_ctas=1, target="sm_90a")
    assert add_kernel.warmup(D, D, D, 16, BLOCK_SIZE=16, grid=(1,), num_ctas=2, target="sm_90a").asm["ptx"] == \
        one_cta.asm["ptx"]


@pytest.mark.parametrize("value", [8, 256, 1000])
def test_maxnreg_out_of_range(value):
    raises_exactly(ValueError, f"add_kernel(): maxnreg must be between 16 and 255 registers a thread, got {value}",
                   lambda: add_kernel.specialization(D, D, D, 16, BLOCK_SIZE=16, maxnreg=value))


def test_argument_given_twice():
    raises_exactly(TypeError, "add_kernel() got multiple values for argument 'BLOCK_SIZE'",
                   lambda: add_kernel.specialization(D, D, D, 16, 17, BLOCK_SIZE=16))


def test_unsupported_dtype_of_a_device_array():
    raises_exactly(TypeError, "add_kernel(): argument 'x_ptr' has dtype '<c8' (__cuda_array_interface__ typestr), "
                              "which tessera kernels do not support (supported: float16, bfloat16, float32, float64, "
                              "float8_e4m3fn, float8_e5m2, int8, int16, int32, int64, uint8, uint16, uint32, uint64 "
                              "and bool)",
                   lambda: add_kernel.specialization(FakeCudaArray(typestr="<c8"), D, D, 16, BLOCK_SIZE=16))


def test_unsupported_dtype_in_the_interpreter():
    raises_exactly(TypeError, "add_kernel(): argument 'y_ptr' has dtype complex64, which tessera kernels do not "
                              "support (use float16, float32, float64, (u)int8-64, bool, or ml_dtypes' "
                              "bfloat16/float8 arrays)",
                   lambda: interpreted()[(1,)](X, np.zeros(16, np.complex64), X, 16, BLOCK_SIZE=16))


def test_host_array_for_a_gpu_launch():
    # A numpy array (no __cuda_array_interface__): host memory, refused before the driver is needed.
    raises_exactly(TypeError, "add_kernel(): argument 'x_ptr' is a CPU array (numpy.ndarray); tessera kernels need "
                              "CUDA memory", lambda: add_kernel[(1,)](X, D, D, 16, BLOCK_SIZE=16))


def test_unsupported_argument_type():
    raises_exactly(TypeError, "add_kernel(): argument 'y_ptr' has unsupported type 'list'; expected a CUDA tensor "
                              "(torch, or an object with __cuda_array_interface__ or __dlpack__), an int, a float "
                              "or a bool", lambda: add_kernel[(1,)](D, [1.0] * 16, D, 16, BLOCK_SIZE=16))


def test_null_pointer():
    # None is the null pointer users pass by mistake; an integer 0 is a valid (Triton-style) raw pointer.
    # As in Triton, a None argument is the constexpr None: the kernel's use of it is the error.
    error = raises_exactly(tessera.CompilationError,
                           f"{VA}:13:17: error: unsupported operand types for +: None and a block of type <16xi32>\n"
                           "    y = tl.load(y_ptr + offsets, mask=mask)\n"
                           "                ^",
                           lambda: add_kernel.warmup(D, None, D, 16, BLOCK_SIZE=16, grid=(1,)))
    assert error.line == 13


@pytest.mark.parametrize("value", [2 ** 70, 2 ** 64, -2 ** 63 - 1])
def test_integer_argument_too_large(value):
    # Also the OverflowError Triton raises (test_core.py::test_value_specialization_overflow).
    error = raises_exactly(OverflowError, f"add_kernel(): argument 'n_elements' = {value} does not fit in 64 bits",
                           lambda: add_kernel.specialization(D, D, D, value, BLOCK_SIZE=16))
    assert isinstance(error, ValueError)
    add_kernel.specialization(D, D, D, 2 ** 64 - 1, BLOCK_SIZE=16)  # u64
    add_kernel.specialization(D, D, D, -2 ** 63, BLOCK_SIZE=16)  # i64


def test_missing_constexpr():
    raises_exactly(TypeError, "add_kernel() missing a value for constexpr parameter 'BLOCK_SIZE' (pass BLOCK_SIZE=...)",
                   lambda: add_kernel[(1,)](D, D, D, 16))


def test_calling_a_kernel_directly():
    raises_exactly(RuntimeError, "add_kernel is a tessera kernel: launch it with add_kernel[grid](...), or call it "
                                 "from another @tessera.jit function", lambda: add_kernel(D, D, D, 16))


# ------------------------------------------------------------------ grid and launch options

def test_empty_grid_in_the_interpreter_runs_nothing():
    out = np.full(16, 7.0, np.float32)
    interpreted()[(0,)](X, X, out, 16, BLOCK_SIZE=16)  # as CUDA would if it allowed it: no program
    assert (out == 7.0).all()
    # The GPU launch refuses it: tests/gpu/test_bad_inputs_gpu.py::test_empty_grid


@pytest.mark.parametrize("grid, exc, message", [
    ((-1,), ValueError, "add_kernel[grid]: grid dimension 0 = -1 is out of range"),
    ((1, 2, 3, 4), ValueError, "add_kernel[grid]: the grid must have 1 to 3 dimensions, got 4"),
    ((), ValueError, "add_kernel[grid]: the grid must have 1 to 3 dimensions, got 0"),
    ((1.5,), TypeError, "add_kernel[grid]: grid dimension 0 must be an int, got float"),
    ("abc", TypeError, "add_kernel[grid]: the grid must be a tuple of 1 to 3 ints or a callable taking the "
                       "meta-parameters and returning one, got str"),
], ids=["negative", "four_dims", "no_dims", "float", "string"])
def test_bad_grid(grid, exc, message):
    raises_exactly(exc, message, lambda: add_kernel[grid](D, D, D, 16, BLOCK_SIZE=16))


@pytest.mark.parametrize("num_warps", [3, 64])
def test_num_warps_not_a_power_of_two(num_warps):
    message = f"num_warps must be a power of 2 between 1 and 32, got {num_warps}"
    raises_exactly(ValueError, message, lambda: tessera.compile(add_kernel, SIG, {"BLOCK_SIZE": 1024},
                                                                num_warps=num_warps))
    # At a launch or warmup it is also the AssertionError Triton raises (test_core.py::test_num_warps_pow2).
    error = raises_exactly(AssertionError, message, lambda: add_kernel.warmup(D, D, D, 16, BLOCK_SIZE=16,
                                                                              num_warps=num_warps, grid=(1,)))
    assert isinstance(error, ValueError) and type(error) is tessera.errors.NumWarpsError


@pytest.mark.parametrize("arch", ["sm_70", "sm_75", "sm_100", "gfx90a"])
def test_architecture_the_toolkit_cannot_target(arch):
    message = f"unsupported architecture '{arch}' {SUPPORTED}"
    raises_exactly(ValueError, message, lambda: tessera.compile(add_kernel, SIG, {"BLOCK_SIZE": 1024}, target=arch))
    raises_exactly(ValueError, message, lambda: add_kernel.warmup(D, D, D, 16, BLOCK_SIZE=16, grid=(1,), target=arch))


def test_too_much_shared_memory_is_refused_when_compiling():
    import lang_ops_kernels as k
    e = raises_exactly(tessera.OutOfResources, "codegen: kernel 'shape_kernel' needs 262144 bytes of shared memory, "
                                               "more than sm_90a allows (232448)",
                       lambda: tessera.compile(k.shape_kernel, "*fp32:16,*fp32:16", {"OP": "trans", "M": 256, "N": 256}))
    assert isinstance(e, RuntimeError) and (e.required, e.limit, e.name) == (262144, 232448, "shared memory")


# ------------------------------------------------------------------ compiling

def test_bad_signature_entry():
    raises_exactly(ValueError, "signature entry 1 ('*fp33:16'): unknown type; expected e.g. *fp32, *fp16, *bf16, i32, "
                               "i64, fp32, tensordesc<bf16[128,64]>",
                   lambda: tessera.compile(add_kernel, "*fp33:16,*fp32:16,*fp32:16,i32", {"BLOCK_SIZE": 1024}))


def test_signature_count():
    raises_exactly(tessera.CompilationError,
                   f"{VA}:7:1: error: kernel 'add_kernel' has 4 non-constexpr parameters but the signature gives 3 "
                   "types\ndef add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):\n^",
                   lambda: tessera.compile(add_kernel, "*fp32:16,*fp32:16,i32", {"BLOCK_SIZE": 1024}))


def test_kernel_name_not_in_the_file():
    raises_exactly(tessera.CompilationError, "kernels/vector_add.py: error: no @jit function named 'nope' in this "
                                             "file (it defines: add_kernel)",
                   lambda: tessera.compile("kernels/vector_add.py", SIG, {"BLOCK_SIZE": 1024}, kernel="nope"))


def test_compile_a_path_without_a_kernel_name():
    raises_exactly(TypeError, "tessera.compile(path, ...) needs kernel='name of the @jit function'",
                   lambda: tessera.compile("kernels/vector_add.py", SIG))


def test_compile_something_that_is_not_a_kernel():
    raises_exactly(TypeError, "tessera.compile() takes a @tessera.jit function or a file path, not 42",
                   lambda: tessera.compile(42, SIG))


# ------------------------------------------------------------------ the interpreter's checks

def test_out_of_bounds_load_in_the_interpreter():
    raises_exactly(tessera.InterpreterError,
                   f"{VA}:12:5: error: out-of-bounds load: element 0 of the block reads bytes [64, 68) of argument "
                   "'x_ptr', a float32 array of shape (16,) (64 bytes) (program (1, 0, 0); 16 of the block's 16 "
                   "elements are out of bounds)\n    x = tl.load(x_ptr + offsets, mask=mask)\n    ^",
                   lambda: interpreted()[(2,)](X, X, X.copy(), 32, BLOCK_SIZE=16))


def test_store_to_read_only_memory_in_the_interpreter():
    ro = np.frombuffer(bytes(64), np.float32)
    raises_exactly(tessera.InterpreterError,
                   f"{VA}:14:5: error: store to read-only memory: element 0 of the block writes bytes [0, 4) of "
                   "argument 'out_ptr', a float32 array of shape (16,) (64 bytes), which is not writable (program "
                   "(0, 0, 0); 16 of the block's 16 elements are stores to read-only memory)\n"
                   "    tl.store(out_ptr + offsets, x + y, mask=mask)\n    ^",
                   lambda: interpreted()[(1,)](X, X, ro, 16, BLOCK_SIZE=16))


# ------------------------------------------------------------------ the driver and the disk cache

@pytest.mark.skipif(tessera.driver_available(), reason="this machine has a CUDA driver")
def test_libcuda_missing():
    e = raises_exactly(tessera.DriverNotFoundError, NO_DRIVER, lambda: add_kernel[(1,)](D, D, D, 16, BLOCK_SIZE=16))
    assert isinstance(e, tessera.DriverError) and isinstance(e, RuntimeError)
    # An empty grid is only checked at launch, after the driver is found.
    raises_exactly(tessera.DriverNotFoundError, NO_DRIVER, lambda: add_kernel[(0,)](D, D, D, 16, BLOCK_SIZE=16))


COMPILE = f"""
import sys
sys.path[:0] = [{str(ROOT / 'python')!r}, {str(ROOT)!r}]
import tessera
from kernels.vector_add import add_kernel
k = tessera.compile(add_kernel, signature={SIG!r}, constexprs={{"BLOCK_SIZE": 1024}})
print(k._h.from_cache)
"""


def run_compile(cache_dir):
    env = {k: v for k, v in os.environ.items() if k not in ("TESSERA_CACHE", "XDG_CACHE_HOME")}
    env["TESSERA_CACHE_DIR"] = str(cache_dir)
    proc = subprocess.run([sys.executable, "-c", COMPILE], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_corrupt_cache_entry(tmp_path):
    run_compile(tmp_path / "c")
    (entry,) = (tmp_path / "c").rglob("*.tsc")
    entry.write_bytes(entry.read_bytes()[:20])
    proc = run_compile(tmp_path / "c")
    assert proc.stdout.split() == ["False"]
    assert proc.stderr == (f"tessera: warning: kernel cache entry {entry} is corrupt (truncated: 20 bytes, shorter "
                           "than the header); removing it and compiling the kernel again\n")


def test_cache_directory_that_cannot_be_created(tmp_path):
    (tmp_path / "file").write_text("x")
    proc = run_compile(tmp_path / "file" / "c")
    assert proc.stderr == (f"tessera: warning: cannot write to the kernel cache in {tmp_path / 'file' / 'c'} (Not a "
                           "directory); compiling without caching. Set TESSERA_CACHE_DIR to a writable directory, or "
                           "TESSERA_CACHE=off\n")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_read_only_cache_directory(tmp_path):
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o555)
    try:
        proc = run_compile(d)
    finally:
        d.chmod(0o755)
    assert proc.stderr.startswith(f"tessera: warning: cannot write to the kernel cache in {d} (Permission denied); "
                                  "compiling without caching."), proc.stderr


# ------------------------------------------------------------------ launching an ahead-of-time compiled kernel

def test_compiled_kernel_refuses_a_misaligned_pointer_it_assumed_aligned():
    k = tessera.compile(add_kernel, signature=SIG, constexprs={"BLOCK_SIZE": 16})
    misaligned = FakeCudaArray(ptr=0x10004)
    raises_exactly(ValueError, "add_kernel(): argument 'y_ptr' is not 16-byte aligned, but the kernel was compiled "
                               "assuming it is (':16' in its signature)",
                   lambda: k[(1,)](D, misaligned, D, 16))


def test_compiled_kernel_refuses_ints_that_break_its_hints():
    k = tessera.compile(add_kernel, signature="*fp32,*fp32,*fp32,i32:16", constexprs={"BLOCK_SIZE": 16})
    raises_exactly(ValueError, "add_kernel(): argument 'n_elements' is 17, not a multiple of 16, but the kernel was "
                               "compiled assuming it is (':16' in its signature)",
                   lambda: k[(1,)](D, D, D, 17))
    one = tessera.compile(add_kernel, signature="*fp32,*fp32,*fp32,i32:1", constexprs={"BLOCK_SIZE": 16})
    raises_exactly(ValueError, "add_kernel(): argument 'n_elements' is 2, but the kernel was compiled for the "
                               "value 1 (':1' in its signature)",
                   lambda: one[(1,)](D, D, D, 2))


def test_compiled_kernel_with_matching_hints_gets_to_the_driver():
    k = tessera.compile(add_kernel, signature=SIG, constexprs={"BLOCK_SIZE": 16})
    raises_exactly(tessera.DriverNotFoundError, NO_DRIVER, lambda: k[(1,)](D, D, D, 16))
