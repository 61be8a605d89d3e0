"""tessera.compile() output on the GPU: the PTX links and loads, for the
device's arch and for portable sm_80 PTX; a compiled kernel launches; and
every kernel of kernels/manifest.txt loads."""
import pathlib

import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402
from gpu_helpers import poisoned  # noqa: E402
from kernels.softmax import softmax_kernel  # noqa: E402
from kernels.vector_add import add_kernel  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]


def manifest():
    for line in (ROOT / "kernels" / "manifest.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            file, kernel, signature, *rest = line.split()
            constexprs, warps = {}, 4
            for item in rest:
                key, value = item.split("=", 1)
                if key == "num_warps":
                    warps = int(value)
                elif key == "as":  # the C++ name of an AOT bundle's function (docs/cli.md)
                    continue
                elif value in ("True", "False"):
                    constexprs[key] = value == "True"
                else:
                    constexprs[key] = int(value) if value.lstrip("-").isdigit() else value
            yield pytest.param(file, kernel, signature, constexprs, warps, id=f"{kernel}-{signature}")


@pytest.mark.parametrize("file,kernel,signature,constexprs,warps", list(manifest()))
def test_manifest_kernel_loads(file, kernel, signature, constexprs, warps):
    if "tensordesc" in signature and not tessera._C.target_arch().startswith("sm_90"):
        with pytest.raises(tessera.CompilationError, match="tensor descriptors"):  # TMA: Hopper only
            tessera.compile(ROOT / "kernels" / file, kernel=kernel, signature=signature, constexprs=constexprs,
                            num_warps=warps, target="")
        return
    k = tessera.compile(ROOT / "kernels" / file, kernel=kernel, signature=signature, constexprs=constexprs,
                        num_warps=warps, target="")  # "": the current GPU's arch
    assert k.metadata.target == tessera._C.target_arch()
    attrs = tessera._C.load_ptx(k.asm["ptx"], kernel, warps, k.metadata.shared)
    assert attrs["n_regs"] > 0
    k._init_handles()
    assert k.n_regs == attrs["n_regs"]
    assert len(k.cubin) > 0


def test_ptxas_compiles_as_the_driver_does_whole(monkeypatch):
    """The default ptxas and the driver's whole-program JIT both compile the PTX as one
    program: the same registers for the attention forward, which the driver's linker
    (relocatable code) gives more (docs/runtime.md)."""
    if not tessera._C.jit_mode().startswith("ptxas "):
        pytest.fail(f"no ptxas on this GPU machine (TESSERA_JIT default: {tessera._C.jit_mode()})")
    (file, kernel, signature, constexprs, warps) = next(p.values for p in manifest() if p.values[1] == "attn_fwd_kernel")
    k = tessera.compile(ROOT / "kernels" / file, kernel=kernel, signature=signature, constexprs=constexprs,
                        num_warps=warps, target="")
    regs = {}
    for mode in ("ptxas", "whole", "link"):
        monkeypatch.setenv("TESSERA_JIT", mode)
        regs[mode] = tessera._C.load_ptx(k.asm["ptx"], kernel, warps, k.metadata.shared)["n_regs"]
    assert regs["ptxas"] == regs["whole"], regs


def test_portable_sm80_ptx_loads_on_newer_gpus():
    k = tessera.compile(softmax_kernel, signature="*fp32:16,*fp32:16,i32,i32,i32,i32",
                        constexprs={"BLOCK_SIZE": 1024}, target="sm_80")
    assert ".target sm_80" in k.asm["ptx"]
    assert tessera._C.load_ptx(k.asm["ptx"], "softmax_kernel", 4, k.metadata.shared)["n_regs"] > 0


def test_compiled_kernel_launches():
    k = tessera.compile(add_kernel, signature="*fp32:16,*fp32:16,*fp32:16,i32", constexprs={"BLOCK_SIZE": 1024},
                        target="")
    n = 12345
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = poisoned(n, torch.float32)
    k[(tessera.cdiv(n, 1024),)](x, y, out, n)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)
    out.fill_(float("nan"))
    k[(tessera.cdiv(n, 1024), 1, 1)](x, y, out, n, 1024)  # all parameters, the constexpr ignored
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)
    with pytest.raises(TypeError, match="is a fp16 tensor but the kernel was compiled for \\*fp32"):
        k[(1,)](x.half(), y, out, n)


@pytest.mark.parametrize("mode", ["ptxas", "link", "whole"])
def test_jit_modes_load_and_run(mode, monkeypatch, tmp_path):
    """TESSERA_JIT=ptxas (the default where a ptxas is found: the toolkit's ptxas compiles the
    PTX as one program, its cubin kept), link (the driver's cuLink JIT, cubin kept) and whole
    (the PTX loaded as it is, compiled by the driver as one program: no cubin to keep) all run
    the kernel; one warp, a block size per mode and an empty disk cache, so that each loads
    afresh (a cached entry would bring the cubin another process linked, as under pytest -n)."""
    monkeypatch.setenv("TESSERA_JIT", mode)
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    block = {"ptxas": 128, "link": 64, "whole": 32}[mode]
    k = tessera.compile(add_kernel, signature="*fp32:16,*fp32:16,*fp32:16,i32", constexprs={"BLOCK_SIZE": block},
                        num_warps=1, target="")
    n = 5000
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = poisoned(n, torch.float32)
    k[(tessera.cdiv(n, block),)](x, y, out, n)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)
    loaded = k._h.cubin()  # the cubin the load kept (k.cubin asks ptxas when the driver kept none)
    assert (len(loaded) > 0) == (mode != "whole")
    assert k.cubin[:4] == b"\x7fELF"


def test_warmup_then_launch_reuses_the_compiled_kernel():
    n = 4096
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = poisoned(n, torch.float32)

    @tessera.jit
    def add_twice(x_ptr, y_ptr, out_ptr, n, BLOCK: tessera.language.constexpr):
        offs = tessera.language.program_id(0) * BLOCK + tessera.language.arange(0, BLOCK)
        mask = offs < n
        x = tessera.language.load(x_ptr + offs, mask=mask)
        y = tessera.language.load(y_ptr + offs, mask=mask)
        tessera.language.store(out_ptr + offs, x + y + y, mask=mask)

    k = add_twice.warmup(x, y, out, n, BLOCK=512, grid=(8,))
    assert k.metadata.target == tessera._C.target_arch()
    assert add_twice.cache_info()["compiled"] == 1
    add_twice[(8,)](x, y, out, n, BLOCK=512)
    torch.cuda.synchronize()
    assert add_twice.cache_info()["compiled"] == 1
    torch.testing.assert_close(out, x + y + y)
