"""What a launch returns: the CompiledKernel of the specialisation it ran, as Triton's
JITFunction.run returns its CompiledKernel (`pgm = kernel[grid](...)`, then `pgm.asm["ptx"]`,
`pgm.n_regs`, `pgm.metadata.shared`, ...), for every launch path: kernel[grid] (the C fast
path), kernel.run, the KernelLauncher, autotuned and heuristics-wrapped kernels, kernels given
@jit functions as constexprs, and the Triton compatibility mode. One object per
specialisation, the same on every launch (and from warmup), made once by the C++ cache."""
import re
import sys

import pytest
import torch

import tessera
import kernels as K

P = 0x7F0000001000


def tensors(n, dtype=torch.float32, step=4096):
    return [torch.Tensor(P + step * i, dtype) for i in range(n)]


def test_kernel_grid_returns_the_compiled_kernel_with_tritons_attributes(fake):
    t = tensors(4)
    pgm = K.noop6[(3,)](*t, 1000, 16)
    assert isinstance(pgm, tessera.CompiledKernel)
    assert fake.last()["kernel"] == "noop6"  # it launched
    assert pgm.name == "noop6"
    assert ".visible .entry noop6(" in pgm.asm["ptx"]
    for stage in ("ir", "ir-opt", "llir"):
        assert "noop6" in pgm.asm[stage], stage
    assert pgm.asm["cubin"]  # the fake driver's "cubin" (TESSERA_JIT=link): bytes
    assert isinstance(pgm.asm["cubin"], bytes) and pgm.kernel == pgm.asm["cubin"]
    md = pgm.metadata
    assert (md.num_warps, md.num_stages, md.num_ctas, md.warp_size, md.shared) == (4, 3, 1, 32, 0)
    assert md.name == "noop6" and md.maxnreg is None and md.enable_fp_fusion is True
    assert md.target == "sm_90a" and (md.target.backend, md.target.arch, md.target.warp_size) == ("cuda", 90, 32)
    assert md.ptx_version == int("".join(re.search(r"\.version (\d+)\.(\d+)", pgm.asm["ptx"]).groups()))
    assert md.signature == "*fp32:16,*fp32:16,*fp32:16,*fp32:16,i32,i32:16"
    assert re.fullmatch(r"[0-9a-f]{64}", md.hash) and pgm.hash == md.hash
    assert pgm.packed_metadata == (4, 1, 0)
    # The loaded function's attributes (the fake driver reports 32 registers, no local memory).
    assert (pgm.n_regs, pgm.n_spills, pgm.n_max_threads) == (32, 0, 1024)


def test_the_same_specialisation_returns_the_same_object(fake):
    t = tensors(4)
    first = K.noop6[(1,)](*t, 1000, 16)
    again = [K.noop6[(g,)](*t, 1000 + 16 * g, 32) for g in range(1, 5)]  # other values, same key
    assert all(p is first for p in again)
    assert K.noop6.run(*t, 1000, 16, grid=(2,), warmup=False) is first
    assert K.noop6._fast((2,), *t, 1000, 16) is first  # the KernelLauncher itself
    assert K.noop6[lambda meta: (1,)](*t, 1000, 16) is first  # a callable grid
    assert K.noop6[(1,)](*t, n=1000, m=16) is first  # keywords: bound, same key
    before = fake.count
    assert K.noop6[(0,)](*t, 1000, 16) is first  # a grid with a 0 launches nothing, but says what it would run
    assert fake.count == before
    assert K.noop6.warmup(*t, 1000, 16, grid=(1,)) is first


def test_another_specialisation_returns_another_object(fake):
    t = tensors(4)
    base = K.noop6[(1,)](*t, 1000, 16)
    odd = K.noop6[(1,)](*t, 1000, 17)  # i32 instead of i32:16
    warps = K.noop6[(1,)](*t, 1000, 16, num_warps=8)
    assert odd is not base and warps is not base and odd is not warps
    assert odd.metadata.signature.endswith(",i32") and base.metadata.signature.endswith(",i32:16")
    assert warps.metadata.num_warps == 8 and fake.last()["block"] == (256, 1, 1)
    assert warps.packed_metadata == (8, 1, 0)
    assert K.noop6[(1,)](*t, 1000, 17) is odd  # and each stays itself
    assert K.noop0[(1,)]() is not base


def test_a_launch_allocates_no_object(fake):
    t = tensors(4)
    pgm = K.noop6[(1,)](*t, 1000, 16)
    refs = sys.getrefcount(pgm)
    for _ in range(1000):
        K.noop6[(1,)](*t, 1000, 16)  # the returned reference is dropped: no leak, no new object
    assert sys.getrefcount(pgm) == refs
    held = [K.noop6[(1,)](*t, 1000, 16) for _ in range(10)]
    assert sys.getrefcount(pgm) == refs + 10 and all(p is pgm for p in held)


def test_clear_cache_makes_a_new_object(fake):
    t = tensors(4)
    old = K.noop6[(1,)](*t, 1000, 16)
    K.noop6._handle.clear_cache()
    new = K.noop6[(1,)](*t, 1000, 16)
    assert new is not old and new.asm["ptx"] == old.asm["ptx"]
    assert old.n_regs == 32  # the old object still works


def test_constexprs_and_repr_name(fake):
    x, y, out = tensors(3)
    pgm = K.add_kernel[(2,)](x, y, out, 100, BLOCK_SIZE=128)
    assert pgm.metadata.constexprs == {"BLOCK_SIZE": 128}
    assert K.add_kernel[(2,)](x, y, out, 100, BLOCK_SIZE=256) is not pgm

    @tessera.jit(repr=lambda spec: f"add_{spec.constants['BLOCK_SIZE']}")
    def named_add(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tessera.language.constexpr):
        pass

    named = named_add[(1,)](x, y, out, 100, BLOCK_SIZE=64)
    assert named.name == "add_64" and named_add.warmup(x, y, out, 100, BLOCK_SIZE=64, grid=(1,)) is named


def test_autotuned_kernel_returns_the_winners_compiled_kernel(fake):
    x, y, out = tensors(3)
    pgm = K.tuned_add[lambda meta: (tessera.cdiv(1000, meta["BLOCK_SIZE"]),)](x, y, out, 1000)
    best = K.tuned_add.best_config
    assert isinstance(pgm, tessera.CompiledKernel)
    assert pgm.metadata.num_warps == best.num_warps
    assert pgm.metadata.constexprs == {"BLOCK_SIZE": best.kwargs["BLOCK_SIZE"]}
    assert fake.last()["block"] == (32 * best.num_warps, 1, 1)
    assert K.tuned_add.run(x, y, out, 1000, grid=(8,)) is pgm  # Autotuner.run returns the inner run's


def test_heuristics_wrapped_kernel_returns_its_compiled_kernel(fake):
    x, y, out = tensors(3)
    small = K.heuristic_add[(4,)](x, y, out, 100)
    large = K.heuristic_add[(4,)](x, y, out, 5000)
    assert small.metadata.constexprs == {"BLOCK_SIZE": 64}
    assert large.metadata.constexprs == {"BLOCK_SIZE": 256}
    assert K.heuristic_add[(1,)](x, y, out, 10) is small


def test_kernel_given_a_jit_function_returns_the_composed_kernels(fake):
    x, out = tensors(2)
    pgm = K.apply_kernel[(2,)](x, out, 100, FN=K.double, BLOCK=64)
    assert isinstance(pgm, tessera.CompiledKernel) and pgm.name == "apply_kernel"
    assert K.apply_kernel[(3,)](x, out, 100, FN=K.double, BLOCK=64) is pgm
    assert K.apply_kernel.run(x, out, 100, FN=K.double, BLOCK=64, grid=(1,)) is pgm


def test_compatibility_mode_launch_returns_the_compiled_kernel(fake, tmp_path):
    import importlib
    import tessera.compat
    (tmp_path / "triton_style_returns.py").write_text(
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
        "def scale(x_ptr, n, BLOCK: tl.constexpr):\n"
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)\n")
    tessera.compat.install()
    sys.path.insert(0, str(tmp_path))
    try:
        module = importlib.import_module("triton_style_returns")
    finally:
        sys.path.remove(str(tmp_path))
        tessera.compat.uninstall()
    (x,) = tensors(1)
    pgm = module.scale[(4,)](x, 1000, BLOCK=256)
    assert module.triton.__version__ == "3.6.0"
    assert ".visible .entry scale(" in pgm.asm["ptx"] and pgm.metadata.num_warps == 4
    assert pgm.n_regs == 32 and pgm.metadata.shared == 0
    assert module.scale.run(x, 1000, BLOCK=256, grid=(4,), warmup=False) is pgm
