"""libdevice's integer functions (popc, clz, brev, ffs, mulhi, hadd, rhadd), as Triton kernels of hashing
and bit-set code call them (`libdevice.popc(a & b)`): interpreted for 32- and 64-bit, signed and
unsigned operands against Python's integers, compiled to PTX for sm_90a."""
import subprocess

import numpy as np
import pytest

from conftest import PTXAS

import tessera
import tessera.language as tl
from tessera.language.extra import libdevice

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")


@tessera.jit(interpret=True)
def int_functions_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(out_ptr + 0 * BLOCK + offs, libdevice.popc(x).to(x.dtype))
    tl.store(out_ptr + 1 * BLOCK + offs, libdevice.clz(x).to(x.dtype))
    tl.store(out_ptr + 2 * BLOCK + offs, libdevice.brev(x))
    tl.store(out_ptr + 3 * BLOCK + offs, libdevice.ffs(x).to(x.dtype))
    tl.store(out_ptr + 4 * BLOCK + offs, libdevice.mulhi(x, y))
    tl.store(out_ptr + 5 * BLOCK + offs, libdevice.hadd(x, y))
    tl.store(out_ptr + 6 * BLOCK + offs, libdevice.rhadd(x, y))


def _expected(xi, yi, width):
    mask = (1 << width) - 1
    u = xi & mask
    return [bin(u).count("1"), width - u.bit_length(), int(format(u, f"0{width}b")[::-1], 2),
            0 if u == 0 else (u & -u).bit_length(), (xi * yi) >> width, (xi + yi) >> 1, (xi + yi + 1) >> 1]


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32, np.uint64])
def test_integer_libdevice_functions(dtype):
    info = np.iinfo(dtype)
    width = info.bits
    rng = np.random.default_rng(width)
    x = rng.integers(info.min, info.max, 16, dtype=dtype, endpoint=True)
    y = rng.integers(info.min, info.max, 16, dtype=dtype, endpoint=True)
    x[:4] = [0, info.max, info.min, 1]
    y[4] = info.min
    out = np.zeros(7 * 16, dtype)
    int_functions_kernel[(1,)](x, y, out, BLOCK=16)
    out = out.reshape(7, 16)
    mask = (1 << width) - 1
    for i in range(16):
        want = _expected(int(x[i]), int(y[i]), width)
        got = [int(v) & mask for v in out[:, i]]
        assert got == [w & mask for w in want], (i, int(x[i]), int(y[i]))


def test_integer_libdevice_functions_compile_for_the_gpu(tmp_path):
    for sig in ("*i32,*i32,*i32", "*u64,*u64,*u64"):
        k = tessera.compile(int_functions_kernel, signature=sig, constexprs={"BLOCK": 256}, target="sm_90a")
        (tmp_path / "k.ptx").write_text(k.asm["ptx"])
        subprocess.run([str(PTXAS), "-arch=sm_90a", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")],
                       check=True)


@tessera.jit(interpret=True)
def popc_of_floats_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, libdevice.popc(tl.load(x_ptr + offs)).to(tl.float32))


def test_popc_of_floats_is_one_clear_error():
    with pytest.raises(tessera.CompilationError, match="popc needs 32- or 64-bit integers"):
        popc_of_floats_kernel[(1,)](np.zeros(4, np.float32), BLOCK=4)
