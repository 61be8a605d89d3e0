"""Runs tests/fake_driver (kernel[grid](...) through the fake CUDA driver,
tests/tools/fake_libcuda.c, and the stand-in torch, tests/tools/fake_torch) in
a process of its own: the launch path's fast cases reach cuLaunchKernel with
the right function, grid, block, stream and parameter bytes, on any machine.
Also checks that TESSERA_LIBCUDA names the library in the no-driver error."""
import os
import pathlib
import subprocess
import sys

from conftest import BUILD, ROOT

FAKE = BUILD / "lib" / "libtessera_fake_cuda.so"


def env(tmp_path, **extra):
    e = dict(os.environ)
    # TESSERA_JIT=link: the fake's "cubin" from cuLink is the PTX, from which it reads each
    # kernel's parameter sizes (a real cubin from ptxas would hide them; test_jit_mode
    # switches modes itself).
    e.update(TESSERA_LIBCUDA=str(FAKE), TESSERA_CACHE_DIR=str(tmp_path / "cache"), TESSERA_JIT="link",
             PYTHONPATH=os.pathsep.join([str(ROOT / "tests" / "tools" / "fake_torch"), str(ROOT / "python")]
                                        + ([e["PYTHONPATH"]] if e.get("PYTHONPATH") else [])))
    e.pop("TESSERA_INTERPRET", None)
    e.update(extra)
    return e


def test_launches_through_the_fake_driver(tmp_path):
    assert FAKE.exists(), f"{FAKE} is missing: build the tessera_fake_cuda target (tests/CMakeLists.txt)"
    proc = subprocess.run([sys.executable, "-m", "pytest", str(ROOT / "tests" / "fake_driver"), "-q",
                           "-p", "no:cacheprovider"], cwd=ROOT, env=env(tmp_path), capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert " passed" in proc.stdout and "skipped" not in proc.stdout.splitlines()[-1], proc.stdout[-2000:]


def test_tessera_libcuda_names_the_library_it_could_not_load(tmp_path):
    code = ("import tessera, tessera.language as tl\n"
            "print(tessera.driver_available())\n"
            "try:\n"
            "    tessera.device_count()\n"
            "except tessera.DriverNotFoundError as e:\n"
            "    print(e)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env=env(tmp_path, TESSERA_LIBCUDA=str(tmp_path / "libnothere.so")))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "False"
    assert lines[1].startswith(f"no CUDA driver found: {tmp_path / 'libnothere.so'} could not be loaded (")


def test_a_warm_start_runs_no_ptxas(tmp_path):
    """A new process whose kernel (and cubin) is in the disk cache spawns nothing: not ptxas to
    compile, not `ptxas --version` for the cubin's tag (remembered in DIR/tools/, 3-10 ms a spawn)."""
    ptxas = pathlib.Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin" / "ptxas"
    assert ptxas.exists(), f"{ptxas} is missing: the CUDA toolkit's ptxas is a test dependency"
    log = tmp_path / "ptxas.log"
    wrapper = tmp_path / "ptxas"
    wrapper.write_text(f"#!/bin/sh\necho \"$@\" >> {log}\nexec {ptxas} \"$@\"\n")
    wrapper.chmod(0o755)
    code = ("import torch, tessera\n"
            "from kernels.vector_add import add_kernel\n"
            "x, y, out = (torch.empty((1024,)) for _ in range(3))\n"
            "add_kernel[(4,)](x, y, out, 1024, BLOCK_SIZE=256)\n"
            "print(tessera._C.cache_stats()['hits'])\n")
    run_env = env(tmp_path, TESSERA_JIT="", TESSERA_PTXAS=str(wrapper))
    runs = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=run_env, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, proc.stderr
        runs.append((proc.stdout.strip(), log.read_text().splitlines()))
    (cold_hits, cold_log), (warm_hits, warm_log) = runs
    assert cold_hits == "0" and any("--version" in line for line in cold_log) and any("-arch=" in line for line in cold_log)
    assert warm_hits == "1" and warm_log == cold_log, warm_log[len(cold_log):]
