"""tl.extra.cuda.smid() and globaltimer() (tests/python/lang_kernels/map_elementwise.py): one
mov from %smid / %globaltimer each, through both back-ends. smid is pure as in Triton (two reads
are one); a globaltimer read is kept where the kernel reads it (never merged, moved past the
loop or dropped). A language function passed as a constexpr (Triton's test_globaltimer passes
tl.extra.cuda.globaltimer) is called by its name. Interpreted: SM 0 and the host's monotonic
clock. The GPU runs them in tests/gpu/test_launch_misc.py."""
import importlib.util
import pathlib

import numpy as np
import pytest

import tessera
import tessera.language as tl
from lang_support import ARCHS, compile_and_assemble, compile_kernel

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")

_spec = importlib.util.spec_from_file_location(
    "map_elementwise", pathlib.Path(__file__).parent / "lang_kernels" / "map_elementwise.py")
kernels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernels)

TIMER = {"func": "tessera.language.extra.cuda.globaltimer"}


@pytest.mark.parametrize("backend", ["llvm", "nvrtc"])
@pytest.mark.parametrize("arch", ARCHS)
def test_smid_reads_the_register_once(tmp_path, arch, backend):
    ptx = compile_and_assemble(tmp_path, "map_elementwise.py", "smid_kernel", "*i32", {}, arch,
                               extra=["--backend", backend])
    assert ptx.count("%smid") == 1, ptx  # Triton's test_smid
    pure = compile_kernel("map_elementwise.py", "two_smids_kernel", "*i32", extra=["--backend", backend])
    assert pure.count("%smid") == 1, pure


@pytest.mark.parametrize("backend", ["llvm", "nvrtc"])
@pytest.mark.parametrize("arch", ARCHS)
def test_globaltimer_is_read_where_written(tmp_path, arch, backend):
    ptx = compile_and_assemble(tmp_path, "map_elementwise.py", "globaltimer_kernel", "*i64,*i64", TIMER, arch,
                               extra=["--backend", backend])
    assert ptx.count("%globaltimer") == 2, ptx  # Triton's test_globaltimer
    lines = ptx.splitlines()
    reads = [i for i, line in enumerate(lines) if "%globaltimer" in line]
    loop_stores = [i for i, line in enumerate(lines) if line.strip().startswith("st.global")]
    # The loop's stores lie between the two reads (neither was moved across the loop).
    assert reads[0] < min(loop_stores) and max(i for i in loop_stores if i < reads[1]) < reads[1], ptx
    three = compile_kernel("map_elementwise.py", "two_timers_kernel", "*i64", extra=["--backend", backend])
    assert three.count("%globaltimer") == 3, three  # neither merged nor dropped (one is unused)


@pytest.mark.parametrize("backend", ["llvm", "nvrtc"])
def test_gdc_wait_and_launch_dependents_are_griddepcontrol(tmp_path, backend):
    ptx = compile_and_assemble(tmp_path, "map_elementwise.py", "gdc_kernel", "*fp32,*fp32,i32", {"BLOCK": 128},
                               "sm_90a", extra=["--backend", backend])
    lines = [line.strip() for line in ptx.splitlines()]
    wait = next(i for i, line in enumerate(lines) if line.startswith("griddepcontrol.wait"))
    launch = next(i for i, line in enumerate(lines) if line.startswith("griddepcontrol.launch_dependents"))
    load = next(i for i, line in enumerate(lines) if "ld.global" in line)
    assert wait < load < launch, ptx  # the load waits for the previous grid; nothing moved across


def test_gdc_interpreted_does_nothing():
    x, out = np.arange(200, dtype=np.float32), np.zeros(200, np.float32)
    kernels.gdc_kernel.interpret = True
    kernels.gdc_kernel[(2,)](x, out, 200, BLOCK=128)
    np.testing.assert_array_equal(out, x + 1)


def test_ir_traits():
    ir = compile_kernel("map_elementwise.py", "two_smids_kernel", "*i32", emit="ir-opt")
    assert ir.count("= smid") == 1, ir
    ir = compile_kernel("map_elementwise.py", "two_timers_kernel", "*i64", emit="ir-opt")
    assert ir.count("= globaltimer") == 3, ir


def test_interpreted():
    out = np.full(8, 5, np.int32)
    kernels.smid_kernel.interpret = True
    kernels.smid_kernel[(8,)](out)
    np.testing.assert_array_equal(out, 0)
    out1, out2 = np.zeros(128, np.int64), np.zeros(2, np.int64)
    kernels.globaltimer_kernel.interpret = True
    kernels.globaltimer_kernel[(1,)](out1, out2, tl.extra.cuda.globaltimer)  # a language function as a constexpr
    np.testing.assert_array_equal(out1, 10000)
    assert out2[1] - out2[0] > 0 and out2[0] > 0


def test_language_function_as_a_constexpr_compiles():
    kernels.globaltimer_kernel.interpret = False
    k = kernels.globaltimer_kernel.warmup(_Ptr(np.int64), _Ptr(np.int64),
                                          tl.extra.cuda.globaltimer, grid=(1,), target="sm_90a")
    assert k.asm["ptx"].count("%globaltimer") == 2


def test_host_names():
    assert callable(tl.extra.cuda.smid) and callable(tl.extra.cuda.globaltimer)
    with pytest.raises(RuntimeError, match="can only be called inside a @tessera.jit kernel"):
        tl.extra.cuda.globaltimer()


class _Ptr:
    """A device pointer look-alike (__cuda_array_interface__) for warmup without a GPU."""

    def __init__(self, dtype):
        self.__cuda_array_interface__ = {"data": (4096, False), "typestr": np.dtype(dtype).str, "shape": (1,),
                                         "version": 3}
