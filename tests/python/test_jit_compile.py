"""tessera.compile() and kernel.warmup(): compiling from Python without a GPU
(the extension tessera._C, the whole pipeline to PTX, ptxas accepting it)."""
import os
import pathlib
import subprocess
import sys

import pytest

from conftest import PTXAS, ROOT

sys.path.insert(0, str(ROOT))  # the `kernels` package

import tessera  # noqa: E402
import tessera.language as tl  # noqa: E402
from kernels.copy2d import copy2d_kernel  # noqa: E402
from kernels.softmax import softmax_kernel  # noqa: E402
from kernels.vector_add import add_kernel  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def extension():
    if tessera._C is None:
        from tessera._loader import missing_message
        pytest.fail(missing_message(tessera._C_error))
    return tessera._C


def ptxas_accepts(ptx, arch, tmp_path):
    if not PTXAS.exists():
        pytest.skip(f"{PTXAS} not found")
    src = tmp_path / "k.ptx"
    src.write_text(ptx)
    proc = subprocess.run([str(PTXAS), f"-arch={arch}", str(src), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_extension_reports_version_and_no_driver_quietly(extension):
    assert extension.version().startswith("tessera ")
    status = extension.driver_status()
    assert set(status) == {"library_loaded", "ready", "version", "error"}
    assert tessera.driver_available() == status["ready"]


def test_compile_vector_add_to_ptx(tmp_path):
    k = tessera.compile(add_kernel, signature="*fp32:16,*fp32:16,*fp32:16,i32",
                        constexprs={"BLOCK_SIZE": 1024}, num_warps=4, target="sm_90a")
    assert isinstance(k, tessera.CompiledKernel)
    for stage in ("ast", "ir", "ir-opt", "llvm", "ptx", "llir"):
        assert k.asm[stage].strip(), stage
    with pytest.raises(KeyError, match="MLIR dialect"):  # not Triton's TTGIR: not offered as one
        k.asm["ttgir"]
    assert ".visible .entry add_kernel(" in k.asm["ptx"]
    assert ".target sm_90a" in k.asm["ptx"]
    assert "add_kernel" in k.asm["ast"]
    assert k.metadata.name == "add_kernel"
    assert k.metadata.num_warps == 4
    assert k.metadata.target == "sm_90a"
    assert k.metadata.constexprs == {"BLOCK_SIZE": 1024}
    assert k.signature == "*fp32:16,*fp32:16,*fp32:16,i32"
    ptxas_accepts(k.asm["ptx"], "sm_90a", tmp_path)


@pytest.mark.parametrize("dtype,block,warps", [("fp32", 1024, 4), ("bf16", 4096, 16), ("fp16", 256, 2)])
def test_compile_softmax_to_ptx(dtype, block, warps, tmp_path):
    k = tessera.compile(softmax_kernel, signature=f"*{dtype}:16,*{dtype}:16,i32,i32,i32,i32",
                        constexprs={"BLOCK_SIZE": block}, num_warps=warps)
    ptx = k.asm["ptx"]
    assert ".visible .entry softmax_kernel(" in ptx
    assert k.metadata.num_warps == warps
    # the exact block size, as Triton (NVRTC's __launch_bounds__ gives a maximum)
    directive = "maxntid" if os.environ.get("TESSERA_BACKEND") == "nvrtc" else "reqntid"
    assert f".{directive} {32 * warps}, 1, 1" in ptx
    assert k.metadata.shared >= 0
    ptxas_accepts(ptx, "sm_90a", tmp_path)


def test_compile_copy2d_for_sm80(tmp_path):
    k = tessera.compile(copy2d_kernel, signature=["*fp32", "*fp32", "i32", "i32", "i32", "i32"],
                        constexprs={"BLOCK_M": 32, "BLOCK_N": 64}, target="sm_80")
    assert ".target sm_80" in k.asm["ptx"]
    ptxas_accepts(k.asm["ptx"], "sm_80", tmp_path)


def test_compile_from_a_file_path():
    k = tessera.compile(ROOT / "kernels" / "softmax.py", kernel="softmax_kernel",
                        signature="*fp32,*fp32,i32,i32,i32,i32", constexprs={"BLOCK_SIZE": 1024})
    assert ".visible .entry softmax_kernel(" in k.asm["ptx"]


def test_compile_matches_the_cli():
    from conftest import run_cli
    k = tessera.compile(softmax_kernel, signature="*fp32,*fp32,i32,i32,i32,i32", constexprs={"BLOCK_SIZE": 1024})
    proc = run_cli("compile kernels/softmax.py --kernel softmax_kernel --signature *fp32,*fp32,i32,i32,i32,i32 "
                   "--constexpr BLOCK_SIZE=1024", check=True)

    def code(ptx):  # without comments and debug locations (the paths differ: absolute vs relative)
        return [line for line in ptx.splitlines()
                if line.strip() and not line.lstrip().startswith(("//", ".file", ".loc"))]

    assert code(k.asm["ptx"]) == code(proc.stdout)


def test_compile_rejects_bad_options():
    with pytest.raises(ValueError, match="signature entry 2"):
        tessera.compile(add_kernel, signature="*fp32,*fp33,*fp32,i32", constexprs={"BLOCK_SIZE": 64})
    with pytest.raises(ValueError, match="unsupported architecture 'sm_70'"):
        tessera.compile(add_kernel, signature="*fp32,*fp32,*fp32,i32", constexprs={"BLOCK_SIZE": 64},
                        target="sm_70")
    with pytest.raises(ValueError, match="num_warps must be a power of 2"):
        tessera.compile(add_kernel, signature="*fp32,*fp32,*fp32,i32", constexprs={"BLOCK_SIZE": 64},
                        num_warps=3)


def test_compile_reports_a_missing_constexpr_with_its_place():
    with pytest.raises(tessera.CompilationError) as info:
        tessera.compile(add_kernel, signature="*fp32,*fp32,*fp32,i32")
    e = info.value
    assert "missing value for constexpr parameter 'BLOCK_SIZE'" in str(e)
    def_line = 1 + (ROOT / "kernels" / "vector_add.py").read_text().splitlines().index(
        "def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):")
    assert e.path.endswith("kernels/vector_add.py") and e.line == def_line
    assert str(e).startswith(f"{e.path}:{e.line}:{e.col}: error:")
    # As in Triton, the bare message is the error's cause (Triton's tests read str(e.__cause__)).
    assert isinstance(e.__cause__, ValueError)
    assert str(e.__cause__) == "missing value for constexpr parameter 'BLOCK_SIZE'"


def test_warmup_compiles_without_a_gpu_and_caches():
    @tessera.jit
    def scale(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)

    class Buf:
        def __init__(self, ptr):
            self.__cuda_array_interface__ = {"data": (ptr, False), "typestr": "<f4", "shape": (4,), "version": 3}

    k = scale.warmup(Buf(1 << 20), Buf(1 << 21), 4096, 2.5, BLOCK=512, grid=(8,))
    assert isinstance(k, tessera.CompiledKernel)
    assert k.signature == "*fp32:16,*fp32:16,i32:16,fp32"
    assert ".visible .entry scale(" in k.asm["ptx"]
    assert k.metadata.constexprs == {"BLOCK": 512}
    assert scale.cache_info()["compiled"] == 1
    scale.warmup(Buf(1 << 20), Buf(1 << 21), 8192, 1.0, BLOCK=512)  # same specialisation
    assert scale.cache_info()["compiled"] == 1
    scale.warmup(Buf((1 << 20) + 4), Buf(1 << 21), 8192, 1.0, BLOCK=512)  # x not 16-byte aligned
    assert scale.cache_info()["compiled"] == 2
    scale.warmup(Buf(1 << 20), Buf(1 << 21), 8192, 1.0, BLOCK=512, num_warps=8)
    assert scale.cache_info()["compiled"] == 3
    k80 = scale.warmup(Buf(1 << 20), Buf(1 << 21), 8192, 1.0, BLOCK=512, target="sm_80")
    assert ".target sm_80" in k80.asm["ptx"]


def test_repr_names_the_compiled_kernel_from_its_specialisation():
    # Triton's @jit(repr=fn): fn gets .signature (types, "constexpr" for constexprs and for
    # ints specialised to 1) and .constants (their values); test_core.py::test_value_specialization.
    seen = []

    def name_of(specialization):
        seen.append(specialization)
        ones = "_".join(k for k, v in specialization.constants.items() if v == 1)
        return f"kernel_{specialization.signature['value1']}_{ones}"

    @tessera.jit(repr=name_of)
    def kernel(value1, is_one, X, BLOCK: tl.constexpr):
        pass

    class Buf:
        __cuda_array_interface__ = {"data": (1 << 20, False), "typestr": "<f4", "shape": (4,), "version": 3}

    for value, ty in [(-1, "i32"), (2**31, "i64"), (2**64 - 1, "u64"), (16, "i32")]:
        k = kernel.warmup(value, 1, Buf(), BLOCK=4, grid=(1,))
        assert k.name == k.metadata.name == f"kernel_{ty}_is_one"
    assert seen[-1].signature == {"value1": "i32", "is_one": "constexpr", "X": "*fp32", "BLOCK": "constexpr"}
    assert seen[-1].constants == {"is_one": 1, "BLOCK": 4}
    assert ".visible .entry kernel(" in k.asm["ptx"]  # the PTX entry keeps the function's name
    # a tuple argument: its leaves' types (runtime leaves take entries; None and an int equal to 1 are
    # constexprs, as in Triton), a None argument
    kernel.warmup((7, (Buf(), None), 1), None, Buf(), BLOCK=4, grid=(1,))
    assert seen[-1].signature == {"value1": ("i32", ("*fp32", "constexpr"), "constexpr"), "is_one": "constexpr",
                                  "X": "*fp32", "BLOCK": "constexpr"}
    assert seen[-1].constants == {"is_one": None, "BLOCK": 4}


def test_kernel_parameters_binding(extension):
    text = (ROOT / "kernels" / "vector_add.py").read_text()
    params = extension.kernel_parameters(text, "kernels/vector_add.py", 1, "add_kernel")
    assert params == [("x_ptr", False, False), ("y_ptr", False, False), ("out_ptr", False, False),
                      ("n_elements", False, False), ("BLOCK_SIZE", True, False)]
    assert add_kernel.params == params
    assert add_kernel.arg_names == ["x_ptr", "y_ptr", "out_ptr", "n_elements", "BLOCK_SIZE"]
    assert add_kernel.constexprs == [4]
    with pytest.raises(tessera.CompilationError, match="no @jit function named 'nope'.*it defines: add_kernel"):
        extension.kernel_parameters(text, "kernels/vector_add.py", 1, "nope")


def test_python_package_without_the_extension_still_imports(tmp_path):
    # A copy of the package with no extension anywhere: importing works, compiling explains.
    import shutil
    pkg = tmp_path / "tessera"
    shutil.copytree(pathlib.Path(tessera.__file__).parent, pkg, ignore=shutil.ignore_patterns("_C*", "*.so"))
    code = ("import tessera, sys\n"
            "assert tessera._C is None, tessera._C\n"
            "try:\n"
            "    tessera.compile(lambda: None, signature='')\n"
            "except ImportError as e:\n"
            "    print('IMPORT-ERROR', e)\n")
    env = {"PATH": "/usr/bin:/bin", "TESSERA_EXT_DIR": str(tmp_path / "none")}
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "IMPORT-ERROR tessera's C++ extension (tessera._C) could not be imported" in proc.stdout
