"""Triton's fp8e4b15 (e4m3 with exponent bias 15, no inf or NaN; uint8 storage, passed as a uint8 tensor
viewed by tessera.reinterpret / triton.reinterpret): loads, stores, casts to and from f16 / f32 with Triton's
results (its inline PTX, emulated in fp8e4b15_reference.py), |x|, and tl.dot (operands upcast to f16, as
Triton's semantic.dot does). Checked through the interpreter, and through the PTX tessera emits run by the
PTX emulator; tests/gpu/test_fp8e4b15_gpu.py runs the same kernels on the GPU."""
import importlib.util
import pathlib

import numpy as np
import pytest

import tessera
import tessera.language as tl
import fp8e4b15_reference as ref
from lang_support import assemble, compile_kernel
from ptx_emulator import GlobalMemory, run_kernel
from test_reinterpret_arguments import CpuTensor

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")

_spec = importlib.util.spec_from_file_location("fp8e4b15_kernels",
                                               pathlib.Path(__file__).parent / "lang_kernels/fp8e4b15.py")
kernels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernels)

ALL_CODES = np.arange(256).astype(np.uint8)
ALL_HALVES = np.arange(65536).astype(np.uint16).view(np.float16)


def interpreted(kernel):
    return tessera.jit(kernel.fn, interpret=True)


def e4b15(codes):
    return tessera.reinterpret(CpuTensor(np.asarray(codes, np.uint8)), tl.float8e4b15)


def f32_inputs():
    rng = np.random.default_rng(15)
    special = np.array([0.0, -0.0, 1.75, 1.875, 2.0, -2.0, 1e30, -1e30, np.inf, -np.inf, np.nan, 65504.0, 65520.0,
                        1.0625, 1.0624999, -1.0625, 2.0 ** -17, 2.0 ** -18, 2.0 ** -18 * 1.0001, 2.0 ** -24,
                        2.0 ** -25, 3 * 2.0 ** -19], np.float32)
    scaled = (rng.standard_normal(4000) * rng.choice([1e-5, 1e-3, 0.1, 1.0, 4.0], 4000)).astype(np.float32)
    random_bits = rng.integers(0, 2 ** 32, 2000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return np.concatenate([special, scaled, random_bits])


def test_reference_agrees_with_the_format():
    # The emulated PTX gives every code its value 2^(E-15) * 1.MMM (0.MMM * 2^-14 where E = 0), and narrowing
    # each value gives its code back, but for 0x7f / 0xff (1.875), which narrowing never produces.
    e, m = (ALL_CODES >> 3) & 0xF, ALL_CODES & 7
    value = np.where(e == 0, m * 2.0 ** -17, (8 + m) * 2.0 ** (e.astype(np.int64) - 18))
    value = np.where(ALL_CODES & 0x80, -value, value)
    np.testing.assert_array_equal(ref.widen_to_f16(ALL_CODES).astype(np.float64), value)
    back = ref.narrow_f16(ref.widen_to_f16(ALL_CODES))
    assert list(np.nonzero(back != ALL_CODES)[0]) == [0x7F, 0xFF]
    assert ref.narrow_f16(np.array([1.875], np.float16))[0] == 0x7E


@pytest.mark.parametrize("dst", [np.float16, np.float32])
def test_interpreted_widening_matches_triton(dst):
    out = np.full(256, np.nan, dst)
    interpreted(kernels.widen)[(2,)](e4b15(ALL_CODES), out, 256, BLOCK=128)
    np.testing.assert_array_equal(out.view(np.uint8), ref.widen_to_f16(ALL_CODES).astype(dst).view(np.uint8))


@pytest.mark.parametrize("implicit", [False, True])
def test_interpreted_narrowing_of_every_f16_matches_triton(implicit):
    out = np.zeros(65536, np.uint8)
    interpreted(kernels.narrow)[(64,)](ALL_HALVES, e4b15(out), 65536, BLOCK=1024, IMPLICIT=implicit)
    np.testing.assert_array_equal(out, ref.narrow_f16(ALL_HALVES))


def test_interpreted_narrowing_of_f32_matches_triton():
    x = f32_inputs()
    out = np.zeros(len(x), np.uint8)
    interpreted(kernels.narrow)[(len(x) // 1024 + 1,)](x, e4b15(out), len(x), BLOCK=1024)
    np.testing.assert_array_equal(out, ref.narrow_f32(x))


def test_interpreted_abs_clears_the_sign_bit():
    out = np.zeros(256, np.uint8)
    interpreted(kernels.absolute)[(1,)](e4b15(ALL_CODES), e4b15(out), BLOCK=256)
    np.testing.assert_array_equal(out, ALL_CODES & 0x7F)


def test_interpreted_dot_upcasts_to_f16():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 256, (16, 32)).astype(np.uint8)
    b = rng.integers(0, 256, (32, 16)).astype(np.uint8)
    c = np.zeros((16, 16), np.float32)
    interpreted(kernels.dot)[(1,)](e4b15(a), e4b15(b), c, M=16, N=16, K=32)
    expect = ref.widen_to_f16(a.ravel()).astype(np.float64).reshape(a.shape) @ \
        ref.widen_to_f16(b.ravel()).astype(np.float64).reshape(b.shape)
    np.testing.assert_allclose(c, expect, rtol=1e-6, atol=1e-6)


def emulate(ptx, args, grid, block=128):
    mem = GlobalMemory()
    addrs = [mem.alloc(a) if isinstance(a, np.ndarray) else a for a in args]
    run_kernel(ptx, grid=grid, block=(block,), args=addrs, memory=mem)
    return mem, addrs


@pytest.mark.parametrize("dst, sig", [(np.float16, "fp16"), (np.float32, "fp32")])
def test_ptx_widening_matches_triton(dst, sig, tmp_path):
    ptx = compile_kernel("fp8e4b15.py", "widen", f"*fp8e4b15,*{sig},i32", {"BLOCK": 256}, arch="sm_90a")
    assemble(ptx, "sm_90a", tmp_path)
    mem, addrs = emulate(ptx, [ALL_CODES.copy(), np.zeros(256, dst), 256], grid=(1,))
    np.testing.assert_array_equal(mem.read(addrs[1], dst, 256).view(np.uint8),
                                  ref.widen_to_f16(ALL_CODES).astype(dst).view(np.uint8))


@pytest.mark.parametrize("src, sig", [(np.float16, "fp16"), (np.float32, "fp32")])
def test_ptx_narrowing_matches_triton(src, sig, tmp_path):
    x = ALL_HALVES.copy() if src == np.float16 else f32_inputs()
    x = x[:8192]
    ptx = compile_kernel("fp8e4b15.py", "narrow", f"*{sig},*fp8e4b15,i32", {"BLOCK": 1024}, arch="sm_90a")
    assemble(ptx, "sm_90a", tmp_path)
    mem, addrs = emulate(ptx, [x, np.zeros(len(x), np.uint8), len(x)], grid=(len(x) // 1024 + 1,))
    expect = ref.narrow_f16(x) if src == np.float16 else ref.narrow_f32(x)
    np.testing.assert_array_equal(mem.read(addrs[1], np.uint8, len(x)), expect)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_dot_of_fp8e4b15_compiles_to_an_f16_dot(arch, tmp_path):
    ptx = compile_kernel("fp8e4b15.py", "dot", "*fp8e4b15,*fp8e4b15,*fp32", {"M": 64, "N": 64, "K": 32}, arch=arch)
    assemble(ptx, arch, tmp_path)
    assert "f16" in ptx and "e4m3" not in ptx


def test_dtype_in_kernels():
    @tessera.jit(interpret=True)
    def k(out):
        d = tl.float8e4b15
        tl.static_assert(d.is_fp8() and d.is_fp8e4b15() and not d.is_fp8e4nv() and d.is_floating())
        tl.static_assert(d.primitive_bitwidth == 8 and d.fp_mantissa_width == 3 and d.exponent_bias == 15)
        tl.static_assert(tl.dtype("fp8e4b15") == d and d != tl.float8e4nv)
        tl.store(out, tl.full([1], 1.0, d).to(tl.float32).sum())

    out = np.zeros(1, np.float32)
    k[(1,)](out)
    assert out[0] == 1.0


def test_int_casts_are_refused(tmp_path):
    src = tmp_path / "k.py"
    src.write_text("import tessera\nimport tessera.language as tl\n\n@tessera.jit\ndef k(x, y):\n"
                   "    offs = tl.arange(0, 128)\n    v = tl.load(x + offs)\n    tl.store(y + offs, v.to(tl.int32))\n")
    from conftest import run_cli
    proc = run_cli(["compile", str(src), "--kernel", "k", "--signature", "*fp8e4b15,*i32"])
    assert proc.returncode == 1 and "cannot cast fp8e4b15 to i32" in proc.stderr, proc.stderr


@tessera.jit(interpret=True)
def custom_float8_kernel(src, wide, narrow_out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(src + offs)
    w = tl.extra.cuda.convert_custom_float8_sm80(x, tl.float32)
    tl.store(wide + offs, w)
    tl.store(narrow_out + offs, tl.extra.cuda.convert_custom_float8_sm70(w, tl.float8e4b15, "rtne"))


def test_triton_conversion_functions_by_name():
    wide, back = np.zeros(256, np.float32), np.zeros(256, np.uint8)
    custom_float8_kernel[(1,)](e4b15(ALL_CODES), wide, e4b15(back), BLOCK=256)
    np.testing.assert_array_equal(wide, ref.widen_to_f16(ALL_CODES).astype(np.float32))
    np.testing.assert_array_equal(back, ref.narrow_f32(wide))


def constants_expected(codes, n):
    offs = np.arange(len(codes))
    v = np.where(offs < n, codes, ref.narrow_f32(np.array([0.5], np.float32))[0])
    return np.where(offs % 3 == 0, ref.narrow_f32(np.array([1.5], np.float32))[0], v).astype(np.uint8)


def test_interpreted_constants_other_and_where():
    out = np.zeros(128, np.uint8)
    interpreted(kernels.constants)[(1,)](e4b15(ALL_CODES[:128]), e4b15(out), 100, BLOCK=128)
    expect = constants_expected(ALL_CODES[:128], 100)
    assert ref.narrow_f32(np.array([0.5, 1.5], np.float32)).tolist() == [0x70, 0x7C]
    np.testing.assert_array_equal(out, expect)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_ptx_constants_other_and_where(arch, tmp_path):
    ptx = compile_kernel("fp8e4b15.py", "constants", "*fp8e4b15,*fp8e4b15,i32", {"BLOCK": 128}, arch=arch)
    assemble(ptx, arch, tmp_path)
    mem, addrs = emulate(ptx, [ALL_CODES[:128].copy(), np.zeros(128, np.uint8), 100], grid=(1,))
    np.testing.assert_array_equal(mem.read(addrs[1], np.uint8, 128), constants_expected(ALL_CODES[:128], 100))
