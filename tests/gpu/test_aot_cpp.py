"""examples/aot_cpp on the GPU: kernels compiled ahead of time into a C++ program
(`tessera aot --emit cpp`, docs/cli.md "C++ bundles"), built with the rest of build/
on the CPU machine. The program runs with no Python in its process and needs only
the CUDA driver; it checks its own launches against the host (aligned arguments:
the ':16' variants; pointers one element in and odd strides: the generic ones) and
writes its inputs and outputs, which must match what the JIT computes from them."""
import os
import pathlib
import re
import shutil
import subprocess

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from kernels.softmax import softmax_kernel  # noqa: E402
from kernels.vector_add import add_kernel  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("TESSERA_BUILD_DIR", "build"))
EXAMPLE = (BUILD if BUILD.is_absolute() else ROOT / BUILD) / "examples" / "aot_cpp" / "aot_cpp_example"


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    """Runs the example once; its output folder and what it printed."""
    assert EXAMPLE.exists(), f"{EXAMPLE} was not built (examples/aot_cpp: needs the CUDA toolkit where build/ is made)"
    out = tmp_path_factory.mktemp("aot_cpp")
    # Nothing of tessera's in the environment (LD_LIBRARY_PATH stays: it may be how libcuda is
    # found; the binary needs no library of tessera's, test_the_example_needs_only_the_driver).
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "LD_PRELOAD") and not k.startswith("TESSERA_")}
    proc = subprocess.run([str(EXAMPLE), str(out)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0 and proc.stdout.splitlines()[-1] == "ok", proc.stdout + proc.stderr
    return out, proc.stdout


def test_the_example_needs_only_the_driver(example):
    _, printed = example
    needed = []
    if shutil.which("readelf"):
        dynamic = subprocess.run(["readelf", "-d", str(EXAMPLE)], capture_output=True, text=True).stdout
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic)
    assert not [n for n in needed if re.search(r"tessera|python|LLVM|nvrtc|nvJitLink", n, re.I)], needed
    major = int(re.search(r"\(sm_(\d+)\d\)", printed).group(1))
    # aligned arguments take the ':16' variants, the rest the generic ones, all from embedded cubins
    # on the GPUs the example embeds them for (sm_90a, sm_80: H100/H200, A100 and the other sm_8x).
    choices = re.findall(r"^  (\w+): (\S+) on (\w+) \((cubin|PTX)", printed, re.M)
    assert [(f, s) for f, s, _, _ in choices] == [
        ("vector_add", "*fp32:16,*fp32:16,*fp32:16,i32"), ("vector_add", "*fp32,*fp32,*fp32,i32"),
        ("softmax", "*fp32:16,*fp32:16,i32:16,i32:16,i32,i32"), ("softmax", "*fp32,*fp32,i32,i32,i32,i32"),
        ("softmax", "*fp32,*fp32,i32,i32,i32,i32")]
    if major in (8, 9):
        assert {kind for *_, kind in choices} == {"cubin"}
        assert {arch for _, _, arch, _ in choices} == {"sm_90a" if major == 9 else "sm_80"}


def test_the_example_matches_the_jit(example):
    out, _ = example
    x = torch.from_numpy(np.fromfile(out / "add_x.bin", dtype=np.float32)).cuda()
    y = torch.from_numpy(np.fromfile(out / "add_y.bin", dtype=np.float32)).cuda()
    aot = torch.from_numpy(np.fromfile(out / "add_out.bin", dtype=np.float32)).cuda()
    n = x.numel()
    jit = torch.full_like(x, float("nan"))
    add_kernel[((n + 1023) // 1024,)](x, y, jit, n, BLOCK_SIZE=1024)
    torch.cuda.synchronize()
    torch.testing.assert_close(aot, jit, rtol=0, atol=0)
    torch.testing.assert_close(aot, x + y, rtol=0, atol=0)

    rows, cols, stride = 37, 781, 784  # as main.cpp's aligned softmax
    src = torch.from_numpy(np.fromfile(out / "softmax_in.bin", dtype=np.float32)).cuda().view(rows, stride)
    aot = torch.from_numpy(np.fromfile(out / "softmax_out.bin", dtype=np.float32)).cuda().view(rows, stride)
    jit = torch.full_like(src, float("nan"))
    softmax_kernel[(rows,)](jit, src, stride, stride, rows, cols, BLOCK_SIZE=1024)
    torch.cuda.synchronize()
    # The same kernel with the same hints: the same numbers (up to another ptxas's choices).
    torch.testing.assert_close(aot[:, :cols], jit[:, :cols], rtol=1e-6, atol=1e-7)
    reference = torch.softmax(src[:, :cols].double(), dim=1)
    torch.testing.assert_close(aot[:, :cols].double(), reference, rtol=1e-5, atol=1e-7)
