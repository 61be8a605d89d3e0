"""Constructs that third-party Triton libraries (Liger-Kernel, vLLM, FlagGems, Unsloth, Inductor's
generated code) use, in kernels written here in their style: run through the compatibility mode
where the construct is host-side, compiled to PTX and interpreted where it is in a kernel."""
import sys

import numpy as np
import pytest

from conftest import PTXAS

import tessera
import tessera.compat
import tessera.language as tl
from tessera.autotune import KernelInterface
from tessera.language.extra import libdevice

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")


# ------------------------------------------------------------------ libdevice written in the language

@tessera.jit(interpret=True)
def classify_kernel(x_ptr, flags_ptr, ints_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(flags_ptr + 0 * BLOCK + offs, libdevice.isinf(x))
    tl.store(flags_ptr + 1 * BLOCK + offs, libdevice.isnan(x).to(tl.int1).to(tl.int32))  # Inductor's spelling
    tl.store(flags_ptr + 2 * BLOCK + offs, libdevice.signbit(x))
    tl.store(flags_ptr + 3 * BLOCK + offs, libdevice.finitef(x))
    finite = libdevice.finitef(x) != 0
    tl.store(ints_ptr + 0 * BLOCK + offs, libdevice.float2int_rn(tl.where(finite, x, 0.0)))
    tl.store(ints_ptr + 1 * BLOCK + offs, libdevice.float2int_rd(tl.where(finite, x, 0.0)))
    tl.store(ints_ptr + 2 * BLOCK + offs, libdevice.float2int_ru(tl.where(finite, x, 0.0)))
    tl.store(ints_ptr + 3 * BLOCK + offs, libdevice.float2int_rz(tl.where(finite, x, 0.0)))
    tl.store(ints_ptr + 4 * BLOCK + offs, libdevice.float_as_int(x))
    tl.store(ints_ptr + 5 * BLOCK + offs, libdevice.llrint(tl.where(finite, x, 0.0)).to(tl.int32))
    # where() with an int32 condition, as in `tl.where(libdevice.isnan(p), 0.0, p)`
    y = tl.where(libdevice.isnan(x), 0.0, libdevice.int_as_float(libdevice.float_as_int(x)))
    tl.store(out_ptr + offs, libdevice.add_rn(libdevice.mul_rn(y, 2.0), libdevice.rcp_rn(tl.full((BLOCK,), 2.0, tl.float32))))


X = np.array([1.5, -2.5, np.inf, -np.inf, np.nan, -0.0, 0.0, 2.5, 3.5, -0.5, 7.49, -7.51, 1e9, -1e-30, 0.5, 100.0],
             np.float32)


def test_libdevice_classification_and_conversions_interpreted():
    flags = np.zeros(4 * 16, np.int32)
    ints = np.zeros(6 * 16, np.int32)
    out = np.zeros(16, np.float32)
    classify_kernel[(1,)](X, flags, ints, out, BLOCK=16)
    flags, ints = flags.reshape(4, 16), ints.reshape(6, 16)
    np.testing.assert_array_equal(flags[0], np.isinf(X))
    np.testing.assert_array_equal(flags[1], np.isnan(X))
    np.testing.assert_array_equal(flags[2], np.signbit(X))  # -0.0 and -nan-free negatives
    np.testing.assert_array_equal(flags[3], np.isfinite(X))
    xf = np.where(np.isfinite(X), X, 0).astype(np.float64)
    np.testing.assert_array_equal(ints[0], np.rint(xf))      # ties to even: 2.5 -> 2, -2.5 -> -2, 0.5 -> 0
    np.testing.assert_array_equal(ints[1], np.floor(xf))
    np.testing.assert_array_equal(ints[2], np.ceil(xf))
    np.testing.assert_array_equal(ints[3], np.trunc(xf))
    np.testing.assert_array_equal(ints[4], X.view(np.int32))
    np.testing.assert_array_equal(ints[5], np.rint(xf).astype(np.int64).astype(np.int32))
    y = np.where(np.isnan(X), 0, X)
    np.testing.assert_array_equal(out, y * 2 + np.float32(0.5))


def test_libdevice_classification_compiles_to_ptx(tmp_path):
    k = tessera.compile(classify_kernel, signature="*fp32,*i32,*i32,*fp32", constexprs={"BLOCK": 256},
                        target="sm_90a")
    assert ".visible .entry classify_kernel" in k.asm["ptx"]


@tessera.jit(interpret=True)
def double_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    r = libdevice.isinf(x) + 2 * libdevice.signbit(x) + 4 * libdevice.isfinited(x)
    r += 8 * (libdevice.double_as_longlong(x) == libdevice.double_as_longlong(libdevice.longlong_as_double(
        libdevice.double_as_longlong(x)))).to(tl.int32)
    tl.store(out_ptr + offs, r + 16 * libdevice.double2int_rn(tl.where(libdevice.isfinited(x) != 0, x, 0.0)))


def test_libdevice_float64_forms():
    x = np.array([-np.inf, -1.5, 0.5, np.nan], np.float64)
    out = np.zeros(4, np.int32)
    double_kernel[(1,)](x, out, BLOCK=4)
    expected = np.isinf(x) + 2 * np.signbit(x) + 4 * np.isfinite(x) + 8 + 16 * np.rint(np.where(np.isfinite(x), x, 0))
    np.testing.assert_array_equal(out, expected)


@tessera.jit(interpret=True)
def isnan_of_ints_kernel(x_ptr, out_ptr):
    tl.store(out_ptr, libdevice.isnan(tl.load(x_ptr)))


@tessera.jit(interpret=True)
def float_as_int_of_doubles_kernel(x_ptr, out_ptr):
    tl.store(out_ptr, libdevice.float_as_int(tl.load(x_ptr)))


def test_libdevice_operand_types_are_checked():
    with pytest.raises(tessera.CompilationError, match=r"tl.isnan: .*isnan needs floats"):
        tessera.compile(isnan_of_ints_kernel, signature="*i32,*i32", target="sm_90a")
    with pytest.raises(tessera.CompilationError, match=r"float_as_int needs float32 operands"):
        tessera.compile(float_as_int_of_doubles_kernel, signature="*fp64,*i32", target="sm_90a")


def test_libdevice_names_import_in_compatibility_mode():
    tessera.compat.install()
    try:
        ns = {"__name__": "user_lib"}
        exec("from triton.language.extra.cuda.libdevice import isinf, isnan, signbit, float2int_rn, "
             "double2ull_rz, int_as_float, llrint", ns)
        assert ns["isinf"] is libdevice.isinf
    finally:
        tessera.compat.uninstall()


# ------------------------------------------------------------------ dtypes of block pointers and pointer arguments

@tessera.jit(interpret=True)
def block_copy_kernel(a_ptr, out_ptr, M, N, stride_m, stride_n, BM: tl.constexpr, BN: tl.constexpr):
    src = tl.make_block_ptr(a_ptr, (M, N), (stride_m, stride_n), (tl.program_id(0) * BM, 0), (BM, BN), (1, 0))
    dst = tl.make_block_ptr(out_ptr, (M, N), (stride_m, stride_n), (tl.program_id(0) * BM, 0), (BM, BN), (1, 0))
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    acc += tl.load(src, boundary_check=(0, 1), padding_option="zero").to(tl.float32) * 2
    # the store's element type read from the block pointer and from the pointer argument
    tl.store(dst, acc.to(dst.dtype.element_ty).to(out_ptr.type.element_ty), boundary_check=(0, 1))


def test_block_pointer_dtype_element_ty():
    a = np.arange(6 * 5, dtype=np.float16).reshape(6, 5)
    out = np.zeros_like(a)
    block_copy_kernel[(2,)](a, out, 6, 5, 5, 1, BM=4, BN=8)
    np.testing.assert_array_equal(out, a * 2)
    k = tessera.compile(block_copy_kernel, signature="*fp16,*fp16,i32,i32,i32,i32",
                        constexprs={"BM": 64, "BN": 64}, target="sm_90a")
    assert "st.global" in k.asm["ptx"]


# ------------------------------------------------------------------ autotuned kernels under the interpreter

HOOKED = []


def _drop_small_blocks(configs, named_args, **kwargs):
    return [c for c in configs if c.kwargs["BLOCK"] >= 64]


@tessera.autotune(
    configs=[tessera.Config({"BLOCK": 32}, num_warps=2),
             tessera.Config({"BLOCK": 64}, num_warps=4, pre_hook=lambda nargs: HOOKED.append(nargs["BLOCK"])),
             tessera.Config({"BLOCK": 128}, num_warps=8)],
    key=["n"], reset_to_zero=["out_ptr"], restore_value=["x_ptr"],
    prune_configs_by={"early_config_prune": _drop_small_blocks, "perf_model": None, "top_k": 2},
)
@tessera.jit(interpret=True, do_not_specialize=["n"])
def autotuned_add_one(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


def test_autotuned_kernel_runs_interpreted_with_the_first_pruned_config():
    # Libraries autotune nearly every kernel; interpreted (no GPU to time on) the launch takes the
    # first config left by prune_configs_by, and runs its pre_hook (it failed: numpy arrays are not CUDA memory).
    x = np.arange(200, dtype=np.float32)
    out = np.zeros_like(x)
    HOOKED.clear()
    autotuned_add_one[lambda meta: (tessera.cdiv(x.size, meta["BLOCK"]),)](x, out, x.size)
    np.testing.assert_array_equal(out, x + 1)
    assert autotuned_add_one.best_config.kwargs == {"BLOCK": 64} and HOOKED == [64]


# ------------------------------------------------------------------ a library's own launcher over JITFunction (FlagGems' libentry style)

@tessera.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@tessera.jit(interpret=True, do_not_specialize=["n"])
def scaled_copy(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr, EVEN: tl.constexpr, SHIFT: tl.constexpr = 0.0):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) * scale + SHIFT)
    else:
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * scale + SHIFT, mask=offs < n)


class CachingLauncher(KernelInterface):
    """Launches through fn.run once per constexpr key, then through the kernel run() returned, with
    the runtime arguments only (the parameters' num / is_constexpr / do_not_specialize / default)."""

    def __init__(self, fn):
        self.fn = fn
        jit = fn
        while not isinstance(jit, tessera.JITFunction):
            jit = jit.fn
        self.params = jit.params
        self.cache = {}
        self.launched = []

    def run(self, *args, grid, **kwargs):
        runtime = [a for p, a in zip(self.params, args) if not p.is_constexpr]
        constexprs = tuple(kwargs.get(p.name, p.default) for p in self.params[len(args):] if p.is_constexpr)
        if constexprs not in self.cache:
            self.cache[constexprs] = self.fn.run(*args, grid=grid, **kwargs)
            self.launched.append("run")
            return
        self.cache[constexprs][grid](*runtime)
        self.launched.append("cached")


def test_kernel_run_returns_a_kernel_to_launch_with_runtime_arguments():
    params = scaled_copy.fn.params
    assert [p.num for p in params] == list(range(7))
    assert [p.name for p in params if p.do_not_specialize] == ["n"]
    assert params[6].default == 0.0 and params[0].default is __import__("inspect").Parameter.empty
    assert params[4] == ("BLOCK", True, False)  # still tuples
    launcher = CachingLauncher(scaled_copy)
    x = np.arange(100, dtype=np.float32)
    for scale in (2.0, 3.0):
        out = np.zeros_like(x)
        launcher[(4,)](x, out, 100, scale, BLOCK=32, SHIFT=1.0)
        np.testing.assert_array_equal(out, x * scale + 1)
    assert launcher.launched == ["run", "cached"]
    kernel = scaled_copy.fn.run(x, out, 100, 1.0, grid=(4,), BLOCK=32, EVEN=False)
    assert kernel.constexprs == {"BLOCK": 32, "EVEN": False, "SHIFT": 0.0}  # the specialisation that ran
    kernel[(4,)](x, out, 100, 5.0, 32, False, 0.0)  # every parameter, constexprs ignored (as Triton's)
    np.testing.assert_array_equal(out, x * 5)


# ------------------------------------------------------------------ a library's Autotuner subclass, constructed in Triton's order

class KeyedTuner(tessera.Autotuner):
    """Overrides run(): picks by Triton's _bench(*args, config=...), prunes with prune_configs(kwargs),
    resets with pre_hook(nargs, reset_only=True), as library tuners built on Triton's Autotuner do."""

    def __init__(self, fn, arg_names, configs, key, reset_to_zero, restore_value, pre_hook=None, post_hook=None,
                 prune_configs_by=None, warmup=None, rep=None, use_cuda_graph=False):
        super().__init__(fn, arg_names, configs, key, reset_to_zero, restore_value, pre_hook, post_hook,
                         prune_configs_by, warmup, rep, use_cuda_graph)
        self.chosen = {}

    def run(self, *args, grid, warmup, **kwargs):
        self.nargs = dict(zip(self.arg_names, args))
        key = tuple(self.nargs[k] for k in self.keys)
        if key not in self.chosen:
            timings = {c: self._bench(*args, config=c, grid=grid, **kwargs) for c in self.prune_configs(kwargs)}
            self.chosen[key] = min(timings, key=timings.get)
            self.pre_hook({**self.nargs, **kwargs}, reset_only=True)
        self.best_config = self.chosen[key]
        try:
            return self.fn.run(*args, grid=grid, warmup=warmup, **kwargs, **self.best_config.all_kwargs())
        finally:
            self.nargs = None


def _accumulate(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(out_ptr, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0)))


def test_autotuner_subclass_in_tritons_argument_order():
    jit = tessera.jit(interpret=True)(_accumulate)
    tuner = KeyedTuner(jit, jit.arg_names, [tessera.Config({"BLOCK": 16}), tessera.Config({"BLOCK": 64})], ["n"],
                       ["out_ptr"], None, prune_configs_by={"early_config_prune": lambda cs, nargs, **kw: cs[::-1]})
    assert tuner.base_fn is _accumulate and tuner.reset_to_zero == ["out_ptr"]
    assert tuner.early_config_prune is not None
    x = np.ones(100, np.float32)
    out = np.full(1, 7.0, np.float32)  # zeroed by pre_hook(reset_only=True)
    tuner[lambda meta: (tessera.cdiv(100, meta["BLOCK"]),)](x, out, 100)
    assert out[0] == 100 and tuner.best_config.kwargs == {"BLOCK": 64}
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        tessera.Autotuner(jit, [tessera.Config({"BLOCK": 16})], ["n"], bogus=1)
    # Heuristics in Triton's order (fn, arg_names, values)
    h = tessera.Heuristics(jit, jit.arg_names, {"BLOCK": lambda args: 32})
    out[:] = 0
    h[(4,)](x, out, 100)
    assert out[0] == 100


# ------------------------------------------------------------------ @jit functions of other modules

HELPERS = '''
import triton
import triton.language as tl

SCALE = 2.0


@triton.jit
def _pick_larger(a, b):
    return tl.where((a > b) | (a != a), a, b)


@triton.jit
def larger(a, b):
    return _pick_larger(a, b)


@triton.jit
def row_max(x, axis: tl.constexpr):
    return tl.reduce(x, axis, larger)


@triton.jit
def scaled(x):
    return x * SCALE


@triton.jit
def pid64(axis: tl.constexpr):
    return tl.program_id(axis).to(tl.int64)
'''

KERNELS = '''
import numpy
import triton
import triton.language as tl
import rwlib.ops.helpers
from rwlib.ops import helpers
from rwlib.ops import helpers as h
from rwlib.ops.helpers import scaled


@triton.jit
def _inner(x):
    return helpers.larger(x, 0.0)


@triton.jit
def rows_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = h.pid64(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + offs[None, :], mask=offs[None, :] < n_cols, other=float("-inf"))
    m = rwlib.ops.helpers.row_max(x, 1)
    tl.store(out_ptr + row + tl.arange(0, 1), scaled(_inner(m)))


@triton.jit
def wrong_kernel(out_ptr):
    tl.store(out_ptr, numpy.float32(1.0))
'''


REEXPORTED = '''
from rwlib.triton_utils import tl, triton


@triton.jit
def blocks(n, BLOCK):
    return (n + BLOCK - 1) // BLOCK


@triton.jit
def add_block_count(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + blocks(n, BLOCK), mask=offs < n)
'''


SOFTCAP = '''
import triton
import triton.language as tl
from rwlib.compat_utils import fast_tanh, to_type, DEFAULT_CAP, ON


@triton.jit
def softcap_kernel(x_ptr, out_ptr, row_stride, CAP: tl.constexpr, BLOCK: tl.constexpr, CAPPED: tl.constexpr):
    row = tl.program_id(0)
    x_ptr += row * to_type(row_stride, tl.int64)
    offs = tl.arange(0, BLOCK)
    y = tl.load(x_ptr + offs)
    if CAPPED == ON:
        y = CAP * fast_tanh(y / CAP)
    else:
        y = DEFAULT_CAP * fast_tanh(y / DEFAULT_CAP)
    tl.store(out_ptr + row * BLOCK + offs, y)
'''


SHIM = '''
import triton
import triton.language as tl
from triton.language.extra import libdevice

erf = libdevice.erf
HALF = 0.5
INV_SQRT2 = tl.constexpr(0.7071067811865476)


@triton.jit
def square(x):
    return x * x
'''

GELU = '''
import triton
import triton.language as tl
from rwlib import shim


@triton.jit
def gelu_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, shim.HALF * x * (1.0 + shim.erf(x * shim.INV_SQRT2)) + 0.0 * shim.square(x))
'''


WRAPPED = '''
import triton
import triton.language as tl


def _scale(x, factor):
    return x * factor
_scale = triton.jit(_scale)


def scale_kernel(x_ptr, out_ptr, FACTOR: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, _scale(tl.load(x_ptr + offs), FACTOR))
scale_kernel = triton.jit(scale_kernel)
scale_kernel = triton.heuristics({"BLOCK": lambda args: 8})(scale_kernel)
'''


@pytest.fixture
def library(tmp_path, monkeypatch):
    """A package `rwlib` whose kernels call @jit helpers of another module four ways."""
    (tmp_path / "rwlib" / "ops").mkdir(parents=True)
    (tmp_path / "rwlib" / "__init__.py").write_text("")
    (tmp_path / "rwlib" / "ops" / "__init__.py").write_text("")
    (tmp_path / "rwlib" / "ops" / "helpers.py").write_text(HELPERS)
    (tmp_path / "rwlib" / "ops" / "kernels.py").write_text(KERNELS)
    (tmp_path / "rwlib" / "triton_utils.py").write_text("import triton\nimport triton.language as tl\n")
    (tmp_path / "rwlib" / "ops" / "reexported.py").write_text(REEXPORTED)
    (tmp_path / "rwlib" / "compat_utils.py").write_text(
        "import triton.language as tl\nfrom triton.language.extra import libdevice\n"
        "fast_tanh = libdevice.tanh\nto_type = tl.cast\nDEFAULT_CAP = 15.0\nON = tl.constexpr(1)\n")
    (tmp_path / "rwlib" / "ops" / "softcap.py").write_text(SOFTCAP)
    (tmp_path / "rwlib" / "shim.py").write_text(SHIM)
    (tmp_path / "rwlib" / "ops" / "gelu.py").write_text(GELU)
    (tmp_path / "rwlib" / "ops" / "wrapped.py").write_text(WRAPPED)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("TESSERA_INTERPRET", "1")
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path / "cache"))
    tessera.compat.install()
    import importlib
    try:
        yield importlib.import_module("rwlib.ops.kernels")
    finally:
        tessera.compat.uninstall()
        for name in ["rwlib.ops.kernels", "rwlib.ops.helpers", "rwlib.ops.reexported", "rwlib.ops.softcap",
                     "rwlib.ops.gelu", "rwlib.ops.wrapped", "rwlib.ops", "rwlib.triton_utils", "rwlib.compat_utils", "rwlib.shim", "rwlib"]:
            sys.modules.pop(name, None)


def test_jit_functions_of_other_modules_are_compiled_with_the_kernel(library):
    x = np.array([[1.0, -3.0, 2.0], [-1.0, -5.0, -2.0], [4.0, np.nan, 0.0]], np.float32)
    out = np.zeros(3, np.float32)
    library.rows_kernel[(3,)](x, out, 3, BLOCK=4)
    np.testing.assert_array_equal(out, [4.0, 0.0, np.nan])
    k = tessera.compile(library.rows_kernel, signature="*fp32,*fp32,i32", constexprs={"BLOCK": 256},
                        target="sm_90a")
    assert "max.f32" in k.asm["ptx"] or "setp" in k.asm["ptx"]


def test_a_name_of_another_library_used_in_a_kernel_says_what_it_is(library):
    with pytest.raises(tessera.CompilationError, match=r"'numpy.float32' \(not a @jit function tessera was given\)"):
        library.wrong_kernel[(1,)](np.zeros(1, np.float32))


def test_tl_and_triton_imported_from_a_module_that_reexports_them(library):
    import importlib
    module = importlib.import_module("rwlib.ops.reexported")  # from rwlib.triton_utils import tl, triton
    x = np.zeros(10, np.float32)
    out = np.zeros(10, np.float32)
    module.add_block_count[(3,)](x, out, 10, BLOCK=4)
    np.testing.assert_array_equal(out, np.full(10, 3.0))


# ------------------------------------------------------------------ tl.extra.cuda.libdevice spelled out; tl.reduce_or

@tessera.jit(interpret=True)
def nan_bits_kernel(x_ptr, out_ptr, bits_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    is_nan = tl.extra.cuda.libdevice.isnan(x).to(tl.int1)  # the module path written out in the kernel
    tl.store(out_ptr + offs, tl.where(is_nan, 0.0, x))
    flags = tl.where(is_nan, 1 << offs, 0)
    tl.store(bits_ptr, tl.reduce_or(flags, 0))
    tl.store(bits_ptr + 1, flags.reduce_or(axis=0))  # the tensor method


def test_libdevice_through_tl_extra_cuda_and_reduce_or():
    x = np.array([1.0, np.nan, 2.0, np.nan], np.float32)
    out = np.zeros(4, np.float32)
    bits = np.zeros(2, np.int32)
    nan_bits_kernel[(1,)](x, out, bits, BLOCK=4)
    np.testing.assert_array_equal(out, [1.0, 0.0, 2.0, 0.0])
    np.testing.assert_array_equal(bits, [0b1010, 0b1010])


@tessera.jit
def reduce_or_of_floats_kernel(x_ptr, out_ptr):
    tl.store(out_ptr, tl.reduce_or(tl.load(x_ptr + tl.arange(0, 4)), 0))


def test_reduce_or_needs_integers():
    with pytest.raises(tessera.CompilationError, match="tl.reduce_or needs integers, got f32"):
        tessera.compile(reduce_or_of_floats_kernel, signature="*fp32,*fp32", target="sm_90a")


def test_language_functions_and_constants_imported_from_another_module(library):
    import importlib
    module = importlib.import_module("rwlib.ops.softcap")  # from rwlib.compat_utils import fast_tanh, to_type
    x = np.linspace(-30, 30, 24, dtype=np.float32).reshape(3, 8)
    out = np.zeros_like(x)
    module.softcap_kernel[(3,)](x, out, 8, CAP=10.0, BLOCK=8, CAPPED=1)
    np.testing.assert_allclose(out, 10.0 * np.tanh(x / 10.0), rtol=1e-6, atol=1e-6)
    module.softcap_kernel[(3,)](x, out, 8, CAP=10.0, BLOCK=8, CAPPED=0)  # the other module's DEFAULT_CAP
    np.testing.assert_allclose(out, 15.0 * np.tanh(x / 15.0), rtol=1e-6, atol=1e-6)


# ------------------------------------------------------------------ @jit(...) with arguments the kernel language has no syntax for

@tessera.jit(interpret=True, launch_metadata=lambda grid, kernel, args: {"name": f"fill {args['n']}"},
             repr=lambda specialization: "fill_kernel")
def fill_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, offs.to(tl.float32) + n, mask=offs < n)


def test_jit_decorator_with_lambda_arguments():
    # Triton's tutorials pass launch_metadata=...; the decorator's arguments are the host's business
    # (it was "unsupported construct: 'lambda'" at the decorator).
    out = np.zeros(8, np.float32)
    fill_kernel[(1,)](out, 5, BLOCK=8)
    np.testing.assert_array_equal(out, [5, 6, 7, 8, 9, 0, 0, 0])
    tessera.compile(fill_kernel, signature="*fp32,i32", constexprs={"BLOCK": 64}, target="sm_90a")


def test_language_functions_and_constants_reached_through_another_module(library):
    # shim.erf (= libdevice.erf there), shim.HALF, shim.INV_SQRT2 (a tl.constexpr), shim.square (@jit)
    import importlib
    import math
    module = importlib.import_module("rwlib.ops.gelu")
    x = np.linspace(-3, 3, 16, dtype=np.float32)
    out = np.zeros_like(x)
    module.gelu_kernel[(1,)](x, out, BLOCK=16)
    expected = [0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.astype(np.float64)]
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_tritons_launch_options_interpreted():
    out = np.zeros(8, np.float32)
    fill_kernel[(1,)](out, 8, BLOCK=8, enable_fp_fusion=False, launch_pdl=True, sanitize_overflow=True,
                      extern_libs=None, launch_cooperative_grid=False)
    np.testing.assert_array_equal(out, np.arange(8) + 8)
    out[:] = 0  # cooperative launches and clusters change nothing a program computes: accepted
    fill_kernel[(1,)](out, 8, BLOCK=8, launch_cooperative_grid=True, num_ctas=2)
    np.testing.assert_array_equal(out, np.arange(8) + 8)


def test_helpers_made_jit_by_a_call(library):
    # `_scale = triton.jit(_scale)` after a plain def (it was "name '_scale' is not defined")
    import importlib
    module = importlib.import_module("rwlib.ops.wrapped")
    x = np.arange(8, dtype=np.float32)
    out = np.zeros_like(x)
    module.scale_kernel[(1,)](x, out, FACTOR=3.0)
    np.testing.assert_array_equal(out, x * 3)
