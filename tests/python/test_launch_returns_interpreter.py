"""What an interpreted launch returns (no GPU): the InterpretedKernel of the specialisation
that ran, as a GPU launch returns its CompiledKernel (tests/fake_driver/test_launch_returns.py):
the same object for every launch of one specialisation, another for another; launched again
with the runtime arguments; its compiled form's attributes (asm, metadata, n_regs, ...)
compile the same specialisation for sm_90a on first use. Also a CompiledKernel's n_regs and
n_spills without a driver (ptxas -v)."""
import re
import sys

import numpy as np
import pytest

from conftest import PTXAS, ROOT

sys.path.insert(0, str(ROOT))

import tessera  # noqa: E402
import tessera.language as tl  # noqa: E402
from tessera.jit import InterpretedKernel  # noqa: E402

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")


@tessera.jit(interpret=True)
def scale_kernel(x_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * alpha, mask=mask)


@tessera.autotune(configs=[tessera.Config({"BLOCK": 32}, num_warps=2), tessera.Config({"BLOCK": 64}, num_warps=4)],
                  key=["n"])
@tessera.jit(interpret=True)
def tuned_scale(x_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * alpha, mask=mask)


def arrays(n=100):
    x = np.arange(n, dtype=np.float32)
    return x, np.zeros_like(x)


def test_interpreted_launch_returns_its_specialisation():
    x, out = arrays()
    pgm = scale_kernel[(4,)](x, out, 100, 2.0, BLOCK=32)
    np.testing.assert_array_equal(out, x * 2)
    assert isinstance(pgm, InterpretedKernel) and pgm.name == "scale_kernel"
    assert pgm.constexprs == {"BLOCK": 32} and pgm.signature == "*fp32:16,*fp32:16,i32,fp32"
    assert scale_kernel[(4,)](x, out, 100, 3.0, BLOCK=32) is pgm  # same specialisation
    assert scale_kernel.run(x, out, 100, 3.0, BLOCK=32, grid=(4,), warmup=False) is pgm
    other = scale_kernel[(2,)](x, out, 100, 3.0, BLOCK=64)
    assert other is not pgm and other.constexprs == {"BLOCK": 64}
    assert scale_kernel[(4,)](x, out, 100, 3.0, BLOCK=32, num_warps=8) is not pgm
    assert scale_kernel[(4,)](x, out, 96, 3.0, BLOCK=32) is not pgm  # n = 96: i32:16, not i32
    # Launched again with the runtime arguments (the constexprs are bound).
    out[:] = 0
    pgm[(4,)](x, out, 100, 5.0)
    np.testing.assert_array_equal(out, x * 5)


def test_interpreted_kernel_compiles_for_its_attributes():
    x, out = arrays()
    pgm = scale_kernel[(4,)](x, out, 100, 2.0, BLOCK=32)
    assert ".visible .entry scale_kernel(" in pgm.asm["ptx"]
    assert "scale_kernel" in pgm.asm["ir"]
    assert pgm.metadata.num_warps == 4 and pgm.metadata.shared == 0 and pgm.metadata.target == "sm_90a"
    assert pgm.packed_metadata == (4, 1, 0)
    assert pgm.metadata.constexprs == {"BLOCK": 32}
    assert pgm.compiled() is pgm.compiled()  # compiled once


@pytest.mark.skipif(not PTXAS.exists(), reason="no ptxas")
def test_n_regs_without_a_driver_come_from_ptxas():
    x, out = arrays()
    pgm = scale_kernel[(4,)](x, out, 100, 2.0, BLOCK=32)
    regs, spills = pgm.n_regs, pgm.n_spills
    assert 0 < regs <= 255 and spills == 0
    assert pgm.asm["cubin"][:4] == b"\x7fELF"
    # What `ptxas -v` itself says for that PTX.
    k = tessera.compile(scale_kernel, signature="*fp32:16,*fp32:16,i32,fp32", constexprs={"BLOCK": 32})
    assert k.n_regs == regs


def test_autotuned_interpreted_kernel_returns_the_config_that_ran():
    x, out = arrays()
    pgm = tuned_scale[(4,)](x, out, 100, 2.0)
    np.testing.assert_array_equal(out, x * 2)
    assert pgm.constexprs == {"BLOCK": 32} and pgm.num_warps == 2  # the first config (no host timings)
    assert tuned_scale[(4,)](x, out, 100, 3.0) is pgm


def test_compatibility_mode_interpreted_launch(tmp_path, monkeypatch):
    import importlib
    import tessera.compat
    monkeypatch.setenv("TESSERA_INTERPRET", "1")
    (tmp_path / "triton_style_interp_returns.py").write_text(
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
        "def twice(x_ptr, n, BLOCK: tl.constexpr):\n"
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)\n")
    tessera.compat.install()
    sys.path.insert(0, str(tmp_path))
    try:
        module = importlib.import_module("triton_style_interp_returns")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("triton_style_interp_returns", None)
        tessera.compat.uninstall()
    x = np.ones(50, np.float32)
    pgm = module.twice[(1,)](x, 50, BLOCK=64)
    np.testing.assert_array_equal(x, 2)
    assert pgm.name == "twice" and module.twice[(1,)](x, 50, BLOCK=64) is pgm
    assert re.search(r"\.entry twice\(", pgm.asm["ptx"])
