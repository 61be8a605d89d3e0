"""Random kernels from tests/gpu/kernel_generator.py on the CPU (CI): each one
compiles to PTX that ptxas accepts, and interprets without error, agreeing
with a numpy float32 reference. The GPU half (interpreter vs GPU) is
tests/gpu/test_differential.py."""
import subprocess
import sys

import numpy as np
import pytest

from conftest import PTXAS, ROOT

sys.path.insert(0, str(ROOT / "tests" / "gpu"))

import tessera  # noqa: E402
import kernel_generator as gen  # noqa: E402

SEEDS = list(range(48))


def test_the_generator_is_deterministic_and_varied():
    assert gen.generate(5).source == gen.generate(5).source
    kinds = {(gen.generate(s).kind, gen.generate(s).dtype) for s in SEEDS}
    assert kinds == {("elementwise", "fp32"), ("reduce", "fp32"), ("reduce", "fp16")}
    exprs = " ".join(gen.generate(s).expr for s in SEEDS)
    for piece in ("+", "-", "*", "/", "tl.maximum", "tl.minimum", "tl.where", "tl.exp", "tl.abs", ".to(tl."):
        assert piece in exprs, piece


@pytest.mark.parametrize("seed", SEEDS)
def test_generated_kernel_compiles_ptxas_and_interprets(seed, tmp_path):
    spec = gen.generate(seed)
    kernel = getattr(gen.load(spec, tmp_path), spec.name)
    args, grid, meta = gen.make_inputs(spec)
    k = tessera.compile(kernel, signature=spec.signature, constexprs=meta, target="sm_90a")
    ptx = k.asm["ptx"]
    assert f".entry {spec.name}" in ptx
    if PTXAS.exists():
        (tmp_path / "k.ptx").write_text(ptx)
        proc = subprocess.run([str(PTXAS), "-arch=sm_90a", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, f"ptxas rejected {spec.name}:\n{proc.stderr}\n{spec.source}"
    ik = tessera.jit(kernel.fn, interpret=True)
    ik[grid](*args, **meta)
    out = args[2]
    err = gen.rel_err(out.astype(np.float32), gen.reference(spec, args))
    assert err <= max(gen.tolerance(spec), 1e-5 if spec.dtype == "fp32" else 2e-3), \
        f"{spec.name}: interpreter vs numpy relative error {err:.3e}\n{spec.source}"
