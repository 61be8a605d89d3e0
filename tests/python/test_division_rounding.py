"""Float division rounds as Triton 3.6's: `/` of f32 (and of f16/bf16, computed in f32) and tl.fdiv
are the approximate div.full.f32; tl.div_rn and tl.fdiv(ieee_rounding=True) are div.rn.f32; f64
division is always div.rn.f64. A power-of-two divisor is an exact multiplication. (An IEEE `/`
cost a slow-path call per element: Unsloth's soft-capped cross entropy divides 32 logits a thread.)"""
import re

import numpy as np
import pytest

from lang_support import ARCHS, assemble, compile_kernel


def divisions(ptx):
    return sorted(set(re.findall(r"\bdiv\.(?:full|rn|approx)\.f(?:32|64)\b", ptx)))


@pytest.mark.parametrize("form, dtype, expected", [
    ("slash", "fp32", ["div.full.f32"]),
    ("slash", "fp16", ["div.full.f32"]),
    ("slash", "bf16", ["div.full.f32"]),
    ("slash", "fp64", ["div.rn.f64"]),
    ("by_constant", "fp32", ["div.full.f32"]),
    ("reciprocal", "fp32", ["div.full.f32"]),
    ("fdiv", "fp32", ["div.full.f32"]),
    ("fdiv", "fp64", ["div.rn.f64"]),
    ("fdiv_ieee", "fp32", ["div.rn.f32"]),
    ("div_rn", "fp32", ["div.rn.f32"]),
    ("sigmoid", "fp32", ["div.full.f32"]),
    ("by_power_of_two", "fp32", []),
])
def test_division_instruction(tmp_path, form, dtype, expected):
    for arch in ARCHS:
        ptx = compile_kernel("division.py", "divide", f"*{dtype},*{dtype},*{dtype}",
                             {"FORM": form, "BLOCK": 128}, arch)
        assert divisions(ptx) == expected, (arch, divisions(ptx))
        assemble(ptx, arch, tmp_path)


def test_power_of_two_divisor_is_a_multiplication():
    ptx = compile_kernel("division.py", "divide", "*fp32,*fp32,*fp32", {"FORM": "by_power_of_two", "BLOCK": 128})
    assert re.search(r"mul(\.rn)?\.f32\s+%f\d+, %f\d+, 0f3D000000", ptx)  # x * 2^-5


def test_division_ir_attribute():
    ir = compile_kernel("division.py", "divide", "*fp32,*fp32,*fp32", {"FORM": "slash", "BLOCK": 128}, emit="ir")
    assert re.search(r'= div %\d+, %\d+ \{rounding = "full"\}', ir), ir
    ir = compile_kernel("division.py", "divide", "*fp32,*fp32,*fp32", {"FORM": "div_rn", "BLOCK": 128}, emit="ir")
    assert "rounding" not in ir


def test_nvrtc_backend_takes_the_full_range_division(tmp_path):
    ptx = compile_kernel("division.py", "divide", "*fp32,*fp32,*fp32", {"FORM": "slash", "BLOCK": 128},
                         extra=["--backend", "nvrtc"], emit="cuda")
    assert "div.full.f32" in ptx


@pytest.mark.parametrize("form", ["slash", "fdiv", "div_rn", "sigmoid"])
def test_interpreted_division_is_exact(form, monkeypatch):
    """The interpreter divides exactly (numpy), as Triton's does."""
    monkeypatch.setenv("TESSERA_INTERPRET", "1")
    import importlib.util
    spec = importlib.util.spec_from_file_location("division_kernels", "tests/python/lang_kernels/division.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rng = np.random.default_rng(3)
    x = rng.standard_normal(128).astype(np.float32)
    y = (rng.standard_normal(128) + 3).astype(np.float32)
    out = np.zeros(128, np.float32)
    mod.divide[(1,)](x, y, out, FORM=form, BLOCK=128)
    want = 1 / (1 + np.exp(-x.astype(np.float64))) if form == "sigmoid" else x.astype(np.float64) / y
    np.testing.assert_allclose(out, want, rtol=2e-7 if form != "sigmoid" else 1e-6)
