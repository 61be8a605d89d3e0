"""What a @jit function is compiled from (tessera/_source.py) and how errors
in it surface: tessera.CompilationError carrying the real file:line:col."""
import importlib.util
import inspect
import sys
import textwrap

import pytest

import tessera
import tessera.language as tl
from tessera import _compose

SCALE = tl.constexpr(3)
NOT_A_CONSTANT = {"a": 1}  # the front-end cannot parse dicts: blanked out


@pytest.fixture(scope="module", autouse=True)
def extension():
    if tessera._C is None:
        from tessera._loader import missing_message
        pytest.fail(missing_message(tessera._C_error))


class CudaArray:
    def __init__(self, ptr, typestr="<f4"):
        self.__cuda_array_interface__ = {"data": (ptr, False), "typestr": typestr, "shape": (4,), "version": 3}


@tessera.jit
def bad_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsetz, mask=offs < n)  # noqa: F821  (the error under test)
    tl.store(x_ptr + offs, x, mask=offs < n)


@tessera.jit
def times_scale(x):
    return x * SCALE


@tessera.jit
def uses_global_and_callee(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, times_scale(x), mask=offs < n)


def line_of(text, fn):
    lines, start = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if text in line:
            return start + i, line.index(text) + 1
    raise AssertionError(f"{text!r} not in {fn}")


def test_compilation_error_names_the_real_file_line_and_column():
    with pytest.raises(tessera.CompilationError) as info:
        tessera.compile(bad_kernel, signature="*fp32,i32", constexprs={"BLOCK": 64})
    e = info.value
    line, col = line_of("offsetz", bad_kernel.fn)
    assert (e.path, e.line, e.col) == (__file__, line, col)
    text = str(e)
    assert text.startswith(f"{__file__}:{line}:{col}: error: name 'offsetz' is not defined\n")
    assert "x = tl.load(x_ptr + offsetz, mask=offs < n)" in text
    assert text.splitlines()[2].strip() == "^"
    assert isinstance(e, tessera.TesseraError)


def test_compilation_error_from_warmup_and_launch_path():
    with pytest.raises(tessera.CompilationError, match="name 'offsetz' is not defined"):
        bad_kernel.warmup(CudaArray(1 << 20), 10, BLOCK=64)


def test_module_globals_and_callees_are_resolved_by_the_front_end():
    k = tessera.compile(uses_global_and_callee, signature="*fp32:16,i32", constexprs={"BLOCK": 128})
    assert ".visible .entry uses_global_and_callee(" in k.asm["ptx"]
    assert "constant {value = 3.0} : f32" in k.asm["ir"]  # SCALE, through the inlined callee


def test_reduced_source_keeps_every_line_in_place():
    text, path, first_line = _compose.kernel_source(uses_global_and_callee.fn)
    assert path == __file__ and first_line == 1
    original = open(__file__).read().splitlines()
    reduced = text.splitlines()
    assert len(reduced) == len(original)
    for i, (a, b) in enumerate(zip(original, reduced)):
        assert b == a or b == "", f"line {i + 1} changed: {b!r}"
    assert "SCALE = tl.constexpr(3)" in reduced
    assert not any("NOT_A_CONSTANT" in line for line in reduced)
    assert not any("def line_of" in line for line in reduced)  # plain Python functions are dropped
    assert "def times_scale(x):" in reduced


def test_nested_kernels_are_lifted_with_their_line_numbers():
    @tessera.jit
    def helper(x):
        return x + 1

    @tessera.jit
    def nested(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        y = helper(tl.load(x_ptr + offs, mask=offs < n))
        tl.store(x_ptr + offs, y + undefined_name, mask=offs < n)  # noqa: F821

    with pytest.raises(tessera.CompilationError) as info:
        tessera.compile(nested, signature="*fp32,i32", constexprs={"BLOCK": 32})
    line, col = line_of("undefined_name", nested.fn)
    assert info.value.line == line
    assert info.value.path == __file__
    indent = len(inspect.getsourcelines(nested.fn)[0][0]) - len(inspect.getsourcelines(nested.fn)[0][0].lstrip())
    assert info.value.col == col - indent  # lifted: columns shift by the indentation


def test_jit_applied_as_a_call():
    def plain(x_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 2.0)

    k = tessera.jit(plain)
    c = tessera.compile(k, signature="*fp32:16", constexprs={"BLOCK": 64})
    assert ".visible .entry plain(" in c.asm["ptx"]


TUTORIAL_STYLE = '''\
"""A file like Triton's tutorials: kernels next to host code the front-end cannot parse."""
import collections

import tessera as triton
import tessera.language as tl

CONFIGS = {"small": 128, "large": 1024}
SIZES = [2 ** i for i in range(4)]
LOG2E = tl.constexpr(1.4426950408889634)
ROWS = 4; NAMES = [f"row{i}" for i in range(ROWS)]; print(len(NAMES))  # a kept and two dropped statements


class Benchmark:
    def run(self, **kwargs):
        return {k: v for k, v in kwargs.items()}


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tl.arange(0, BLOCK_SIZE)
        mask = col_offsets < n_cols
        row = tl.load(row_start_ptr + col_offsets, mask=mask, other=-float('inf'))
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp2(row_minus_max * LOG2E)
        denominator = tl.sum(numerator, axis=0)
        tl.store(output_ptr + row_idx * output_row_stride + col_offsets, numerator / denominator, mask=mask)


def softmax(x):
    print(f"softmax of {x!r}")
    return lambda: x


if __name__ == "__main__":
    with open(__file__) as f:
        print(f.read())
'''


def test_tutorial_style_file(tmp_path):
    path = tmp_path / "tutorial_softmax.py"
    path.write_text(TUTORIAL_STYLE)
    spec = importlib.util.spec_from_file_location("tutorial_softmax", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    k = module.softmax_kernel.warmup(CudaArray(1 << 20), CudaArray(1 << 21), 781, 781, 100, 781,
                                     BLOCK_SIZE=1024, num_stages=4, num_warps=8, grid=(1,))
    assert k.signature == "*fp32:16,*fp32:16,i32,i32,i32,i32"
    assert k.metadata.constexprs == {"BLOCK_SIZE": 1024, "num_stages": 4}
    assert k.metadata.num_warps == 8 and k.metadata.num_stages == 4  # num_stages: a parameter and an option
    assert ".visible .entry softmax_kernel(" in k.asm["ptx"]


def test_kernels_without_a_file_use_their_own_source(tmp_path):
    code = textwrap.dedent('''\
        import tessera
        import tessera.language as tl
        BLOCK = 64

        @tessera.jit
        def from_exec(x_ptr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1.0)
        ''')
    namespace, unseen = {}, {}
    path = str(tmp_path / "generated.py")
    import linecache
    exec(compile(code, path, "exec"), namespace)  # no such file on disk...
    exec(compile(code, path, "exec"), unseen)
    linecache.cache[path] = (len(code), None, code.splitlines(True), path)  # ...but known to linecache
    try:
        k = tessera.compile(namespace["from_exec"], signature="*fp32:16")
        assert ".visible .entry from_exec(" in k.asm["ptx"]
    finally:
        del linecache.cache[path]
    # A JITFunction reduces its source once (jit.py): a copy whose source was never read fails.
    with pytest.raises(OSError, match="cannot find the source of kernel 'from_exec'"):
        tessera.compile(unseen["from_exec"], signature="*fp32:16")


def test_triton_spellings_exist():
    assert tessera.next_power_of_2(781) == 1024 and tessera.next_power_of_2(1024) == 1024
    assert tessera.next_power_of_2(1) == 1 and tessera.next_power_of_2(0) == 1
    assert tessera.cdiv(1000, 256) == 4
    from tessera.runtime import driver
    assert driver.active.backend == "cuda"
    assert callable(driver.active.get_active_torch_device)
    assert callable(driver.active.utils.get_device_properties)
    assert "tessera" in sys.modules


def test_a_copy_of_a_kernel_reads_its_source_again():
    """The reduced source a JITFunction keeps is not part of its state: a copy (copy.copy, or an
    unpickled one) reduces its own, and compiles."""
    import copy
    text = uses_global_and_callee._source()[0]
    twin = copy.copy(uses_global_and_callee)
    assert twin._reduced is None and twin._source()[0] == text
    assert ".visible .entry uses_global_and_callee(" in tessera.compile(
        twin, signature="*fp32:16,i32", constexprs={"BLOCK": 64}).asm["ptx"]
