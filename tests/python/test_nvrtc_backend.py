"""The NVRTC back-end (docs/nvrtc.md): every bundled kernel compiles through
generated CUDA C++ and NVRTC to PTX that ptxas accepts, on every target; the
back-end is selected by --backend, TESSERA_BACKEND, @tessera.jit(backend=...)
and tessera.compile(backend=...), and is part of the disk cache key; its
errors (NVRTC missing, a bad back-end name) are one clear message.

NVRTC must be there (scripts/setup.sh makes sure of it): a missing NVRTC fails
these tests rather than skipping them."""
import os
import subprocess
import sys

import pytest

from conftest import PTXAS, ROOT, run_cli
from test_kernels_ptx import compile_args, manifest_entries

ARCHS = ["sm_80", "sm_90", "sm_90a"]


def run_env(args, **env):
    return subprocess.run([str(ROOT / "build" / "bin" / "tessera")] + list(args), cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env={**os.environ, **env})


def ptxas(ptx_path, arch, tmp_path):
    assert PTXAS.exists(), f"ptxas not found at {PTXAS}"
    proc = subprocess.run([str(PTXAS), f"-arch={arch}", str(ptx_path), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_nvrtc_is_available():
    import tessera
    status = tessera._C.nvrtc_status()
    assert status["available"], status["error"]
    assert status["version"][0] >= 12


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("entry", manifest_entries(), ids=lambda e: f"{e[1]}-{e[2]}")
def test_bundled_kernel_through_nvrtc_assembles_with_ptxas(entry, arch, tmp_path):
    ptx = tmp_path / "k.ptx"
    if "fp8" in entry[2] and "tensordesc" in entry[2] and arch == "sm_80":  # fp8 descriptors: one clear error
        proc = run_cli(compile_args(entry) + ["--arch", arch, "--backend", "nvrtc", "-o", str(ptx)])
        assert proc.returncode != 0 and "need sm_90 (this is sm_80)" in proc.stderr, proc.stderr
        return
    run_cli(compile_args(entry) + ["--arch", arch, "--backend", "nvrtc", "-o", str(ptx)], check=True)
    text = ptx.read_text()
    assert "NVVM" in text.split(".version")[0], "not NVRTC's PTX"
    assert f".target {arch}" in text
    assert f".entry {entry[1]}" in text
    ptxas(ptx, arch, tmp_path)


def test_aot_with_the_nvrtc_backend(tmp_path):
    proc = run_cli(["aot", "kernels/manifest.txt", "--backend", "nvrtc", "-o", str(tmp_path)], check=True)
    written = sorted(tmp_path.glob("*.ptx"))
    assert len(written) == len(manifest_entries())
    assert "(nvrtc back-end)" in proc.stdout
    for ptx in written:
        assert "NVVM" in ptx.read_text()[:400], ptx


def test_environment_selects_the_backend_and_option_overrides_it():
    args = compile_args(manifest_entries()[0])
    assert "NVVM" in run_env(args, TESSERA_BACKEND="nvrtc").stdout[:400]
    assert "NVVM" not in run_env(args + ["--backend", "llvm"], TESSERA_BACKEND="nvrtc").stdout[:400]
    assert "NVVM" not in run_env(args, TESSERA_BACKEND="").stdout[:400]


def test_emit_cuda_prints_the_kernel_with_either_backend():
    args = compile_args(manifest_entries()[0]) + ["--emit", "cuda"]
    for backend in ("llvm", "nvrtc"):
        out = run_cli(args + ["--backend", backend], check=True).stdout
        assert 'extern "C" __global__ void __launch_bounds__(128) add_kernel(' in out
        assert "asm volatile(" in out and "ld.global" in out


def test_emit_llvm_with_nvrtc_is_the_form_the_source_is_printed_from():
    args = compile_args(manifest_entries()[0])
    printed = run_cli(args + ["--backend", "nvrtc", "--emit", "llvm"], check=True).stdout
    optimised = run_cli(args + ["--emit", "llvm"], check=True).stdout
    assert "define ptx_kernel void @add_kernel" in printed
    assert printed != optimised  # not O3'd: NVRTC optimises


def test_shared_memory_is_extern_shared():
    entry = next(e for e in manifest_entries() if e[1] == "softmax_kernel")
    out = run_cli(compile_args(entry) + ["--emit", "cuda"], check=True).stdout
    # 1024: wgmma's swizzle atoms start aligned (compiler/codegen/SharedMemory.cpp)
    assert "extern __shared__ __align__(1024) unsigned char global_smem[];" in out
    assert "__syncthreads();" in out and "__shfl_xor_sync(" in out


def test_tensor_core_kernel_keeps_its_inline_ptx(tmp_path):
    entry = next(e for e in manifest_entries() if e[1] == "matmul_kernel")
    cuda = run_cli(compile_args(entry) + ["--emit", "cuda"], check=True).stdout
    assert "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16" in cuda  # sm_90a
    assert "wgmma.fence.sync.aligned" in cuda and "__cvta_generic_to_shared(" in cuda
    ptx = run_cli(compile_args(entry) + ["--backend", "nvrtc"], check=True).stdout
    assert "wgmma.mma_async" in ptx and "wgmma.wait_group" in ptx
    sm80 = [a if a != "sm_90a" else "sm_80" for a in compile_args(entry)]
    if "--arch" not in sm80:
        sm80 += ["--arch", "sm_80"]
    cuda = run_cli(sm80 + ["--emit", "cuda"], check=True).stdout
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in cuda
    assert "ldmatrix.sync.aligned" in cuda


def test_bad_backend_names_are_one_clear_error():
    args = compile_args(manifest_entries()[0])
    proc = run_cli(args + ["--backend", "gcc"])
    assert proc.returncode == 1
    assert "--backend must be llvm or nvrtc, got 'gcc'" in proc.stderr
    proc = run_env(args, TESSERA_BACKEND="ptxas")
    assert proc.returncode == 1
    assert "TESSERA_BACKEND must be 'llvm' or 'nvrtc', got 'ptxas'" in proc.stderr


def test_missing_nvrtc_is_one_clear_error(tmp_path):
    missing = tmp_path / "libnvrtc.so.13"
    proc = run_env(compile_args(manifest_entries()[0]) + ["--backend", "nvrtc"], TESSERA_NVRTC=str(missing))
    assert proc.returncode == 1
    assert "NVRTC (libnvrtc.so.13 or libnvrtc.so) could not be loaded" in proc.stderr
    assert str(missing) in proc.stderr
    assert proc.stderr.count("error:") == 1
    # The LLVM back-end does not need it.
    assert run_env(compile_args(manifest_entries()[0]), TESSERA_NVRTC=str(missing)).returncode == 0


def test_nvrtc_compile_errors_name_the_generated_line(tmp_path):
    # A broken source straight into the runtime's NVRTC call (the printer never writes one).
    code = ("import tessera\n"
            "try:\n"
            "    tessera._C.nvrtc_compile('extern \"C\" __global__ void k(int *p) {\\n  p[0] = nope;\\n}\\n',"
            " 'k.cu', 'sm_90a')\n"
            "except RuntimeError as e:\n"
            "    print(e)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "python")})
    assert "NVRTC back-end: NVRTC" in proc.stdout, proc.stdout + proc.stderr
    assert "k.cu(2)" in proc.stdout and "nope" in proc.stdout
    assert "p[0] = nope;" in proc.stdout


KERNEL = '''
import tessera
import tessera.language as tl


@tessera.jit(backend="nvrtc")
def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


@tessera.jit
def plain(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)
'''


@pytest.fixture
def kernels(tmp_path, monkeypatch):
    path = tmp_path / "nvrtc_kernels.py"
    path.write_text(KERNEL)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TESSERA_BACKEND", raising=False)
    import importlib
    import nvrtc_kernels
    return importlib.reload(nvrtc_kernels)


def test_python_jit_and_compile_options(kernels):
    import tessera
    sig, consts = "*fp32:16,*fp32:16,i32", {"BLOCK": 256}
    k = tessera.compile(kernels.scale, signature=sig, constexprs=consts)
    assert k.backend == "nvrtc" and k.metadata.backend == "nvrtc"
    assert 'extern "C" __global__' in k.asm["cuda"] and "NVVM" in k.asm["ptx"][:400]
    k = tessera.compile(kernels.scale, signature=sig, constexprs=consts, backend="llvm")
    assert k.backend == "llvm" and k.asm["cuda"] == "" and "NVVM" not in k.asm["ptx"][:400]
    k = tessera.compile(kernels.plain, signature=sig, constexprs=consts)
    assert k.backend == "llvm"
    k = tessera.compile(kernels.plain, signature=sig, constexprs=consts, backend="nvrtc")
    assert k.backend == "nvrtc"
    with pytest.raises(ValueError, match="backend must be one of llvm, nvrtc"):
        tessera.compile(kernels.plain, signature=sig, constexprs=consts, backend="clang")
    with pytest.raises(ValueError, match="backend must be one of llvm, nvrtc"):
        tessera.jit(backend="clang")(kernels.plain.fn)


def test_a_kernels_backend_can_change(kernels):
    plain = kernels.plain
    assert plain.backend == ""
    sig = "*fp32:16,*fp32:16,i32"
    first = plain._get_handle()
    assert first.backend == ""
    plain.backend = "nvrtc"
    assert plain._handle.backend == "nvrtc"
    k = __import__("tessera").compile(plain, signature=sig, constexprs={"BLOCK": 128})
    assert k.backend == "nvrtc"
    with pytest.raises(ValueError):
        plain.backend = "x"


def test_environment_and_cache_key(kernels, monkeypatch):
    import tessera
    sig, consts = "*fp32:16,*fp32:16,i32", {"BLOCK": 512}
    monkeypatch.setenv("TESSERA_BACKEND", "nvrtc")
    assert tessera._C.default_backend() == "nvrtc"
    first = tessera.compile(kernels.plain, signature=sig, constexprs=consts)
    assert first.backend == "nvrtc" and not first.metadata.__dict__.get("from_cache", False)
    again = tessera.compile(kernels.plain, signature=sig, constexprs=consts)
    assert again._h.from_cache and again.backend == "nvrtc" and again.asm["ptx"] == first.asm["ptx"]
    monkeypatch.setenv("TESSERA_BACKEND", "llvm")
    other = tessera.compile(kernels.plain, signature=sig, constexprs=consts)
    assert not other._h.from_cache, "the back-end must be part of the cache key"
    assert other.backend == "llvm" and other.asm["ptx"] != first.asm["ptx"]
    # The cache hit recompiles for the stages it does not keep, with the same back-end.
    assert 'extern "C" __global__' in again.asm["cuda"]


def test_bundled_kernel_variants_per_backend():
    # tessera.kernels.softmax(..., backend=...) and the benchmarks use these copies.
    from tessera.kernels import _files
    module = _files.load("softmax")
    k = module.softmax_kernel
    assert _files.with_backend(k, None) is k
    nv = _files.with_backend(k, "nvrtc")
    assert nv is _files.with_backend(k, "nvrtc") and nv is not k
    assert nv.backend == "nvrtc" and k.backend == ""
    import tessera
    c = tessera.compile(nv, signature="*fp32:16,*fp32:16,i32,i32,i32,i32", constexprs={"BLOCK_SIZE": 1024})
    assert c.backend == "nvrtc"
