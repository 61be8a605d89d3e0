"""tl.map_elementwise (tests/python/lang_kernels/map_elementwise.py): the @jit scalar function
inlined once into a map_elementwise op whose `if`s and loops run per element. Interpreted against
numpy (Triton's test_map_elementwise, _multiple_outputs and _pack, a data-dependent branch that
must not run the other side, a data-dependent loop), compiled through both back-ends and ptxas.
The GPU runs them in tests/gpu/test_launch_misc.py."""
import importlib.util
import pathlib

import numpy as np
import pytest

import tessera
from lang_support import ARCHS, compile_and_assemble, compile_kernel

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")

_spec = importlib.util.spec_from_file_location(
    "map_elementwise", pathlib.Path(__file__).parent / "lang_kernels" / "map_elementwise.py")
kernels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernels)


def interpreted(kernel):
    kernel.interpret = True
    return kernel


def test_compare_with_a_data_dependent_if():
    rs = np.random.RandomState(17)
    x = rs.randint(-4, 4, size=128).astype(np.int32)
    y = rs.randint(-4, 4, size=128).astype(np.int32)
    z = np.full(128, 7, np.int32)
    interpreted(kernels.compare_kernel)[(1,)](x, y, z, BLOCK=128)
    np.testing.assert_array_equal(z, (x > y).astype(np.int32) - (y > x).astype(np.int32))
    assert set(z) == {-1, 0, 1}


def test_multiple_outputs():
    rs = np.random.RandomState(17)
    a = rs.randint(0, 2**32 - 1, size=512, dtype=np.uint64).astype(np.uint32)
    b = rs.randint(1, 2**32 - 1, size=512, dtype=np.uint64).astype(np.uint32)
    c, d = np.zeros_like(a), np.zeros_like(a)
    interpreted(kernels.divmod_kernel)[(1,)](a, b, c, d, BLOCK=512)
    np.testing.assert_array_equal(c, a // b)
    np.testing.assert_array_equal(d, a % b)


def test_pack_two():
    rs = np.random.RandomState(17)
    a = rs.randint(0, 2**32 - 1, size=512, dtype=np.uint64).astype(np.uint32)
    b = rs.randint(1, 1000, size=512).astype(np.uint32)
    c, d = np.zeros_like(a), np.zeros_like(a)
    interpreted(kernels.divmod_pack_kernel)[(1,)](a, b, c, d, BLOCK=512)
    np.testing.assert_array_equal(c, a // b)
    np.testing.assert_array_equal(d, a % b)


def test_pack_groups_consecutive_elements():
    a = np.arange(16, dtype=np.int32) * 3
    c = np.zeros_like(a)
    interpreted(kernels.pair_sum_kernel)[(1,)](a, c, BLOCK=16)
    pairs = a.reshape(8, 2).sum(axis=1)
    np.testing.assert_array_equal(c, np.repeat(pairs, 2))


def test_only_the_taken_side_runs_and_scalars_broadcast():
    rs = np.random.RandomState(5)
    x = rs.randn(8, 16).astype(np.float32)
    z = np.zeros_like(x)
    interpreted(kernels.safe_log_kernel)[(1,)](x, z, FLOOR=-100.0, M=8, N=16)
    want = np.where(x > 0, np.log(np.where(x > 0, x, 1.0).astype(np.float64)), -100.0)
    np.testing.assert_allclose(z, want, rtol=1e-6)
    assert np.isfinite(z).all()


def test_a_data_dependent_loop_per_element():
    x = np.arange(1, 65, dtype=np.int32)
    z = np.zeros_like(x)
    interpreted(kernels.collatz_kernel)[(1,)](x, z, BLOCK=64)

    def steps(n):
        s = 0
        while n != 1:
            n = n // 2 if n % 2 == 0 else 3 * n + 1
            s += 1
        return s
    np.testing.assert_array_equal(z, [steps(int(n)) for n in x])


CASES = [
    ("compare_kernel", "*i32,*i32,*i32", {"BLOCK": 128}),
    ("divmod_kernel", "*u32,*u32,*u32,*u32", {"BLOCK": 512}),
    ("divmod_pack_kernel", "*u32,*u32,*u32,*u32", {"BLOCK": 512}),
    ("pair_sum_kernel", "*i32,*i32", {"BLOCK": 16}),
    ("safe_log_kernel", "*fp32,*fp32", {"FLOOR": -100.0, "M": 8, "N": 16}),
    ("collatz_kernel", "*i32,*i32", {"BLOCK": 64}),
    ("lookup_kernel", "*i32,*i32,*i32", {"BLOCK": 64}),
]


@pytest.mark.parametrize("backend", ["llvm", "nvrtc"])
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("kernel, signature, constexprs", CASES, ids=[c[0] for c in CASES])
def test_assembles(tmp_path, kernel, signature, constexprs, arch, backend):
    compile_and_assemble(tmp_path, "map_elementwise.py", kernel, signature, constexprs, arch,
                         extra=["--backend", backend])


def test_ir_has_one_op_with_the_branches_in_its_region():
    ir = compile_kernel("map_elementwise.py", *CASES[0], emit="ir-opt")
    assert ir.count("= map_elementwise %") == 1, ir
    assert " if " in ir or "= if " in ir, ir
    assert "select" not in ir, ir  # the if stays a branch
    packed = compile_kernel("map_elementwise.py", *CASES[2], emit="ir")
    assert "pack = 2" in packed, packed


def test_the_branch_is_a_branch_in_the_ptx():
    # Per element, only the taken side runs: the PTX branches around the log.
    ptx = compile_kernel("map_elementwise.py", *CASES[4])
    assert "lg2.approx" in ptx and "@%p" in ptx and "bra" in ptx, ptx


def test_an_unused_pure_map_is_removed():
    assert "map_elementwise" not in compile_kernel("map_elementwise.py", "unused_map_kernel", "*i32,*i32",
                                                   {"BLOCK": 16}, emit="ir-opt")


def test_loads_per_element():
    table = np.arange(100, dtype=np.int32) * 7
    i = np.random.RandomState(2).randint(-3, 100, size=64).astype(np.int32)
    z = np.full(64, -5, np.int32)
    interpreted(kernels.lookup_kernel)[(1,)](table, i, z, BLOCK=64)
    np.testing.assert_array_equal(z, np.where(i >= 0, table[np.maximum(i, 0)] * 2, 0))
