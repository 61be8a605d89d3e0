"""float8e4nv / float8e5: loads, stores, constants and casts (cvt.*.e4m3x2 /
e5m2x2 on sm_90); before sm_90 conversions from fp8 are made from the bits and
conversions to fp8 are a clear error."""
import numpy as np

import tessera
import tessera.language as tl
from lang_support import assemble, compile_kernel
from conftest import run_cli

SIG = "*fp32,*fp8e4nv,*fp8e5"


def test_fp8_casts_on_sm90(tmp_path):
    for arch in ["sm_90", "sm_90a"]:
        ptx = compile_kernel("fp8.py", "fp8_kernel", SIG, {"BLOCK": 128}, arch)
        assemble(ptx, arch, tmp_path)
        assert "cvt.rn.satfinite.e4m3x2.f32" in ptx and "cvt.rn.f16x2.e5m2x2" in ptx


def test_fp8_casts_need_sm90():
    proc = run_cli(["compile", "tests/python/lang_kernels/fp8.py", "--kernel", "fp8_kernel", "--signature", SIG,
                    "--constexpr", "BLOCK=128", "--arch", "sm_80"])
    assert proc.returncode == 1
    assert "conversions to fp8 need sm_90 (this is sm_80)" in proc.stderr


def test_fp8_arithmetic_is_refused(tmp_path):
    src = tmp_path / "k.py"
    src.write_text("import tessera\nimport tessera.language as tl\n\n@tessera.jit\ndef k(x):\n"
                   "    offs = tl.arange(0, 128)\n    v = tl.load(x + offs)\n    tl.store(x + offs, v + v)\n")
    proc = run_cli(["compile", str(src), "--kernel", "k", "--signature", "*fp8e4nv"])
    assert proc.returncode == 1 and "arithmetic on fp8" in proc.stderr


class Fp8Array:
    """A uint8/int8 array seen by the interpreter as fp8 (what ml_dtypes' float8 arrays are)."""

    def __init__(self, array, name):
        self.array, self.dtype = array, name

    @property
    def __array_interface__(self):
        iface = dict(self.array.__array_interface__)
        iface["typestr"] = "|V1"
        return iface


@tessera.jit(interpret=True)
def abs_kernel(X, Z, SIZE: tl.constexpr):
    off = tl.arange(0, SIZE)
    tl.store(Z + off, tl.abs(tl.load(X + off)))


def test_abs_of_fp8_clears_the_sign_bit():
    # test_core.py's test_abs_fp8, with every byte (NaN and inf patterns too), through the host interpreter
    for name in ["float8_e4m3fn", "float8_e5m2"]:
        bits = np.arange(-128, 128).astype(np.int8)
        out = np.zeros(256, np.int8)
        abs_kernel[(1,)](Fp8Array(bits, name), Fp8Array(out, name), 256)
        np.testing.assert_array_equal(out, bits & 0x7F)


def test_abs_of_fp8_compiles(tmp_path):
    src = tmp_path / "k.py"
    src.write_text("import tessera\nimport tessera.language as tl\n\n@tessera.jit\ndef k(x, z):\n"
                   "    offs = tl.arange(0, 128)\n    tl.store(z + offs, tl.abs(tl.load(x + offs)))\n"
                   "    tl.store(z, abs(tl.load(x)))\n")
    for sig in ["*fp8e4nv,*fp8e4nv", "*fp8e5,*fp8e5"]:
        for arch in ["sm_80", "sm_90a"]:
            proc = run_cli(["compile", str(src), "--kernel", "k", "--signature", sig, "--arch", arch])
            assert proc.returncode == 0, proc.stderr
            assemble(proc.stdout, arch, tmp_path)
            assert "and.b16" in proc.stdout or "and.b32" in proc.stdout, proc.stdout


@tessera.jit(interpret=True)
def copy_kernel(X, Z, SIZE: tl.constexpr):
    off = tl.arange(0, SIZE)
    tl.store(Z + off, tl.load(X + off))


def test_fp8_copy_keeps_every_byte():
    # the interpreter holds fp8 elements as doubles: a loaded e5m2 infinity is stored as one
    for name in ["float8_e4m3fn", "float8_e5m2"]:
        bits = np.arange(-128, 128).astype(np.int8)
        out = np.zeros(256, np.int8)
        copy_kernel[(1,)](Fp8Array(bits, name), Fp8Array(out, name), 256)
        np.testing.assert_array_equal(out, bits)


# What semantic.cast allows around fp8: integers convert only through a floating type (the refusals
# are tests/errors/fp8_*_int*.py, int_to_fp8_cast.py); these forms never cast an integer.
FP8_WITHOUT_INTEGER_CASTS = {
    "full": ("*fp8e4nv", "tl.store(y + o, tl.full((128,), 0, tl.float8e4nv))"),
    "zeros": ("*fp8e4nv", "tl.store(y + o, tl.zeros((128,), tl.float8e4nv))"),
    "where_literal": ("*fp8e4nv", "tl.store(y + o, tl.where(o < 3, tl.load(y + o), 0))"),
    "other_float": ("*fp8e5", "tl.store(y + o, tl.load(y + o, mask=o < 3, other=0.0))"),
    "store_float": ("*fp8e4nv", "tl.store(y + o, o.to(tl.float32))"),
    "bitcast": ("*fp8e4nv", "tl.store(y + o, (tl.load(y + o).to(tl.int8, bitcast=True) + 1).to(tl.float8e4nv, bitcast=True))"),
}


def test_fp8_forms_without_integer_casts_compile(tmp_path):
    for name, (sig, body) in FP8_WITHOUT_INTEGER_CASTS.items():
        src = tmp_path / f"{name}.py"
        src.write_text("import tessera\nimport tessera.language as tl\n\n@tessera.jit\ndef k(y):\n"
                       f"    o = tl.arange(0, 128)\n    {body}\n")
        proc = run_cli(["compile", str(src), "--kernel", "k", "--signature", sig, "--arch", "sm_90a"])
        assert proc.returncode == 0, (name, proc.stderr)
