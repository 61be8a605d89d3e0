"""tl.rand / randn / randint / randint4x / rand4x / randn4x: Triton's Philox
4x32-10 (its constants, seed split and offset conventions) compiled from the
language prelude; i32 and i64 seeds, i32 and i64 offsets."""
import pytest

from lang_support import ARCHS, compile_and_assemble, compile_kernel


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("sig", ["*fp32,*u32,i32,i32", "*fp32,*u64,i64,i32"])
def test_random_assembles(tmp_path, arch, sig):
    compile_and_assemble(tmp_path, "random_ops.py", "rand_kernel", sig, {"BLOCK": 256}, arch)


def test_philox_constants_and_rounds():
    ir = compile_kernel("random_ops.py", "rand_kernel", "*fp32,*u32,i32,i32", {"BLOCK": 128}, emit="ir")
    for constant in [0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85]:
        assert f"value = {constant}" in ir or f"value = {constant - 2**32}" in ir, hex(constant)
    assert "value = 4.6566127342e-10" in ir  # uint_to_uniform_float's scale
    assert ir.count("umulhi") >= 2 * 10  # ten rounds, two per round


def test_random_via_tl_random_module(tmp_path):
    src = tmp_path / "k.py"
    src.write_text("import tessera\nimport tessera.language as tl\n\n@tessera.jit\ndef k(out, seed):\n"
                   "    offs = tl.arange(0, 128)\n    tl.store(out + offs, tl.random.rand(seed, offs))\n")
    from conftest import run_cli
    proc = run_cli(["compile", str(src), "--kernel", "k", "--signature", "*fp32,i32", "--emit", "ir"])
    assert proc.returncode == 0, proc.stderr
