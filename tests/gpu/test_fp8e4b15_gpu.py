"""Triton's fp8e4b15 on the GPU: uint8 torch tensors viewed by tessera.reinterpret(t, tl.float8e4b15) (what
Triton's tests pass), widened to fp16 / fp32 and narrowed from every f16 and from f32 values, bit for bit
against Triton's conversion PTX emulated in numpy (tests/python/fp8e4b15_reference.py), as Triton's
test_conversions.py test_typeconvert_upcast checks it; and tl.dot of fp8e4b15 operands (upcast to f16) against
float64. The kernels are tests/python/lang_kernels/fp8e4b15.py; the CPU side is test_lang_fp8e4b15.py."""
import importlib.util
import pathlib
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402
import tessera.language as tl  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parents[1] / "python"
sys.path.insert(0, str(HERE))
import fp8e4b15_reference as ref  # noqa: E402

_spec = importlib.util.spec_from_file_location("fp8e4b15_kernels", HERE / "lang_kernels/fp8e4b15.py")
kernels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernels)

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

ALL_CODES = np.arange(256).astype(np.uint8)


def e4b15(t):
    return tessera.reinterpret(t, tl.float8e4b15)


@pytest.mark.parametrize("dst", [torch.float16, torch.float32])
def test_widening_every_code(dst):
    src = torch.from_numpy(ALL_CODES).cuda()
    out = torch.full((256,), float("nan"), dtype=dst, device="cuda")
    kernels.widen[(2,)](e4b15(src), out, 256, BLOCK=128)
    expect = ref.widen_to_f16(ALL_CODES).astype(np.float16 if dst == torch.float16 else np.float32)
    np.testing.assert_array_equal(out.cpu().numpy().view(np.uint8), expect.view(np.uint8))


@pytest.mark.parametrize("implicit", [False, True])
def test_narrowing_every_f16(implicit):
    halves = np.arange(65536).astype(np.uint16).view(np.float16)
    src = torch.from_numpy(halves.copy()).cuda()
    out = torch.zeros(65536, dtype=torch.uint8, device="cuda")
    kernels.narrow[(64,)](src, e4b15(out), 65536, BLOCK=1024, IMPLICIT=implicit)
    np.testing.assert_array_equal(out.cpu().numpy(), ref.narrow_f16(halves))


def test_narrowing_f32():
    rng = np.random.default_rng(15)
    x = np.concatenate([rng.integers(0, 2 ** 32, 1 << 16, dtype=np.uint64).astype(np.uint32).view(np.float32),
                        (rng.standard_normal(1 << 16) * 0.5).astype(np.float32),
                        np.array([0.0, -0.0, 1.75, 1.875, np.inf, -np.inf, np.nan, 1.0625], np.float32)])
    out = torch.zeros(len(x), dtype=torch.uint8, device="cuda")
    kernels.narrow[(len(x) // 1024 + 1,)](torch.from_numpy(x).cuda(), e4b15(out), len(x), BLOCK=1024)
    got, want = out.cpu().numpy(), ref.narrow_f32(x)
    bad = np.flatnonzero(got != want)
    # (2026-11-28, H200: this failed while the reference kept a NaN's sign through f32 -> f16, as
    # numpy does; the GPU's cvt gives the canonical 0x7FFF, which the reference now models. Not yet
    # rerun on a GPU.)
    assert bad.size == 0, (f"{bad.size} of {len(x)} differ; first inputs (f32 bits): "
                           f"{[hex(v) for v in x[bad[:12]].view(np.uint32)]}, got {got[bad[:12]]}, want {want[bad[:12]]}; "
                           f"{int(np.isnan(x[bad]).sum())} of them NaN")


def test_abs():
    src = torch.from_numpy(ALL_CODES).cuda()
    out = torch.zeros(256, dtype=torch.uint8, device="cuda")
    kernels.absolute[(1,)](e4b15(src), e4b15(out), BLOCK=256)
    np.testing.assert_array_equal(out.cpu().numpy(), ALL_CODES & 0x7F)


def test_dot():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 256, (64, 32)).astype(np.uint8)
    b = rng.integers(0, 256, (32, 64)).astype(np.uint8)
    c = torch.zeros((64, 64), dtype=torch.float32, device="cuda")
    kernels.dot[(1,)](e4b15(torch.from_numpy(a).cuda()), e4b15(torch.from_numpy(b).cuda()), c, M=64, N=64, K=32)
    wide = lambda x: ref.widen_to_f16(x.ravel()).astype(np.float64).reshape(x.shape)  # noqa: E731
    np.testing.assert_allclose(c.cpu().numpy(), wide(a) @ wide(b), rtol=1e-5, atol=1e-5)
