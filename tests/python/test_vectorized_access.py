"""Wide memory accesses, checked on the CPU: the axis analysis, coalesce and
codegen turn contiguous, 16-byte aligned rows into 128-bit loads and stores
(PTX ld.global.v4.b32, SASS LDG.E.128 / STG.E.128), cache modifiers and
eviction policies reach the PTX, and unproven alignment falls back to
element accesses. The SASS checks need cuobjdump (CUDA_HOME/bin, PATH, or
pip's nvidia-cuda-cuobjdump + nvidia-cuda-nvdisasm, installed by scripts/setup.sh)."""
import os
import pathlib
import re
import shutil
import subprocess

import pytest

from conftest import PTXAS, run_cli

SOFTMAX_SIG = "*{t}:16,*{t}:16,i32:16,i32:16,i32,i32:16"


def find_tool(name):
    cuda = pathlib.Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin" / name
    if cuda.exists():
        return cuda
    if shutil.which(name):
        return pathlib.Path(shutil.which(name))
    try:
        import nvidia
        for base in nvidia.__path__:
            for found in pathlib.Path(base).glob(f"cu*/bin/{name}"):
                return found
    except ImportError:
        pass
    return None


def compile_ptx(tmp_path, file, kernel, signature, constexprs, num_warps, arch="sm_90a"):
    ptx = tmp_path / f"{kernel}.ptx"
    args = ["compile", file, "--kernel", kernel, "--signature", signature, "--num-warps", str(num_warps),
            "--arch", arch, "-o", str(ptx)]
    for k, v in constexprs.items():
        args += ["--constexpr", f"{k}={v}"]
    run_cli(args, check=True)
    return ptx


def sass(tmp_path, ptx, arch="sm_90a"):
    cuobjdump, nvdisasm = find_tool("cuobjdump"), find_tool("nvdisasm")
    if cuobjdump is None or nvdisasm is None:
        pytest.fail("cuobjdump/nvdisasm not found: scripts/setup.sh installs them "
                    "(pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)")
    cubin = ptx.with_suffix(".cubin")
    subprocess.run([str(PTXAS), f"-arch={arch}", str(ptx), "-o", str(cubin)], check=True)
    env = dict(os.environ, PATH=f"{nvdisasm.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    out = subprocess.run([str(cuobjdump), "-sass", str(cubin)], capture_output=True, text=True, check=True, env=env)
    return out.stdout


def global_accesses(sass_text):
    return re.findall(r"\b((?:LDG|STG)\.[A-Z0-9.]+)", sass_text)


@pytest.mark.parametrize("dtype,block,warps", [("fp32", 1024, 4), ("fp32", 32768, 32), ("bf16", 4096, 16),
                                               ("fp16", 2048, 4)])
def test_softmax_rows_move_in_128_bit_accesses(tmp_path, dtype, block, warps):
    ptx = compile_ptx(tmp_path, "kernels/softmax.py", "softmax_kernel", SOFTMAX_SIG.format(t=dtype),
                      {"BLOCK_SIZE": block}, warps)
    text = ptx.read_text()
    assert "ld.global.v4.b32" in text and "st.global.v4.b32" in text
    accesses = global_accesses(sass(tmp_path, ptx))
    assert accesses, "no global accesses in the SASS"
    assert all(a.endswith(".128") for a in accesses), accesses
    assert any(a.startswith("LDG.E.128") for a in accesses) and any(a.startswith("STG.E.128") for a in accesses)


def test_layernorm_row_moves_in_128_bit_accesses(tmp_path):
    sig = "*bf16:16,*bf16:16,*bf16:16,*bf16:16,*fp32:16,*fp32:16,i32:16,i32:16,i32,i32:16,fp32"
    ptx = compile_ptx(tmp_path, "kernels/layernorm.py", "layer_norm_fwd_kernel", sig, {"BLOCK_SIZE": 4096}, 8)
    accesses = global_accesses(sass(tmp_path, ptx))
    # x, w, b and y as 128-bit vectors; mean and rstd are one scalar store each.
    assert sum(a.startswith("LDG.E.128") for a in accesses) >= 3
    assert any(a.startswith("STG.E.128") for a in accesses)


def test_unaligned_rows_fall_back_to_element_accesses(tmp_path):
    # No ':16': the row start is only known to be 4-byte aligned, the mask varies per element.
    ptx = compile_ptx(tmp_path, "kernels/softmax.py", "softmax_kernel", "*fp32,*fp32,i32,i32,i32,i32",
                      {"BLOCK_SIZE": 1024}, 4)
    text = ptx.read_text()
    assert "ld.global.v4" not in text and "st.global.v4" not in text
    assert "ld.global.b32" in text and "st.global.b32" in text


def test_aligned_but_ragged_mask_is_per_element(tmp_path):
    # Aligned rows, but n_cols not known divisible by 16: the mask may change inside a vector.
    ptx = compile_ptx(tmp_path, "kernels/softmax.py", "softmax_kernel", "*fp32:16,*fp32:16,i32:16,i32:16,i32,i32",
                      {"BLOCK_SIZE": 1024}, 4)
    assert "ld.global.v4" not in ptx.read_text()


def test_eviction_policies_reach_the_ptx_and_sass(tmp_path):
    ptx = compile_ptx(tmp_path, "kernels/softmax.py", "softmax_online_kernel", SOFTMAX_SIG.format(t="bf16"),
                      {"BLOCK_SIZE": 4096}, 8)
    text = ptx.read_text()
    assert "createpolicy.fractional.L2::evict_last.b64" in text
    assert re.search(r"ld\.global\.L1::evict_last\.L2::cache_hint\.v4\.b32 \{[^}]+\}, \[%rd\d+\], %rd\d+;", text)
    assert re.search(r"st\.global\.L1::evict_first\.L2::cache_hint\.v4\.b32", text)
    accesses = global_accesses(sass(tmp_path, ptx))
    assert "LDG.E.EL.128" in accesses and "LDG.E.EF.128" in accesses and "STG.E.EF.128" in accesses


CACHE_KERNEL = '''
import tessera
import tessera.language as tl


@tessera.jit
def copy_kernel(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(src + offs, mask=offs < n, cache_modifier=LOAD_CACHE)
    tl.store(dst + offs, x, mask=offs < n, cache_modifier=STORE_CACHE)
'''


@pytest.mark.parametrize("load_cache,store_cache", [(".cg", ".cs"), (".ca", ".wt"), (".cv", ".wb"), (".cs", ".cg")])
def test_cache_modifiers_reach_the_ptx(tmp_path, load_cache, store_cache):
    src = tmp_path / "copy.py"
    src.write_text(CACHE_KERNEL.replace("LOAD_CACHE", repr(load_cache)).replace("STORE_CACHE", repr(store_cache)))
    ptx = compile_ptx(tmp_path, str(src), "copy_kernel", "*fp32:16,*fp32:16,i32:16", {"BLOCK": 1024}, 4)
    text = ptx.read_text()
    assert f"ld.global{load_cache}.v4.b32" in text
    assert f"st.global{store_cache}.v4.b32" in text
    cubin = ptx.with_suffix(".cubin")
    proc = subprocess.run([str(PTXAS), "-arch=sm_90a", str(ptx), "-o", str(cubin)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_unknown_cache_modifier_is_an_error(tmp_path):
    src = tmp_path / "copy.py"
    src.write_text(CACHE_KERNEL.replace("LOAD_CACHE", "'.wb'").replace("STORE_CACHE", "'.cs'"))
    proc = run_cli(["compile", str(src), "--kernel", "copy_kernel", "--signature", "*fp32:16,*fp32:16,i32:16",
                    "--constexpr", "BLOCK=1024", "-o", str(tmp_path / "x.ptx")])
    assert proc.returncode != 0
    assert "cache modifier '.wb'" in proc.stderr
