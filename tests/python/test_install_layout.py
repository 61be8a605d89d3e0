"""Where the installed pieces find each other (issue 31): the `tessera` command and
`python -m tessera` (python/tessera/__main__.py), the bundled kernels for tessera.kernels
(python/tessera/kernels/_files.py) and for `tessera aot` with no manifest
(compiler/cli/Locations.h), and the C++ GPU tests' kernel files from a copied build. The wheel
itself is built and installed by scripts/check_wheel.sh (the end of scripts/test.sh); here its layout
is assembled by hand from the build tree, which is what that script checks for real."""
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tomllib

import pytest

from conftest import BUILD, CLI, ROOT

import tessera
from tessera.kernels import _files

VECTOR_ADD_LINE = "vector_add.py add_kernel *fp32:16,*fp32:16,*fp32:16,i32 BLOCK_SIZE=256\n"


def clean_env(tmp_path, **extra):
    """This environment without anything that points at the checkout or a build."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "TESSERA_KERNELS_DIR", "TESSERA_BUILD_DIR", "TESSERA_EXT_DIR",
                        "TESSERA_SOURCE_DIR", "TESSERA_PYTHON")}
    env["TESSERA_CACHE_DIR"] = str(tmp_path / "cache")
    env.update(extra)
    return env


def run(args, cwd, env):
    return subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


# ------------------------------------------------------------------ what the wheel installs

def manifest_files(manifest):
    files = []
    for line in manifest.read_text().splitlines():
        words = line.split("#")[0].split()
        if words:
            files.append(words[0])
    return files


def test_the_wheel_installs_what_the_package_looks_for():
    """python/CMakeLists.txt installs the CLI and the kernels where __main__.py, tessera/kernels/_files.py and
    compiler/cli/Locations.cpp look; pyproject.toml names the entry point; the copy is flat, so every
    file the manifest names is a top-level kernels/*.py."""
    rules = (ROOT / "python" / "CMakeLists.txt").read_text()
    assert re.search(r"install\(DIRECTORY \$\{PROJECT_SOURCE_DIR\}/kernels/ DESTINATION tessera/kernels/src\s+"
                     r"FILES_MATCHING PATTERN \"\*\.py\" PATTERN \"manifest\.txt\"", rules)
    assert "install(TARGETS tessera-cli RUNTIME DESTINATION tessera/bin)" in rules
    assert 'dirs.push_back(above / "kernels" / "src");' in (ROOT / "compiler" / "cli" / "Locations.cpp").read_text()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"] == {"tessera": "tessera.__main__:main"}
    assert "torch" in project["optional-dependencies"]["torch"]
    for name in manifest_files(ROOT / "kernels" / "manifest.txt"):
        assert "/" not in name and name.endswith(".py") and (ROOT / "kernels" / name).is_file(), name
    for name in ("softmax", "matmul", "attention", "layernorm"):
        assert (ROOT / "kernels" / f"{name}.py").is_file()


# ------------------------------------------------------------------ tessera.kernels' folder

def test_kernels_dir_in_a_checkout_needs_no_environment(monkeypatch):
    monkeypatch.delenv("TESSERA_KERNELS_DIR", raising=False)
    assert _files.kernels_dir() == ROOT / "kernels"


def test_kernels_dir_of_an_installed_package_then_the_override(monkeypatch, tmp_path):
    package_kernels = tmp_path / "tessera" / "kernels"
    (package_kernels / "src").mkdir(parents=True)
    (package_kernels / "src" / "manifest.txt").write_text(VECTOR_ADD_LINE)
    monkeypatch.setattr(_files, "_HERE", package_kernels)
    monkeypatch.delenv("TESSERA_KERNELS_DIR", raising=False)
    assert _files.kernels_dir() == package_kernels / "src"
    monkeypatch.setenv("TESSERA_KERNELS_DIR", str(tmp_path / "mine"))
    assert _files.kernels_dir() == tmp_path / "mine"


def test_kernel_modules_load_from_another_directory(tmp_path):
    code = ("import tessera.kernels._files as f\n"
            "for name in ('softmax', 'matmul', 'attention'):\n"
            "    m = f.load(name)\n"
            "    print(name, m.__file__)\n")
    proc = run([sys.executable, "-c", code], tmp_path,
               clean_env(tmp_path, PYTHONPATH=str(ROOT / "python"), TESSERA_BUILD_DIR=str(BUILD)))
    assert proc.returncode == 0, proc.stderr
    for name in ("softmax", "matmul", "attention"):
        assert f"{name} {ROOT / 'kernels' / name}.py" in proc.stdout


# ------------------------------------------------------------------ python -m tessera, the build tree

def test_python_m_tessera_runs_the_build_trees_cli(tmp_path):
    env = clean_env(tmp_path, PYTHONPATH=str(ROOT / "python"), TESSERA_BUILD_DIR=str(BUILD))
    proc = run([sys.executable, "-m", "tessera", "--help"], tmp_path, env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == run([CLI, "--help"], tmp_path, env).stdout
    version = run([sys.executable, "-m", "tessera", "version"], tmp_path, env)
    assert version.stdout == run([CLI, "version"], tmp_path, env).stdout and version.stdout
    wrong = run([sys.executable, "-m", "tessera", "frobnicate"], tmp_path, env)  # the CLI's exit status
    assert wrong.returncode == 2 and "unknown command 'frobnicate'" in wrong.stderr


def test_python_m_tessera_without_a_cli_says_where_it_looked(tmp_path, monkeypatch):
    import tessera.__main__ as entry
    monkeypatch.setattr(entry, "cli_candidates", lambda: [tmp_path / "nowhere" / "tessera"])
    assert entry.main(["--help"]) == 127


def test_aot_with_no_manifest_from_elsewhere_uses_the_checkouts(tmp_path):
    """build/bin/tessera run from another directory finds <checkout>/kernels/manifest.txt."""
    proc = run([CLI, "aot", "--help"], tmp_path, clean_env(tmp_path))
    assert "usage: tessera aot [MANIFEST]" in proc.stdout
    # A copy of the build in another checkout reads that checkout's kernels (a one-kernel manifest here).
    checkout = tmp_path / "checkout"
    (checkout / "build" / "bin").mkdir(parents=True)
    (checkout / "kernels").mkdir()
    shutil.copy2(CLI, checkout / "build" / "bin" / "tessera")
    shutil.copy2(ROOT / "kernels" / "vector_add.py", checkout / "kernels")
    (checkout / "kernels" / "manifest.txt").write_text(VECTOR_ADD_LINE)
    env = clean_env(tmp_path, LD_LIBRARY_PATH=str(BUILD / "lib"))
    copied_cli = checkout / "build" / "bin" / "tessera"
    proc = run([copied_cli, "aot", "--arch", "sm_80", "-o", tmp_path / "out"], tmp_path, env)
    assert proc.returncode == 0, proc.stderr
    assert "compiled 1 kernel for sm_80" in proc.stdout
    assert ".entry add_kernel" in (tmp_path / "out" / "vector_add.add_kernel.ptx").read_text()
    # The override, and a missing manifest named with every folder tried.
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = run([copied_cli, "aot"], tmp_path, {**env, "TESSERA_KERNELS_DIR": str(empty)})
    assert proc.returncode == 1
    assert proc.stderr.strip() == (f"tessera: error: no manifest named and no bundled kernels/manifest.txt found "
                                   f"(looked in {empty}); name one or set TESSERA_KERNELS_DIR")


# ------------------------------------------------------------------ the wheel's layout, by hand

@pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")
def test_a_wheel_layout_runs_from_anywhere(tmp_path):
    """site/tessera/ as pip installs it: the package, _C, libtessera.so, bin/tessera, kernels/src/."""
    site = tmp_path / "site"
    package = site / "tessera"
    shutil.copytree(ROOT / "python" / "tessera", package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(pathlib.Path(tessera._C.__file__), package)
    os.symlink(BUILD / "lib" / "libtessera.so", package / "libtessera.so")
    (package / "bin").mkdir()
    shutil.copy2(CLI, package / "bin" / "tessera")
    src = package / "kernels" / "src"
    src.mkdir()
    for name in ("vector_add", "softmax", "matmul", "attention"):
        shutil.copy2(ROOT / "kernels" / f"{name}.py", src)
    (src / "manifest.txt").write_text(VECTOR_ADD_LINE)  # one kernel: which manifest ran shows in the count
    work = tmp_path / "work"
    work.mkdir()
    env = clean_env(tmp_path, PYTHONPATH=str(site))

    proc = run([sys.executable, "-m", "tessera", "aot", "--arch", "sm_90a", "-o", "out"], work, env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["out/vector_add.add_kernel.ptx", "compiled 1 kernel for sm_90a (llvm back-end)"]

    code = ("import tessera, tessera.kernels._files as f\n"
            "print(tessera.__file__)\n"
            "print(f.kernels_dir())\n"
            "print(f.load('matmul').__file__)\n"
            "import tessera.__main__ as m\n"
            "print(m.cli_path())\n")
    proc = run([sys.executable, "-c", code], work, env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [str(package / "__init__.py"), str(src), str(src / "matmul.py"),
                                        str(package / "bin" / "tessera")]


# ------------------------------------------------------------------ the GPU suite from a copied build

def test_gpu_tests_read_the_kernels_of_the_checkout_they_were_copied_into(tmp_path):
    """tests/gpu/run.sh with build/ from another machine (issue 31, item 4): the C++ GPU tests' kernel
    files come from the checkout the binary sits in, not the one that built it (needs no GPU)."""
    binary = BUILD / "tests" / "tessera_gpu_tests"
    if not binary.exists():
        pytest.fail(f"{binary} does not exist: build it (cmake --build build --target tessera_gpu_tests)")
    checkout = tmp_path / "elsewhere"
    (checkout / "build" / "tests").mkdir(parents=True)
    (checkout / "kernels").mkdir()
    shutil.copy2(binary, checkout / "build" / "tests")
    shutil.copy2(ROOT / "kernels" / "vector_add.py", checkout / "kernels")
    env = clean_env(tmp_path, LD_LIBRARY_PATH=str(BUILD / "lib"))
    proc = run([checkout / "build" / "tests" / "tessera_gpu_tests", "--gtest_filter=KernelSources.*"], tmp_path, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"kernel sources: {checkout}\n" in proc.stdout
    assert "[  PASSED  ] 1 test" in proc.stdout
    # TESSERA_SOURCE_DIR (which run.sh sets to the checkout it runs from) still wins.
    proc = run([checkout / "build" / "tests" / "tessera_gpu_tests", "--gtest_filter=KernelSources.*"], tmp_path,
               {**env, "TESSERA_SOURCE_DIR": str(ROOT)})
    assert proc.returncode == 0 and f"kernel sources: {ROOT}\n" in proc.stdout
