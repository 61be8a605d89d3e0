"""break / continue in for and while loops, early return in @jit helpers and
kernels (`if pid >= n: return`), tl.range(..., num_stages=): the specialiser
turns them into structured IR (a loop with break becomes a while carrying a
flag; the code after an exit runs inside the branches that do not exit)."""
import pytest

from lang_support import ARCHS, compile_and_assemble, compile_kernel

SIG = "*fp32,*fp32,i32"


@pytest.mark.parametrize("arch", ARCHS)
def test_control_flow_assembles(tmp_path, arch):
    compile_and_assemble(tmp_path, "control_flow.py", "cf_kernel", SIG, {"BLOCK": 128}, arch)


def test_loops_with_break_become_while_loops():
    ir = compile_kernel("control_flow.py", "cf_kernel", SIG, {"BLOCK": 128}, emit="ir")
    # range(0, n) with break, `while True` with break, `while k < n` with continue only,
    # tl.range with a return inside: all four loops are while loops.
    assert ir.count("= while ") == 4
    assert ir.count(" = for ") + ir.count("  for ") == 0


def test_continue_alone_keeps_a_for_loop(tmp_path):
    src = tmp_path / "k.py"
    src.write_text(
        "import tessera\nimport tessera.language as tl\n\n"
        "@tessera.jit\ndef k(x_ptr, n):\n"
        "    acc = 0.0\n"
        "    for i in range(0, n):\n"
        "        if i % 2 == 0:\n"
        "            continue\n"
        "        acc += tl.load(x_ptr + i)\n"
        "    tl.store(x_ptr, acc)\n")
    from conftest import run_cli
    proc = run_cli(["compile", str(src), "--kernel", "k", "--signature", "*fp32,i32", "--emit", "ir"])
    assert proc.returncode == 0, proc.stderr
    assert "for " in proc.stdout and "while" not in proc.stdout


def test_early_return_in_kernel_guards_the_rest():
    ir = compile_kernel("control_flow.py", "cf_kernel", SIG, {"BLOCK": 128}, emit="ir")
    first_if = ir.index("= if ")
    store = ir.index("store ")
    assert first_if < store  # the store is inside the else-branch of `if pid >= n: return`


def test_helpers_with_early_returns_and_tuples():
    ir = compile_kernel("control_flow.py", "cf_kernel", SIG, {"BLOCK": 128}, emit="ir")
    assert "= neg " in ir  # pair(): `return -x, 1` on one path


def test_static_range_break_unrolls_up_to_it(tmp_path):
    src = tmp_path / "k.py"
    src.write_text(
        "import tessera\nimport tessera.language as tl\n\n"
        "@tessera.jit\ndef k(x_ptr):\n"
        "    for s in tl.static_range(8):\n"
        "        if s == 3:\n"
        "            break\n"
        "        if s == 1:\n"
        "            continue\n"
        "        tl.store(x_ptr + s, 1.0)\n")
    from conftest import run_cli
    proc = run_cli(["compile", str(src), "--kernel", "k", "--signature", "*fp32", "--emit", "ir"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("store ") == 2  # s = 0 and 2
