"""`tessera aot --emit cpp` (docs/cli.md, "C++ bundles"), without a GPU: the bundle of
tests/python/aot_manifest.txt (the bundled vector_add and copy2d kernels) compiles as
C++14 with the host compiler against cuda.h, its cubins are ptxas's for each architecture,
and tests/tools/aot_bundle_driver.cpp drives its launch functions through the fake CUDA
driver (tests/tools/fake_libcuda.c): which variant the arguments pick (16-byte aligned
pointers, n == 1, strides that are multiples of 16), which image the device gets, and
the arguments the kernel receives. tests/gpu/test_aot_cpp.py runs examples/aot_cpp on a GPU."""
import os
import pathlib
import re
import shutil
import subprocess

import pytest

from conftest import BUILD, CLI, PTXAS, ROOT, run_cli

MANIFEST = ROOT / "tests" / "python" / "aot_manifest.txt"
FAKE = BUILD / "lib" / "libtessera_fake_cuda.so"
CUDA_INCLUDE = pathlib.Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "include"
CXX = os.environ.get("CXX", "g++")
ARCHS = ("sm_90a", "sm_80")
# The transpose's shared memory (a 128 x 128 fp32 tile, its rows padded against bank conflicts as the
# variant's layouts need) is above the 48 KB a launch gets without opting in.
OPT_IN_SHARED = 48 * 1024

VA = "*fp32:16,*fp32:16,*fp32:16,i32"
VA_GENERIC = "*fp32,*fp32,*fp32,i32"
C2_ONE_ROW = "*fp32:16,*fp32:16,i32:1,i32,i32:16,i32:16"
C2_STRIDES = "*fp32:16,*fp32:16,i32,i32,i32:16,i32:16"
C2_GENERIC = "*fp32,*fp32,i32,i32,i32,i32"
TR = "*fp32:16,*fp32:16"

# The launches of `aot_bundle_driver run` and the variant each must pick.
EXPECTED_VARIANTS = {
    "va_aligned": VA, "va_unaligned": VA_GENERIC, "va_unaligned_out": VA_GENERIC, "va_n1": VA,
    "c2_one_row": C2_ONE_ROW, "c2_rows": C2_STRIDES, "c2_stride": C2_GENERIC, "c2_unaligned": C2_GENERIC,
    "tr_big_shared": TR, "va_after_unload": VA,
}


def compile_cxx(args, cwd):
    proc = subprocess.run([CXX] + args, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{CXX} {' '.join(args)} failed:\n{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    """The bundle (cubins and PTX for sm_90a and sm_80) and the driver program built on it."""
    assert PTXAS.exists(), f"ptxas not found at {PTXAS}"
    assert FAKE.exists(), f"{FAKE} does not exist: build the tessera_fake_cuda target"
    assert (CUDA_INCLUDE / "cuda.h").exists(), f"no cuda.h under {CUDA_INCLUDE}"
    out = tmp_path_factory.mktemp("aot_bundle")
    proc = run_cli(["aot", str(MANIFEST), "--emit", "cpp", "--embed", "cubin+ptx", "--arch", ",".join(ARCHS),
                    "-o", str(out)], check=True)
    assert proc.stdout.splitlines()[:2] == [str(out / "tessera_aot.h"), str(out / "tessera_aot.cpp")]
    assert "bundled 3 launch functions (7 variants, 28 images: cubins for sm_90a, sm_80 (ptxas " in proc.stdout
    libcuda = f'-DTESSERA_AOT_LIBCUDA="{FAKE}"'
    # The bundle alone: C++14, the host compiler, cuda.h and nothing else; no warnings.
    compile_cxx(["-std=c++14", "-O1", "-Wall", "-Wextra", "-Wpedantic", "-Werror", f"-I{CUDA_INCLUDE}", libcuda,
                 "-c", "tessera_aot.cpp", "-o", "tessera_aot.o"], out)
    compile_cxx(["-std=c++17", "-O1", "-Wall", "-Werror", f"-I{out}", f"-I{CUDA_INCLUDE}",
                 f"-I{ROOT / 'tests' / 'tools'}", libcuda, str(ROOT / "tests" / "tools" / "aot_bundle_driver.cpp"),
                 "tessera_aot.o", "-o", "driver", "-ldl"], out)
    return out


def run_driver(bundle, *args, cc=90):
    env = dict(os.environ, TESSERA_FAKE_CUDA_CC=str(cc))
    proc = subprocess.run([str(bundle / "driver")] + list(args), capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def parse_fields(line):
    return dict(re.findall(r"(\w+)=(\S*)", line.split(" error=")[0]), error=line.partition(" error=")[2])


def launches(output):
    """{case: (CASE fields, LAUNCH fields or None)} from `aot_bundle_driver run`."""
    cases, current = {}, None
    for line in output.splitlines():
        if line.startswith("CASE "):
            current = line.split()[1]
            cases[current] = (parse_fields(line), None)
        elif line.startswith("LAUNCH "):
            cases[current] = (cases[current][0], dict(re.findall(r"(\w+)=(\S*)", line)))
    return cases


def test_header_declares_a_typed_launch_function_per_kernel(bundle):
    header = (bundle / "tessera_aot.h").read_text()
    assert ("CUresult vector_add(Grid grid, CUstream stream, float *x_ptr, float *y_ptr, float *out_ptr, "
            "int32_t n_elements);") in header
    assert ("CUresult copy2d(Grid grid, CUstream stream, float *src_ptr, float *dst_ptr, int32_t n_rows, "
            "int32_t n_cols, int32_t src_stride, int32_t dst_stride);") in header
    assert "static constexpr int64_t BLOCK_SIZE = 1024;" in header
    assert "static constexpr int64_t BLOCK_N = 64;" in header
    assert f"// Variants, tried in this order: {C2_ONE_ROW} | {C2_STRIDES} | {C2_GENERIC}" in header
    # Only the driver's header: no tessera, Python or LLVM header.
    assert re.findall(r"#include\s*[<\"]([^>\"]+)", header) == ["cuda.h", "cstddef", "cstdint"]
    source = (bundle / "tessera_aot.cpp").read_text()
    assert sorted(re.findall(r"#include\s*[<\"]([^>\"]+)", source)) == sorted(
        ["tessera_aot.h", "atomic", "mutex", "string", "type_traits", "dlfcn.h"])


def test_embedded_images_are_what_tessera_compile_and_ptxas_make(bundle, tmp_path):
    dumped = run_driver(bundle, "dump", str(tmp_path))
    images = [line.split() for line in dumped.splitlines()]
    assert len(images) == 28
    variants = (("vector_add", (VA, VA_GENERIC)), ("copy2d", (C2_ONE_ROW, C2_STRIDES, C2_GENERIC)),
                ("transpose", (TR, "*fp32,*fp32")))
    assert {(i[2], i[3], i[4]) for i in images} == {(f, sig, arch) for f, sigs in variants
                                                    for sig in sigs for arch in ARCHS}
    readelf = shutil.which("readelf")
    for _, path, function, signature, arch, warps, shared in images:
        path = pathlib.Path(path)
        file, kernel, constexprs, num_warps = {
            "vector_add": ("kernels/vector_add.py", "add_kernel", ["BLOCK_SIZE=1024"], 4),
            "copy2d": ("kernels/copy2d.py", "copy2d_kernel", ["BLOCK_M=32", "BLOCK_N=64"], 4),
            "transpose": ("tests/python/aot_transpose.py", "transpose_kernel", ["BM=128", "BN=128"], 8)}[function]
        assert warps == f"warps={num_warps}"
        if function == "transpose":
            assert shared.startswith("shared=") and int(shared[len("shared="):]) > OPT_IN_SHARED, shared
        else:
            assert shared == "shared=0"
        args = ["compile", file, "--kernel", kernel, "--signature", signature, "--arch", arch,
                "--num-warps", str(num_warps)]
        for c in constexprs:
            args += ["--constexpr", c]
        if path.suffix == ".ptx":
            assert path.read_text() == run_cli(args, check=True).stdout
            assert f".target {arch}" in path.read_text()
            continue
        expected = tmp_path / "expected.cubin"
        run_cli(args + ["--emit", "cubin", "-o", str(expected)], check=True)
        assert path.read_bytes() == expected.read_bytes(), f"{path.name} is not ptxas's cubin"
        if readelf:  # a CUDA ELF whose symbol table has the kernel
            header = subprocess.run([readelf, "-h", str(path)], capture_output=True, text=True).stdout
            assert "NVIDIA CUDA" in header, header
            symbols = subprocess.run([readelf, "-sW", str(path)], capture_output=True, text=True).stdout
            assert re.search(rf"\sFUNC\s+GLOBAL\s.*\s{kernel}$", symbols, re.M), symbols


def test_dispatch_picks_the_variant_the_arguments_fit(bundle):
    cases = launches(run_driver(bundle, "run", cc=90))
    assert cases.keys() == EXPECTED_VARIANTS.keys() | {"load"}
    for name, variant in EXPECTED_VARIANTS.items():
        fields, launch = cases[name]
        assert fields["rc"] == "0" and fields["error"] == "", (name, fields)
        assert fields["variant"] == variant, name
        # sm_90 gets the sm_90a cubin
        assert fields["image"] == "sm_90a:cubin", name
        if name.startswith("tr"):  # 64 KB: launched only because the bundle opted in (the fake checks)
            assert (launch["kernel"], launch["block"]) == ("transpose_kernel", "256,1,1")
            assert int(launch["shared"]) > OPT_IN_SHARED
            continue
        assert launch["kernel"] == ("add_kernel" if name.startswith("va") else "copy2d_kernel")
        assert launch["block"] == "128,1,1" and launch["shared"] == "0"
    assert cases["va_aligned"][1]["grid"] == "3,1,1"  # cdiv(3000, vector_add_config::BLOCK_SIZE)
    assert cases["va_aligned"][1]["stream"] == "5000"
    assert cases["c2_rows"][1]["stream"] == "0"
    assert cases["load"][0]["rc"] == "0"


def test_arguments_reach_the_kernel_as_passed(bundle):
    # A device newer than every cubin (10.0) gets the newest PTX that is not sm_90a-only,
    # which the fake reads the parameter list of: every value arrives as passed.
    cases = launches(run_driver(bundle, "run", cc=100))
    for name, variant in EXPECTED_VARIANTS.items():
        fields, launch = cases[name]
        assert fields["rc"] == "0" and fields["variant"] == variant, (name, fields)
        assert fields["image"] == "sm_80:ptx", name
        assert launch["params"] == launch["passed"], name
        assert int(launch["shared"]) > OPT_IN_SHARED if name.startswith("tr") else launch["shared"] == "0"
        assert len(launch["params"].split(",")) == {"va": 4, "c2": 6, "tr": 2}[name[:2]]
    assert cases["c2_one_row"][1]["passed"].split(",")[2:] == ["1", "32", "40", "40"]


def test_devices_get_the_image_that_fits(bundle):
    for cc, image in ((86, "sm_80:cubin"), (80, "sm_80:cubin"), (89, "sm_80:cubin")):
        fields, _ = launches(run_driver(bundle, "run", cc=cc))["va_aligned"]
        assert (fields["rc"], fields["image"]) == ("0", image), cc
    fields, launch = launches(run_driver(bundle, "run", cc=75))["va_aligned"]
    assert fields["rc"] == "209" and launch is None  # CUDA_ERROR_NO_BINARY_FOR_GPU
    assert fields["error"] == (f"vector_add (kernel add_kernel, {VA}) has no image for device 0 (sm_75); it holds "
                               "sm_90a cubin, sm_90a PTX, sm_80 cubin, sm_80 PTX")


def test_a_launch_without_a_context_says_so(bundle):
    fields, launch = launches(run_driver(bundle, "noctx"))["va_no_context"]
    assert fields["rc"] == "201" and launch is None  # CUDA_ERROR_INVALID_CONTEXT
    assert "no CUDA context is current on this thread" in fields["error"]


def write_manifest(tmp_path, lines):
    manifest = tmp_path / "manifest.txt"
    manifest.write_text("".join(f"{ROOT / 'kernels'}/{line}\n" for line in lines))
    return manifest


def aot_error(tmp_path, lines, *options):
    manifest = write_manifest(tmp_path, lines)
    proc = run_cli(["aot", str(manifest), "--emit", "cpp", "-o", str(tmp_path / "out")] + list(options))
    assert proc.returncode == 1 and proc.stdout == "", proc.stdout + proc.stderr
    assert not (tmp_path / "out").exists()
    return proc.stderr.strip().replace(str(manifest), "MANIFEST")


@pytest.mark.parametrize("lines, message", [
    (["vector_add.py add_kernel *fp32:16,*fp32:16,*fp32:16,i32 BLOCK_SIZE=1024",
      "vector_add.py add_kernel *fp16:16,*fp16:16,*fp16:16,i32 BLOCK_SIZE=1024"],
     "MANIFEST:2: launch function 'add_kernel' (MANIFEST:1) has the types *fp32,*fp32,*fp32,i32, this line "
     "*fp16,*fp16,*fp16,i32: give this line another name with as=NAME"),
    (["vector_add.py add_kernel *fp32:16,*fp32:16,*fp32:16,i32 BLOCK_SIZE=1024",
      "vector_add.py add_kernel *fp32,*fp32,*fp32,i32 BLOCK_SIZE=512"],
     "MANIFEST:2: launch function 'add_kernel' (MANIFEST:1) has other constexprs or options: give this line "
     "another name with as=NAME"),
    (["vector_add.py add_kernel *fp32:16,*fp32:16,*fp32:16,i32 BLOCK_SIZE=1024 as=add",
      "copy2d.py copy2d_kernel *fp32,*fp32,i32,i32,i32,i32 BLOCK_M=32 BLOCK_N=64 as=add"],
     "MANIFEST:2: launch function 'add' (MANIFEST:1) has kernel "),
    (["vector_add.py add_kernel *fp32:16,*fp32:16,*fp32:16,i32 BLOCK_SIZE=1024",
      "vector_add.py add_kernel *fp32:16,*fp32:16,*fp32:16,i32 BLOCK_SIZE=1024"],
     "MANIFEST:2: launch function 'add_kernel' has this specialisation (*fp32:16,*fp32:16,*fp32:16,i32) "
     "already, from MANIFEST:1"),
    (["vector_add.py add_kernel *fp32,*fp32,*fp32,i32 BLOCK_SIZE=1024 as=class"],
     "MANIFEST:1: 'class' cannot name a C++ function"),
    (["vector_add.py add_kernel *fp32,*fp32,*fp32,i32 BLOCK_SIZE=1024 as=load"],
     "MANIFEST:1: 'load' is one of the bundle's own names: give the launch function another with as=NAME"),
    (["attention.py attn_fwd_kernel *bf16:16,tensordesc<bf16[128,128]>,tensordesc<bf16[128,128]>,*bf16:16 "
      "HEAD_DIM=128"],
     "MANIFEST:1: C++ bundles do not take tensor descriptor parameters"),
])
def test_manifest_errors(tmp_path, lines, message):
    error = aot_error(tmp_path, lines)
    assert error.startswith(message) or error.startswith("tessera: error: " + message), error
    assert len(error.splitlines()) == 1


@pytest.mark.parametrize("options, message", [
    (["--embed", "fatbin"], "tessera: error: --embed must be cubin, ptx or cubin+ptx; got 'fatbin'"),
    (["--name", "my-bundle"], "tessera: error: --name must be a C++ identifier (it names the namespace and the "
                              "files), got 'my-bundle'"),
    (["--arch", "sm_90a,sm_75"], "tessera: error: --arch: unsupported architecture 'sm_75' (supported: sm_80, "
                                 "sm_86, sm_87, sm_89, sm_90, sm_90a; several: sm_90a,sm_80)"),
])
def test_option_errors(tmp_path, options, message):
    assert aot_error(tmp_path, ["vector_add.py add_kernel *fp32,*fp32,*fp32,i32 BLOCK_SIZE=1024"], *options) == message


def test_bundle_options_need_emit_cpp(tmp_path):
    manifest = write_manifest(tmp_path, [f"vector_add.py add_kernel {VA} BLOCK_SIZE=1024"])
    proc = run_cli(["aot", str(manifest), "--embed", "ptx", "-o", str(tmp_path / "out")])
    assert proc.returncode == 2 and proc.stderr == ("tessera: error: --embed is for C++ bundles: add --emit cpp "
                                                    "(see 'tessera aot --help')\n")


def test_no_generic_leaves_unfit_arguments_to_an_error(tmp_path):
    manifest = write_manifest(tmp_path, [f"vector_add.py add_kernel {VA} BLOCK_SIZE=1024 as=vector_add"])
    run_cli(["aot", str(manifest), "--emit", "cpp", "--embed", "ptx", "--no-generic", "--name", "va",
             "-o", str(tmp_path)], check=True)
    source = (tmp_path / "va.cpp").read_text()
    assert ("  if (tessera_aot_detail::aligned16(x_ptr) && tessera_aot_detail::aligned16(y_ptr) && "
            "tessera_aot_detail::aligned16(out_ptr))\n    aot_variant = 0;\n  else\n"
            f'    return tessera_aot_detail::noVariant("vector_add", "{VA}");') in source
    assert "namespace va {" in source and "sm_90a cubin" not in source and '{"sm_90a", false,' in source


def test_ptx_files_for_several_architectures(tmp_path):
    manifest = write_manifest(tmp_path, ["vector_add.py add_kernel *fp32:16,*fp32:16,*fp32:16,i32 BLOCK_SIZE=1024",
                                         "vector_add.py add_kernel *fp32,*fp32,*fp32,i32 BLOCK_SIZE=1024"])
    proc = run_cli(["aot", str(manifest), "--arch", "sm_90a,sm_80", "-o", str(tmp_path / "out")], check=True)
    assert proc.stdout.splitlines()[-1] == "compiled 4 kernels for sm_90a, sm_80 (llvm back-end)"
    for arch in ARCHS:
        for name in ("vector_add.add_kernel.ptx", "vector_add.add_kernel.2.ptx"):
            assert f".target {arch}" in (tmp_path / "out" / arch / name).read_text()


def test_the_cmake_example_is_built_and_needs_only_the_driver():
    """examples/aot_cpp, built with tessera's own build (its `tessera aot` step ran the CLI just
    built): no tessera, Python, LLVM or NVRTC library; tests/gpu/test_aot_cpp.py runs it."""
    example = BUILD / "examples" / "aot_cpp" / "aot_cpp_example"
    assert example.exists(), f"{example} was not built (examples/aot_cpp needs the CUDA toolkit)"
    header = (BUILD / "examples" / "aot_cpp" / "generated" / "tessera_kernels.h").read_text()
    assert "CUresult vector_add(Grid grid, CUstream stream, float *x_ptr" in header
    assert "CUresult softmax(Grid grid, CUstream stream, float *out_ptr, float *in_ptr" in header
    dynamic = subprocess.run(["readelf", "-d", str(example)], capture_output=True, text=True, check=True).stdout
    needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic))
    assert "libcuda.so.1" in needed  # main.cpp's own driver calls
    assert not [n for n in needed if re.search(r"tessera|python|LLVM|nvrtc|nvJitLink", n, re.I)], needed


def test_kernel_names_that_are_cpp_names_compile(tmp_path):
    """Parameters named like C++ keywords or the launch function's own parameters, and a kernel
    named like the bundle's helpers, still make a bundle that compiles."""
    (tmp_path / "k.py").write_text(
        "import tessera\nimport tessera.language as tl\n\n\n@tessera.jit\n"
        "def launch(grid, stream, float, aot_params, n, BLOCK: tl.constexpr):\n"
        "    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    tl.store(float + o, tl.load(grid + o, mask=o < n) + tl.load(stream + o, mask=o < n) + aot_params,\n"
        "             mask=o < n)\n")
    (tmp_path / "manifest.txt").write_text("k.py launch *fp32:16,*fp32:16,*fp32:16,i32:16,i32 BLOCK=128\n")
    run_cli(["aot", str(tmp_path / "manifest.txt"), "--emit", "cpp", "--embed", "ptx", "--name", "bundle",
             "-o", str(tmp_path)], check=True)
    header = (tmp_path / "bundle.h").read_text()
    assert ("CUresult launch(Grid grid, CUstream stream, float *grid_, float *stream_, float *float_, "
            "int32_t aot_params_, int32_t n);") in header
    compile_cxx(["-std=c++14", "-Wall", "-Wextra", "-Werror", f"-I{CUDA_INCLUDE}", "-fsyntax-only", "bundle.cpp"],
                tmp_path)


def test_a_launch_without_the_driver_says_so(tmp_path):
    """The bundle opens the driver at its first launch: a program links and starts without one,
    and the launch returns CUDA_ERROR_NO_DEVICE with the loader's reason."""
    manifest = write_manifest(tmp_path, [f"vector_add.py add_kernel {VA} BLOCK_SIZE=1024 as=vector_add"])
    run_cli(["aot", str(manifest), "--emit", "cpp", "--embed", "ptx", "-o", str(tmp_path)], check=True)
    (tmp_path / "main.cpp").write_text(
        '#include "tessera_aot.h"\n#include <cstdio>\n'
        "int main() {\n"
        "  CUresult r = tessera_aot::vector_add(tessera_aot::Grid{1}, nullptr, nullptr, nullptr, nullptr, 0);\n"
        '  std::printf("%d %s\\n", int(r), tessera_aot::last_error());\n'
        "  return 0;\n}\n")
    compile_cxx(["-std=c++14", f"-I{CUDA_INCLUDE}", '-DTESSERA_AOT_LIBCUDA="/nonexistent/libcuda.so.1"',
                 "main.cpp", "tessera_aot.cpp", "-o", "main", "-ldl"], tmp_path)
    printed = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True, timeout=60).stdout
    assert printed.startswith("100 cannot load the CUDA driver /nonexistent/libcuda.so.1: "), printed


def test_a_tuple_signature_entry_is_flattened_into_launch_parameters(tmp_path):
    """A tuple argument in a manifest line, as Triton spells it: the launch function takes its runtime
    leaves (named after the parameter and their position), its constexpr leaves are folded."""
    (tmp_path / "k.py").write_text(
        "import tessera\nimport tessera.language as tl\n\n\n@tessera.jit\n"
        "def scale(ptrs, n, factors, BLOCK: tl.constexpr):\n"
        "    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    tl.static_assert(factors[1] is None)\n"
        "    tl.store(ptrs[1] + o, tl.load(ptrs[0] + o, mask=o < n) * factors[0], mask=o < n)\n")
    (tmp_path / "manifest.txt").write_text("k.py scale (*fp32:16,*fp32:16),i32,(fp32,None) BLOCK=128\n")
    run_cli(["aot", str(tmp_path / "manifest.txt"), "--emit", "cpp", "--embed", "ptx", "--name", "bundle",
             "-o", str(tmp_path)], check=True)
    header = (tmp_path / "bundle.h").read_text()
    assert ("CUresult scale(Grid grid, CUstream stream, float *ptrs_0, float *ptrs_1, int32_t n, "
            "float factors_0);") in header
    compile_cxx(["-std=c++14", "-Wall", "-Wextra", "-Werror", f"-I{CUDA_INCLUDE}", "-fsyntax-only", "bundle.cpp"],
                tmp_path)
