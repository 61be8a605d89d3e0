"""TMA tensor descriptors on the GPU (docs/tma.md): tessera.TensorDescriptor encoded by
the real driver (cuTensorMapEncodeTiled), desc.load blocks against torch (ragged edges
read as zeros), and the pipelined TMA matmul (kernels/matmul.py's matmul_tma_kernel:
an mbarrier ring that wgmma reads) against torch.matmul in float64, every Hopper config,
ragged M/N/K, fp16 and bf16, outputs poisoned first. Needs sm_90."""
import importlib
import os
import sys

import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402
import tessera.kernels as tk  # noqa: E402
from gpu_helpers import assert_rel_err, poisoned  # noqa: E402
from kernels.matmul import matmul_tma_kernel  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python", "lang_kernels"))
from tensor_descriptors import desc_copy, desc_scaled_sum  # noqa: E402

MM = importlib.import_module("tessera.kernels.matmul")
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


@pytest.fixture(autouse=True, scope="module")
def hopper():
    if torch.cuda.get_device_capability() < (9, 0):
        pytest.fail("TMA needs sm_90 (this GPU is sm_%d%d)" % torch.cuda.get_device_capability())
    saved = os.environ.get("TESSERA_CACHE")
    os.environ["TESSERA_CACHE"] = "0"
    yield
    if saved is None:
        os.environ.pop("TESSERA_CACHE", None)
    else:
        os.environ["TESSERA_CACHE"] = saved


@pytest.mark.parametrize("dtype,shape,block", [(torch.bfloat16, (200, 296), (64, 128)),
                                               (torch.float32, (100, 72), (32, 64)),
                                               (torch.float16, (256, 512), (128, 64))])
def test_desc_copy_matches_torch_with_zero_fill(dtype, shape, block):
    M, N = shape
    bm, bn = block
    x = torch.randn(shape, device="cuda").to(dtype)
    d = tessera.TensorDescriptor.from_tensor(x, list(block))
    gm, gn = tessera.cdiv(M, bm), tessera.cdiv(N, bn)
    out = poisoned((gm * bm, gn * bn), dtype)
    desc_copy[(gm, gn)](d, out, gn * bn, BLOCK_M=bm, BLOCK_N=bn)
    torch.cuda.synchronize()
    want = torch.zeros_like(out)
    want[:M, :N] = x
    assert torch.equal(out, want)
    assert d.tensor_map is not None and len(d.tensor_map) == 128


def test_desc_loads_in_a_loop():
    x = torch.randn((300, 256), device="cuda").half()
    d = tessera.TensorDescriptor.from_tensor(x, [32, 64])
    out = poisoned((32, 256), torch.float32)
    desc_scaled_sum[(4,)](d, out, 300, BLOCK_M=32, BLOCK_N=64)
    torch.cuda.synchronize()
    padded = torch.zeros((320, 256), device="cuda", dtype=torch.float64)
    padded[:300] = x.double()
    assert_rel_err(out, 2 * padded.view(10, 32, 256).sum(0), 1e-5, "desc_scaled_sum")


def tma_matmul(a, b, config, out_dtype=None):
    M, K = a.shape
    N = b.shape[1]
    kw = config.kwargs
    a_desc = tessera.TensorDescriptor.from_tensor(a, [kw["BLOCK_M"], kw["BLOCK_K"]])
    b_desc = tessera.TensorDescriptor.from_tensor(b, [kw["BLOCK_K"], kw["BLOCK_N"]])
    c = poisoned((M, N), out_dtype or a.dtype)
    grid = (tessera.cdiv(M, kw["BLOCK_M"]) * tessera.cdiv(N, kw["BLOCK_N"]),)
    matmul_tma_kernel[grid](a_desc, b_desc, c, M, N, K, c.stride(0), c.stride(1), **config.all_kwargs())
    torch.cuda.synchronize()
    return c


# N and K multiples of 8 (16-byte rows, as TMA needs); M anything.
SHAPES = [(128, 256, 64), (1000, 776, 328), (129, 264, 72), (2048, 2048, 512), (1, 256, 64), (512, 128, 4096)]


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("config", MM.HOPPER_MATMUL_CONFIGS, ids=[MM.matmul_config_name(c) for c in MM.HOPPER_MATMUL_CONFIGS])
def test_tma_matmul_matches_float64(shape, dtype, config):
    M, N, K = shape
    torch.manual_seed(M + N + K)
    a = torch.randn((M, K), device="cuda").to(DTYPES[dtype])
    b = torch.randn((K, N), device="cuda").to(DTYPES[dtype])
    c = tma_matmul(a, b, config)
    assert_rel_err(c, a.double() @ b.double(), 1e-2, f"{MM.matmul_config_name(config)} {shape}")


def test_tma_matmul_fp32_output():
    a = torch.randn((300, 512), device="cuda").bfloat16()
    b = torch.randn((512, 384), device="cuda").bfloat16()
    c = tma_matmul(a, b, MM.HOPPER_MATMUL_CONFIGS[0], torch.float32)
    assert_rel_err(c, a.double() @ b.double(), 1e-3, "fp32 out")


def test_wrapper_takes_tma_for_row_major_and_cp_async_otherwise(monkeypatch):
    calls = []
    real = MM._launch_tma
    monkeypatch.setattr(MM, "_launch_tma", lambda *a, **k: (calls.append(1), real(*a, **k))[1])
    a = torch.randn((1000, 512), device="cuda").half()
    b = torch.randn((512, 776), device="cuda").half()
    ref = a.double() @ b.double()
    assert_rel_err(tk.matmul(a, b, autotune=False), ref, 1e-2, "tma")
    assert len(calls) == 1
    assert_rel_err(tk.matmul(a, b, autotune=False, tma=False), ref, 1e-2, "cp.async")
    assert_rel_err(tk.matmul(a, b.t().contiguous().t(), autotune=False), ref, 1e-2, "column-major b")
    b_odd = torch.randn((512, 777), device="cuda").half()  # 1554-byte rows: not describable
    assert_rel_err(tk.matmul(a, b_odd, autotune=False), a.double() @ b_odd.double(), 1e-2, "odd N")
    assert len(calls) == 1


def test_wrapper_autotunes_the_tma_kernel_with_per_config_blocks():
    """Every config's pre_hook sets the descriptors' block_shape before its launch."""
    a = torch.randn((1024, 1024), device="cuda").bfloat16()
    b = torch.randn((1024, 1024), device="cuda").bfloat16()
    c = tk.matmul(a, b, autotune=True)
    assert_rel_err(c, a.double() @ b.double(), 1e-2, "autotuned")
    tuner = tk.matmul_tma_autotuner()
    assert tuner.best_config is not None and len(tuner.configs_timings or {}) > 1
