"""Constructs found by driving Liger-Kernel, Unsloth, FlagGems and the Triton tutorials through the
compatibility mode (their kernels are not copied here: each test is a kernel written in the style of
the construct), interpreted against numpy and compiled to PTX."""
import numpy as np
import pytest

import tessera
import tessera.language as tl

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")


# ------------------------------------------------------------------ tessera.compile of a decorated kernel

def scale_rows(x_ptr, out_ptr, n, SCALE_IS_ONE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    if not SCALE_IS_ONE:
        x = x * 2.0
    tl.store(out_ptr + offs, x, mask=offs < n)


# Unsloth's form: jit first, then heuristics wrapping the JITFunction
scale_rows = tessera.heuristics({"SCALE_IS_ONE": lambda args: bool(args["SCALE_IS_ONE"])})(tessera.jit(scale_rows))


@tessera.autotune(configs=[tessera.Config({"BLOCK": 64}), tessera.Config({"BLOCK": 128})], key=["n"])
@tessera.jit
def tuned_copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def test_compile_takes_the_kernel_under_heuristics_and_autotune():
    k = tessera.compile(scale_rows, signature="*fp32,*fp32,i32", constexprs={"SCALE_IS_ONE": False, "BLOCK": 128},
                        target="sm_90a")
    assert ".visible .entry scale_rows" in k.asm["ptx"]
    k = tessera.compile(tuned_copy, signature="*fp16,*fp16,i32", constexprs={"BLOCK": 256}, target="sm_90a")
    assert ".visible .entry tuned_copy" in k.asm["ptx"]


def test_compile_still_refuses_what_is_no_kernel():
    with pytest.raises(TypeError, match="takes a @tessera.jit function"):
        tessera.compile(42, signature="i32", target="sm_90a")


# ------------------------------------------------------------------ .value of a constexpr parameter

@tessera.jit
def largest_of(dtype: tl.constexpr):
    d = dtype.value  # FlagGems' limits.get_dtype_max: the tl.dtype inside the constexpr
    if d.is_floating():
        big: tl.constexpr = float("inf")
        return big
    if d.is_int_signed():
        width: tl.constexpr = d.int_bitwidth
        big: tl.constexpr = 2 ** (width - 1) - 1
        return big


@tessera.jit(interpret=True)
def masked_min_kernel(x_ptr, out_ptr, n, FLAG: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    top = largest_of(x_ptr.type.element_ty)
    x = tl.load(x_ptr + offs, mask=offs < n, other=top)
    r = tl.min(x, axis=0)
    if FLAG.value:
        r = r + 1
    tl.store(out_ptr, r)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int16])
def test_value_of_a_dtype_constexpr_in_a_helper(dtype):
    x = np.array([7, 5, 9], dtype)
    out = np.zeros(1, dtype)
    masked_min_kernel[(1,)](x, out, 3, FLAG=False, BLOCK=8)
    assert out[0] == 5
    masked_min_kernel[(1,)](x, out, 3, FLAG=True, BLOCK=8)
    assert out[0] == 6


def test_value_of_a_dtype_constexpr_compiles_to_ptx():
    for sig in ("*bf16,*bf16,i32", "*i64,*i64,i32"):
        k = tessera.compile(masked_min_kernel, signature=sig, constexprs={"FLAG": True, "BLOCK": 256}, target="sm_90a")
        assert ".visible .entry masked_min_kernel" in k.asm["ptx"]


# ------------------------------------------------------------------ scalar pointers take scalars (Triton's semantic)

@tessera.jit
def store_block_through_scalar_pointer(sum_ptr, x_ptr, BLOCK: tl.constexpr):
    acc = tl.zeros((1,), dtype=tl.float32)  # a one-element block, as Liger's dyt backward keeps dalpha
    acc += tl.sum(tl.load(x_ptr + tl.arange(0, BLOCK)))
    tl.store(sum_ptr + tl.program_id(0), acc)


@tessera.jit
def load_scalar_pointer_with_block_mask(out_ptr, x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr, mask=offs < 3)
    tl.store(out_ptr + offs, v)


@tessera.jit
def store_scalar_pointer_with_block_mask(out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr, 1.0, mask=offs < 3)


@tessera.jit
def scalar_pointer_scalar_operands(out_ptr, x_ptr, n, BLOCK: tl.constexpr):
    s = tl.sum(tl.load(x_ptr + tl.arange(0, BLOCK)), axis=0)
    tl.store(out_ptr, s, mask=n > 0)
    tl.store(out_ptr + 1, tl.load(x_ptr, mask=n > 1, other=0.0))


@pytest.mark.parametrize("kernel, sig, message", [
    (store_block_through_scalar_pointer, "*fp32,*fp32", "Value argument cannot be block type if pointer argument is not a block"),
    (load_scalar_pointer_with_block_mask, "*fp32,*fp32", "Mask argument cannot be block type if pointer argument is not a block"),
    (store_scalar_pointer_with_block_mask, "*fp32", "Mask argument cannot be block type if pointer argument is not a block"),
])
def test_a_scalar_pointer_refuses_block_operands_as_triton_does(kernel, sig, message):
    with pytest.raises(tessera.CompilationError, match=message):
        tessera.compile(kernel, signature=sig, constexprs={"BLOCK": 16}, target="sm_90a")


def test_a_scalar_pointer_takes_scalar_operands():
    k = tessera.compile(scalar_pointer_scalar_operands, signature="*fp32,*fp32,i32", constexprs={"BLOCK": 16},
                        target="sm_90a")
    assert ".visible .entry scalar_pointer_scalar_operands" in k.asm["ptx"]


# ------------------------------------------------------------------ triton.tools.tensor_descriptor

class _FakeCudaTensor:
    """What a descriptor reads of a tensor when it is made (no launch here)."""
    dtype = "float16"
    shape = (64, 128)
    device = "cuda:0"

    def data_ptr(self):
        return 0x10000

    def stride(self):
        return (128, 1)


def test_triton_tools_tensor_descriptor_is_tesseras():
    import tessera.compat
    was_on = tessera.compat.installed()
    tessera.compat.install()
    try:
        from triton.tools.tensor_descriptor import TensorDescriptor  # the tutorials' (06, 08, 09) import
    finally:
        if not was_on:
            tessera.compat.uninstall()
    assert TensorDescriptor is tessera.TensorDescriptor
    d = TensorDescriptor(_FakeCudaTensor(), [64, 128], [128, 1], [32, 64], padding="zero")
    assert list(d.block_shape) == [32, 64]
    d = TensorDescriptor.from_tensor(_FakeCudaTensor(), [16, 32], padding="zero")
    assert list(d.shape) == [64, 128] and list(d.block_shape) == [16, 32]


def test_tensor_descriptor_padding_is_kept_or_refused():
    assert tessera.TensorDescriptor.from_tensor(_FakeCudaTensor(), [16, 32], padding="nan").padding == "nan"
    with pytest.raises(ValueError, match="Illegal value for padding"):
        tessera.TensorDescriptor(_FakeCudaTensor(), [64, 128], [128, 1], [16, 32], padding="inf")


# ------------------------------------------------------------------ triton.language.core / .standard, raise

SORTLIB = '''
import triton
import triton.language as tl
import triton.language.core as core
from triton.language.standard import _log2, zeros_like


@triton.jit
def _width_dtype(x):
    if core.constexpr(x.dtype.primitive_bitwidth) == 16:
        idtype = core.int16
    elif core.constexpr(x.dtype.primitive_bitwidth) == 32:
        idtype = core.int32
    else:
        raise ValueError("Unsupported dtype")
    return idtype


@triton.jit
def halves_kernel(x_ptr, out_ptr, bits_ptr, BLOCK: tl.constexpr):
    # a FlagGems-style bitonic helper: log2 of the block, reshape through core, zeros_like
    n_dims: core.constexpr = _log2(BLOCK)
    shape: core.constexpr = [2, 2 ** (n_dims - 1)]
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    y = core.reshape(x, shape)
    sel = core.arange(0, 2)[:, None]
    hi = tl.sum(y * sel, 0)
    lo = tl.sum(y * (1 - sel), 0)
    tl.store(out_ptr + tl.arange(0, BLOCK // 2), hi - lo + tl.sum(zeros_like(x), 0))
    tl.store(bits_ptr + tl.arange(0, BLOCK), x.to(_width_dtype(x), bitcast=True))


@triton.jit
def fp64_bits_kernel(x_ptr, bits_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(bits_ptr + tl.arange(0, BLOCK), x.to(_width_dtype(x), bitcast=True))
'''


@pytest.fixture
def sortlib(tmp_path, monkeypatch):
    (tmp_path / "rwsort.py").write_text(SORTLIB)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("TESSERA_INTERPRET", "1")
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path / "cache"))
    import importlib
    import sys
    import tessera.compat
    tessera.compat.install()
    try:
        yield importlib.import_module("rwsort")
    finally:
        tessera.compat.uninstall()
        sys.modules.pop("rwsort", None)


def test_language_core_and_standard_modules(sortlib):
    from tessera.language import _is_power_of_two, _log2
    assert (_log2(1024), _log2(1), _is_power_of_two(64), _is_power_of_two(48)) == (10, 0, True, False)
    x = np.arange(16, dtype=np.float32) * 1.5
    out = np.zeros(8, np.float32)
    bits = np.zeros(16, np.int32)
    sortlib.halves_kernel[(1,)](x, out, bits, BLOCK=16)
    np.testing.assert_array_equal(out, x[8:] - x[:8])
    np.testing.assert_array_equal(bits, x.view(np.int32))
    k = tessera.compile(sortlib.halves_kernel, signature="*fp16,*fp16,*i16", constexprs={"BLOCK": 256},
                        target="sm_90a")
    assert ".visible .entry halves_kernel" in k.asm["ptx"]


def test_raise_in_a_branch_the_specialisation_takes_is_a_located_error(sortlib):
    with pytest.raises(tessera.CompilationError, match=r"rwsort.py:\d+:\d+: .*'raise'.*ValueError: Unsupported dtype"):
        tessera.compile(sortlib.fp64_bits_kernel, signature="*fp64,*i64", constexprs={"BLOCK": 16}, target="sm_90a")
