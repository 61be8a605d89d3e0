"""float8e4nv / float8e5: loads, stores, constants and casts (cvt.*.e4m3x2 /
e5m2x2 on sm_90); before sm_90 conversions from fp8 are made from the bits and
conversions to fp8 are a clear error."""
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
