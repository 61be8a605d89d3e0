"""static_print (compile time), device_print / print (vprintf), device_assert
(only with --debug or TESSERA_DEBUG=1), assume, debug_barrier, pingpong_*."""
import pytest

from lang_support import ARCHS, assemble, compile_error, compile_kernel, run_env

SIG = "*fp32,i32"
ARGS = ["compile", "tests/python/lang_kernels/debug_ops.py", "--kernel", "debug_kernel", "--signature", SIG,
        "--constexpr", "BLOCK=128"]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("debug", [False, True])
def test_debug_ops_assemble(tmp_path, arch, debug):
    ptx = compile_kernel("debug_ops.py", "debug_kernel", SIG, {"BLOCK": 128}, arch,
                         extra=["--debug"] if debug else [])
    assemble(ptx, arch, tmp_path)
    assert "vprintf" in ptx
    assert ("__assertfail" in ptx) == debug


def test_debug_env_variable_turns_asserts_on():
    proc = run_env(ARGS, {"TESSERA_DEBUG": "1"})
    assert proc.returncode == 0 and "__assertfail" in proc.stdout
    proc = run_env(ARGS, {"TESSERA_DEBUG": "0"})
    assert proc.returncode == 0 and "__assertfail" not in proc.stdout


def test_static_print_prints_at_compile_time():
    proc = run_env(ARGS + ["--emit", "ir"], {})
    assert "x is a block of type <128xf32> 128" in proc.stderr


def test_debug_ops_in_ir():
    ir = compile_kernel("debug_ops.py", "debug_kernel", SIG, {"BLOCK": 128}, emit="ir-opt", extra=["--debug"])
    assert ir.count("print ") == 3 and 'prefix = "x"' in ir and "hex = 1" in ir
    assert ir.count("assert ") == 2 and "x must be non-negative" in ir
    assert "assume " in ir and "barrier" in ir


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("backend", ["llvm", "nvrtc"])
def test_pingpong_is_two_named_barriers_with_eight_warps(tmp_path, arch, backend):
    """tl.pingpong_*: warpgroup w waits on named barrier 1 + w (its 128 threads sync, the other
    warpgroup's 128 arrive: 256); start lets warpgroup 0 go first, end takes back the last pass."""
    ptx = compile_kernel("debug_ops.py", "pingpong_kernel", SIG, {"BLOCK": 256}, arch,
                         extra=["--num-warps", "8", "--backend", backend])
    assemble(ptx, arch, tmp_path)
    for text in ("bar.sync 1, 256", "bar.sync 2, 256", "bar.arrive 1, 256", "bar.arrive 2, 256"):
        assert text in ptx, text
    ir = compile_kernel("debug_ops.py", "pingpong_kernel", SIG, {"BLOCK": 256}, emit="ir",
                        extra=["--num-warps", "8"])
    for kind in ("start", "wait", "pass", "end"):
        assert f'barrier {{pingpong = "{kind}"}}' in ir, ir


def test_pingpong_without_two_warpgroups_is_nothing():
    ptx = compile_kernel("debug_ops.py", "pingpong_kernel", SIG, {"BLOCK": 256}, extra=["--num-warps", "4"])
    assert "bar.arrive" not in ptx and "256;" not in ptx


def test_pingpong_takes_no_arguments():
    assert "tl.pingpong_wait" in compile_error("debug_ops.py", "pingpong_with_argument", SIG, {"BLOCK": 256})
