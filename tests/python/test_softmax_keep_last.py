"""The online softmax with its last block kept in registers (KEEP_LAST, kernels/softmax.py), which
tessera.kernels.softmax launches for 16-bit rows of 16385..32768 columns: a 64 KiB bf16 row on 8192-
element blocks left five programs per SM waiting on ~40 MB of evict_last rows in L2, more than the
L2 keeps, so the second sweep went back to DRAM (0.80x copy bandwidth on the H100/H200).

Checked here: the launch table (softmax_config), the kernel through the host interpreter against
numpy in float64 (ragged rows, one block, rows shorter than a block, prologue and epilogue), and the
compiled bf16 kernel (sm_90a): no spills under its register cap (two programs per SM), 128-bit
accesses, and the kept block's loads issued before the first sweep's."""
import re

import numpy as np
import pytest

from conftest import PTXAS, run_cli

import tessera  # noqa: E402
import tessera.language as tl  # noqa: E402
from tessera.kernels import softmax_config  # noqa: E402
from tessera.kernels import _files  # noqa: E402
from test_vectorized_access import compile_ptx, sass  # noqa: E402

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")

BF16_SIG = "*bf16:16,*bf16:16,i32:16,i32:16,i32,i32:16"


def test_config_of_long_16_bit_rows():
    for dtype in (np.dtype("float16"), np.dtype("uint16")):
        config = softmax_config(32768, dtype)
        assert config == {"kernel": "online", "BLOCK_SIZE": 16384, "num_warps": 16, "KEEP_LAST": True,
                          "maxnreg": 64}
        assert softmax_config(20000, dtype)["KEEP_LAST"]
    # other rows as before: 16384 16-bit columns on 8192 blocks, fp32 rows of 32768 in registers
    assert softmax_config(16384, np.dtype("float16")) == {"kernel": "online", "BLOCK_SIZE": 8192, "num_warps": 8,
                                                 "KEEP_LAST": False, "maxnreg": None}
    assert softmax_config(32768, np.dtype("float32"))["kernel"] == "register"
    assert not softmax_config(65536, np.dtype("float16"))["KEEP_LAST"]
    # NVRTC's PTX would spill under the cap: the plain online kernel on the same blocks
    assert softmax_config(32768, np.dtype("float16"), "nvrtc") == {
        "kernel": "online", "BLOCK_SIZE": 16384, "num_warps": 16, "KEEP_LAST": False, "maxnreg": None}


@pytest.mark.parametrize("backend", ["llvm", "nvrtc"])
def test_shipped_configs_do_not_spill(backend):
    """Each back-end's config for 16-bit rows of 32768 (and 16384) compiles without spills, within
    64 registers (two programs of 16 warps per SM)."""
    for cols in (16384, 32768):
        config = softmax_config(cols, np.dtype("float16"), backend)
        meta = {"BLOCK_SIZE": config["BLOCK_SIZE"]}
        if config["KEEP_LAST"]:
            meta["KEEP_LAST"] = True
        k = tessera.compile(_files.load("softmax").softmax_online_kernel, signature=BF16_SIG, constexprs=meta,
                            num_warps=config["num_warps"], maxnreg=config["maxnreg"], target="sm_90a", backend=backend)
        assert k.n_spills == 0, (backend, cols, config, k.n_regs, k.n_spills)
        assert k.n_regs * 32 * config["num_warps"] <= (32768 if cols == 32768 else 65536 // 5), (k.n_regs, config)


def online_kernel():
    return tessera.jit(_files.load("softmax").softmax_online_kernel.fn, interpret=True)


def reference(x64):
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("cols,block", [(1024, 256), (1000, 256), (257, 256), (256, 256), (200, 256), (1, 64)])
def test_keep_last_matches_float64(cols, block, dtype):
    rows = 5
    x = (np.random.default_rng(cols).standard_normal((rows, cols)) * 4).astype(dtype)
    x[1, -1] = 30.0  # the row's maximum in the kept block
    x[2, 0] = 30.0   # and in the first one
    y = np.full_like(x, np.nan)
    online_kernel()[(3,)](y, x, cols, cols, rows, cols, BLOCK_SIZE=block, KEEP_LAST=True)
    assert not np.isnan(y).any(), "columns left unwritten"
    ref = reference(x.astype(np.float64))
    if dtype == np.float32:
        np.testing.assert_allclose(y, ref, rtol=2e-6, atol=1e-9)
    else:
        np.testing.assert_allclose(y.astype(np.float64), ref, rtol=2e-3, atol=1e-6)


@tessera.jit
def scale_causal(x, row, cols):
    return tl.where(cols <= row * 100, x * 0.5, -float("inf"))


@tessera.jit
def times_cols(y, row, cols):
    return y * (cols + 1).to(tl.float32)


def test_keep_last_with_prologue_and_epilogue():
    rows, cols, block = 4, 300, 128  # the kept block is the ragged third one
    x = np.random.default_rng(3).standard_normal((rows, cols)).astype(np.float32)
    y = np.full_like(x, np.nan)
    online_kernel()[(rows,)](y, x, cols, cols, rows, cols, BLOCK_SIZE=block, KEEP_LAST=True,
                             PROLOGUE=scale_causal, EPILOGUE=times_cols)
    idx = np.arange(cols)
    s = np.where(idx[None, :] <= 100 * np.arange(rows)[:, None], x.astype(np.float64) * 0.5, -np.inf)
    ref = reference(s) * (idx + 1)
    np.testing.assert_allclose(y, ref, rtol=2e-6, atol=1e-9)


def test_shipped_bf16_config_compiles_to_two_programs_per_sm(tmp_path):
    config = softmax_config(32768, np.dtype("float16"))
    ptx = tmp_path / "keep.ptx"
    run_cli(["compile", "kernels/softmax.py", "--kernel", "softmax_online_kernel", "--signature", BF16_SIG,
             "--num-warps", str(config["num_warps"]), "--maxnreg", str(config["maxnreg"]), "--arch", "sm_90a",
             "--constexpr", f"BLOCK_SIZE={config['BLOCK_SIZE']}", "--constexpr", "KEEP_LAST=True",
             "-o", str(ptx)], check=True)
    import subprocess
    info = subprocess.run([str(PTXAS), "-arch=sm_90a", "-v", str(ptx), "-o", str(tmp_path / "keep.cubin")],
                          capture_output=True, text=True, check=True).stderr
    regs = int(re.search(r"Used (\d+) registers", info).group(1))
    assert regs <= 64, info  # 64 x 512 threads: two programs per SM
    assert "0 bytes spill stores" in info and "0 bytes spill loads" in info, info
    code = sass(tmp_path, ptx)
    loads = re.findall(r"\bLDG\.E\.[A-Z0-9.]+", code)
    stores = re.findall(r"\bSTG\.E\.[A-Z0-9.]+", code)
    assert loads and all(op.endswith(".128") for op in loads + stores), loads + stores
    # 32 bf16 a thread a block: 4 vectors kept (evict_first, loaded first), 4 a block in each sweep
    assert loads[:4] == ["LDG.E.EF.128"] * 4 and loads[4:8] == ["LDG.E.EL.128"] * 4, loads
    assert len(loads) == 12 and len(stores) == 8, (loads, stores)


@pytest.mark.parametrize("cols", [300, 256, 100])
def test_compiled_keep_last_bf16_in_the_ptx_emulator(cols):
    """The compiled bf16 kernel (KEEP_LAST, 128-element blocks on one warp: the emulator runs a CTA's
    lanes in lockstep and refuses the shared-memory exchange of several warps inside this loop nest; the
    64-register cap), run by the PTX emulator against float64: a ragged last block, an exact one, and
    one block only."""
    from ptx_emulator import GlobalMemory, run_kernel
    rows, block = 5, 128
    k = tessera.compile(_files.load("softmax").softmax_online_kernel, signature=BF16_SIG,
                        constexprs={"BLOCK_SIZE": block, "KEEP_LAST": True}, num_warps=1, maxnreg=64,
                        target="sm_90a", backend="llvm")
    x = (np.random.default_rng(cols).standard_normal((rows, cols)) * 4).astype(np.float32)
    x[1, -1] = 30.0
    bits = x.view(np.uint32).astype(np.uint64)
    xb = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    stride = (cols + 15) // 16 * 16  # rows 16-element aligned, as the signature promises
    padded = np.zeros((rows, stride), np.uint16)
    padded[:, :cols] = xb
    mem = GlobalMemory()
    x_addr = mem.alloc(padded.reshape(-1))
    y_addr = mem.alloc(np.full(rows * stride, 0x7FC0, np.uint16))
    for cta in range(3):  # one at a time: their row loops run different trip counts
        run_kernel(k.asm["ptx"], grid=(3,), block=(32,), args=[y_addr, x_addr, stride, stride, rows, cols],
                   memory=mem, ctas=np.array([cta]), shared_bytes=max(k.metadata.shared, 1024))
    y = mem.read(y_addr, np.uint16, rows * stride).reshape(rows, stride)[:, :cols]
    got = (y.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    ref = reference((xb.astype(np.uint32) << 16).view(np.float32).astype(np.float64))
    assert not np.isnan(got).any()
    np.testing.assert_allclose(got, ref, rtol=8e-3, atol=1e-30)
