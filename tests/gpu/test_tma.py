"""TMA tensor descriptors on the GPU (docs/tma.md): tessera.TensorDescriptor encoded by
the real driver (cuTensorMapEncodeTiled), desc.load blocks against torch (ragged edges
read as zeros), and the pipelined TMA matmul (kernels/matmul.py's matmul_tma_kernel:
an mbarrier ring that wgmma reads) against torch.matmul in float64, every Hopper config,
ragged M/N/K, fp16 and bf16, outputs poisoned first; the same with a fused epilogue
(matmul_tma_epilogue_kernel through tk.matmul(..., epilogue=): bias + GELU, residual +
scale, column bias, fp32 out) and that it is the TMA kernel that runs. Needs sm_90."""
import importlib
import os
import sys

import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402
import tessera.kernels as tk  # noqa: E402
import tessera.language as tl  # noqa: E402
from gpu_helpers import assert_rel_err, poisoned  # noqa: E402
from kernels.matmul import matmul_tma_kernel, matmul_tma_persistent_kernel, matmul_tma_store_kernel  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python", "lang_kernels"))
from tensor_descriptors import (desc_copy, desc_expert_tile, desc_scaled_sum, desc_stacked_blocks,  # noqa: E402
                                desc_stacked_blocks4, desc_store_scaled)

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


@pytest.mark.parametrize("dtype,shape,block", [(torch.float16, (6, 64, 64), (2, 64, 64)),
                                               (torch.float32, (8, 8, 64), (4, 8, 64)),
                                               (torch.bfloat16, (4, 12, 128), (2, 16, 128))])
def test_descriptor_blocks_with_leading_dims(dtype, shape, block):
    """[B, M, N] blocks with B > 1 (one TMA box of stacked rows): loaded, stored doubled through a second
    descriptor into a poisoned tensor, and summed over B in registers; M ragged in the last case (only the
    tensor's rows are read: the rest of the box is zeros, and the store skips them)."""
    E, R, C = shape
    b, m, n = block
    x = torch.randn(shape, device="cuda").to(dtype)
    out = poisoned(shape, dtype)
    sums = poisoned((E // b, m, n), torch.float32)
    src = tessera.TensorDescriptor(x, list(shape), list(x.stride()), list(block))
    dst = tessera.TensorDescriptor(out, list(shape), list(out.stride()), list(block))
    desc_stacked_blocks[(E // b,)](src, dst, sums, B=b, M=m, N=n)
    torch.cuda.synchronize()
    rows = min(R, m)
    assert torch.equal(out[:, :rows], (x[:, :rows].float() * 2).to(dtype))
    padded = torch.zeros((E, m, n), device="cuda", dtype=torch.float32)
    padded[:, :rows] = x[:, :rows].float()
    torch.testing.assert_close(sums, padded.reshape(E // b, b, m, n).sum(1), rtol=1e-6, atol=1e-6)


def test_rank4_descriptor_blocks_with_leading_dims():
    x = torch.randn((4, 6, 16, 64), device="cuda").half()
    out = poisoned(x.shape, torch.float16)
    block = [2, 2, 16, 64]
    src = tessera.TensorDescriptor(x, list(x.shape), list(x.stride()), block)
    dst = tessera.TensorDescriptor(out, list(out.shape), list(out.stride()), block)
    desc_stacked_blocks4[(2, 3)](src, dst, A=2, B=2, M=16, N=64)
    torch.cuda.synchronize()
    assert torch.equal(out, -x)


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


@pytest.mark.parametrize("dtype,ekn,block", [(torch.bfloat16, (4, 200, 256), (128, 128)),
                                             (torch.float32, (3, 96, 72), (64, 32))])
def test_rank3_descriptor_blocks_of_one_expert(dtype, ekn, block):
    """A [1, BN, BK] block of an [E, N, K] tensor (SGLang's fused MoE weights) through a 3-D descriptor, transposed
    and stored through a 3-D descriptor of an [E', K, N] output: out[i] = w[expert_ids[i]].T, ragged N clipped."""
    E, N, K = ekn
    bn, bk = block
    w = torch.randn(E, N, K, device="cuda").to(dtype)
    ids = torch.tensor([2, 0, 1, 2][:E], dtype=torch.int32, device="cuda")
    out = torch.zeros(len(ids), K, N, device="cuda", dtype=dtype)
    w_desc = tessera.TensorDescriptor(w, list(w.shape), list(w.stride()), [1, bn, bk])
    o_desc = tessera.TensorDescriptor(out, list(out.shape), list(out.stride()), [1, bk, bn])
    desc_expert_tile[(tessera.cdiv(N, bn), tessera.cdiv(K, bk), len(ids))](w_desc, o_desc, ids, BLOCK_N=bn, BLOCK_K=bk)
    torch.cuda.synchronize()
    assert torch.equal(out, w[ids.long()].transpose(1, 2))


@pytest.mark.parametrize("dtype,shape,block", [(torch.bfloat16, (200, 296), (64, 128)),
                                               (torch.float32, (100, 72), (32, 64)),
                                               (torch.float16, (256, 512), (128, 64))])
def test_desc_store_writes_only_inside_the_tensor(dtype, shape, block):
    """desc.store: blocks of x * 2 written through a descriptor over a view inside a bigger,
    poisoned buffer; the TMA unit clips the ragged edge blocks, so the rest stays poison."""
    M, N = shape
    bm, bn = block
    x = torch.randn(shape, device="cuda").to(dtype)
    buf = poisoned((M + 8, N + 64), dtype)
    view = buf[:M, :N]
    src = tessera.TensorDescriptor.from_tensor(x, list(block))
    dst = tessera.TensorDescriptor.from_tensor(view, list(block))
    desc_store_scaled[(tessera.cdiv(M, bm), tessera.cdiv(N, bn))](src, dst, 2.0, BLOCK_M=bm, BLOCK_N=bn)
    torch.cuda.synchronize()
    assert torch.equal(view, (x.float() * 2).to(dtype))
    untouched = poisoned((M + 8, N + 64), dtype)
    assert torch.equal(buf[M:].contiguous().view(torch.uint8), untouched[M:].contiguous().view(torch.uint8))
    assert torch.equal(buf[:M, N:].contiguous().view(torch.uint8), untouched[:M, N:].contiguous().view(torch.uint8))


def test_desc_loads_in_a_loop():
    x = torch.randn((300, 256), device="cuda").half()
    d = tessera.TensorDescriptor.from_tensor(x, [32, 64])
    out = poisoned((32, 256), torch.float32)
    desc_scaled_sum[(4,)](d, out, 300, BLOCK_M=32, BLOCK_N=64)
    torch.cuda.synchronize()
    padded = torch.zeros((320, 256), device="cuda", dtype=torch.float64)
    padded[:300] = x.double()
    assert_rel_err(out, 2 * padded.view(10, 32, 256).sum(0), 1e-5, "desc_scaled_sum")


def tma_matmul(a, b, config, out_dtype=None, **extra):
    M, K = a.shape
    N = b.shape[1]
    kw = config.kwargs
    a_desc = tessera.TensorDescriptor.from_tensor(a, [kw["BLOCK_M"], kw["BLOCK_K"]])
    b_desc = tessera.TensorDescriptor.from_tensor(b, [kw["BLOCK_K"], kw["BLOCK_N"]])
    c = poisoned((M, N), out_dtype or a.dtype)
    grid = (tessera.cdiv(M, kw["BLOCK_M"]) * tessera.cdiv(N, kw["BLOCK_N"]),)
    matmul_tma_kernel[grid](a_desc, b_desc, c, M, N, K, c.stride(0), c.stride(1), **config.all_kwargs(), **extra)
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


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("shape", SHAPES + [(256, 512, 8192)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("config", MM.HOPPER_MATMUL_CONFIGS, ids=[MM.matmul_config_name(c) for c in MM.HOPPER_MATMUL_CONFIGS])
def test_warp_specialized_matmul_matches_float64(shape, dtype, config):
    """WARP_SPECIALIZE=True: a producer warpgroup issues every copy (num_warps + 4 warps), the
    consumers release each stage on its empty mbarrier; K from one block (fewer iterations than
    stages) to 128 blocks."""
    M, N, K = shape
    torch.manual_seed(M + N + K + 2)
    a = torch.randn((M, K), device="cuda").to(DTYPES[dtype])
    b = torch.randn((K, N), device="cuda").to(DTYPES[dtype])
    c = tma_matmul(a, b, config, WARP_SPECIALIZE=True)
    assert_rel_err(c, a.double() @ b.double(), 1e-2, f"ws {MM.matmul_config_name(config)} {shape}")


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("shape", SHAPES + [(4096, 4096, 256), (2048, 1024, 64)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("blocks", [(128, 256, 64, 8, 3), (128, 128, 64, 4, 3), (64, 64, 64, 4, 2)], ids=str)
def test_warp_specialized_persistent_matmul_matches_float64(shape, dtype, blocks):
    """matmul_tma_persistent_kernel with WARP_SPECIALIZE: one ring across each program's tiles
    (the producer walks every tile's K loop; the consumers carry its stage and phase from tile to
    tile and release a tile's last stage after its loop), on fewer programs than tiles."""
    M, N, K = shape
    bm, bn, bk, warps, stages = blocks
    torch.manual_seed(M + N + K + 3)
    a = torch.randn((M, K), device="cuda").to(DTYPES[dtype])
    b = torch.randn((K, N), device="cuda").to(DTYPES[dtype])
    c = poisoned((M, N), a.dtype)
    a_desc = tessera.TensorDescriptor.from_tensor(a, [bm, bk])
    b_desc = tessera.TensorDescriptor.from_tensor(b, [bk, bn])
    tiles = tessera.cdiv(M, bm) * tessera.cdiv(N, bn)
    programs = max(1, min(tiles, 7))  # each program loops over several tiles
    matmul_tma_persistent_kernel[(programs,)](a_desc, b_desc, c, M, N, K, c.stride(0), c.stride(1), BLOCK_M=bm,
                                              BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, NUM_SMS=programs,
                                              WARP_SPECIALIZE=True, num_warps=warps, num_stages=stages)
    torch.cuda.synchronize()
    assert_rel_err(c, a.double() @ b.double(), 1e-2, f"ws persistent {blocks} {shape}")


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("shape", SHAPES + [(4096, 4096, 256)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("config", [MM.HOPPER_MATMUL_CONFIGS[0], "64x64x64/w4/s3", None],
                         ids=["first", "64x64x64", "autotuned"])
def test_persistent_matmul_matches_float64(shape, dtype, config):
    """tk.matmul(..., persistent=True): min(SMs, tiles) programs, each looping over its tiles
    (4096 x 4096 at 128 x 256: 512 tiles on 132 programs), poisoned output."""
    M, N, K = shape
    torch.manual_seed(M + N + K + 1)
    a = torch.randn((M, K), device="cuda").to(DTYPES[dtype])
    b = torch.randn((K, N), device="cuda").to(DTYPES[dtype])
    c = poisoned((M, N), a.dtype)
    tk.matmul(a, b, c, persistent=True, config=config)
    torch.cuda.synchronize()
    assert_rel_err(c, a.double() @ b.double(), 1e-2, f"persistent {config} {shape}")


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_tma_store_matmul_matches_float64(shape, dtype):
    """matmul_tma_store_kernel: C through desc.store (TMA stores clip the ragged edges)."""
    M, N, K = shape
    config = MM.HOPPER_MATMUL_CONFIGS[0]
    kw = config.kwargs
    torch.manual_seed(M + N + K)
    a = torch.randn((M, K), device="cuda").to(DTYPES[dtype])
    b = torch.randn((K, N), device="cuda").to(DTYPES[dtype])
    c = poisoned((M, N), DTYPES[dtype])
    descs = [tessera.TensorDescriptor.from_tensor(x, block) for x, block in (
        (a, [kw["BLOCK_M"], kw["BLOCK_K"]]), (b, [kw["BLOCK_K"], kw["BLOCK_N"]]), (c, [kw["BLOCK_M"], kw["BLOCK_N"]]))]
    grid = (tessera.cdiv(M, kw["BLOCK_M"]) * tessera.cdiv(N, kw["BLOCK_N"]),)
    matmul_tma_store_kernel[grid](*descs, M, N, K, **config.all_kwargs())
    torch.cuda.synchronize()
    assert_rel_err(c, a.double() @ b.double(), 1e-2, f"tma store {shape}")


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
    # Every config compiled with its own blocks (the pre_hook runs before each compile) and was timed.
    assert not tuner.failures, tuner.failures
    assert all(ms is not None for ms in tuner.configs_timings.values()), tuner.configs_timings


# ---- the TMA matmul with a fused epilogue (matmul_tma_epilogue_kernel through tk.matmul) -----------

@tessera.jit
def ep_bias_gelu(acc, bias):
    y = acc + bias
    return 0.5 * y * (1.0 + tl.erf(y * 0.7071067811865476))


@tessera.jit
def ep_residual_scale(acc, residual, alpha):
    return acc * alpha + residual


@tessera.jit
def ep_bias_gelu_fresh(acc, bias):  # its own composed kernels, compiled first by the test that uses it
    return ep_bias_gelu(acc, bias)


def gelu64(y):
    return torch.nn.functional.gelu(y.double())


EPILOGUES = ["bias_gelu", "residual_scale"]


def epilogue_case(which, M, N, K, dtype, seed):
    """(a, b, epilogue, epilogue_args, float64 reference) with row-major a and b (TMA applies)."""
    torch.manual_seed(seed)
    a = torch.randn((M, K), device="cuda").to(dtype)
    b = torch.randn((K, N), device="cuda").to(dtype)
    ab = a.double() @ b.double()
    if which == "bias_gelu":
        bias = torch.randn((N,), device="cuda").to(dtype)
        return a, b, ep_bias_gelu, (bias,), gelu64(ab + bias.double())
    residual = torch.randn((M, N), device="cuda").to(dtype)
    return a, b, ep_residual_scale, (residual, 0.5), ab * 0.5 + residual.double()


@pytest.fixture
def tma_launches(monkeypatch):
    """The names of the kernels the wrapper launched through TMA descriptors (MM._launch_tma)."""
    names = []
    real = MM._launch_tma
    monkeypatch.delenv("TESSERA_MATMUL_TMA", raising=False)

    def recording(*args, **kwargs):
        kernel = args[11] if len(args) > 11 else kwargs.get("kernel")
        names.append(kernel.__name__ if kernel is not None else "matmul_tma_kernel")
        return real(*args, **kwargs)
    monkeypatch.setattr(MM, "_launch_tma", recording)
    return names


@pytest.mark.parametrize("which", EPILOGUES)
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("config", MM.HOPPER_MATMUL_CONFIGS, ids=[MM.matmul_config_name(c) for c in MM.HOPPER_MATMUL_CONFIGS])
def test_tma_epilogue_every_config(config, dtype, which, tma_launches):
    M, N, K = 1000, 520, 264  # ragged for every tile; 16-byte rows (TMA)
    a, b, ep, args, ref = epilogue_case(which, M, N, K, DTYPES[dtype], seed=11)
    out = poisoned((M, N), DTYPES[dtype])
    assert tk.matmul(a, b, out=out, epilogue=ep, epilogue_args=args, config=config) is out
    assert tma_launches == ["matmul_tma_epilogue_kernel"]
    assert_rel_err(out, ref, 1e-2, f"{which} {MM.matmul_config_name(config)} {dtype}")


@pytest.mark.parametrize("which", EPILOGUES)
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("shape", [(1000, 520, 264), (128, 256, 64), (129, 264, 72), (1, 256, 64), (2048, 2048, 512),
                                   (512, 128, 4096)], ids=lambda s: "x".join(map(str, s)))
def test_tma_epilogue_shapes(shape, dtype, which, tma_launches):
    """The default config (autotune=False: HOPPER_MATMUL_CONFIGS[0]) over ragged, tiny and deep shapes."""
    M, N, K = shape
    a, b, ep, args, ref = epilogue_case(which, M, N, K, DTYPES[dtype], seed=M + N + K)
    out = poisoned((M, N), DTYPES[dtype])
    tk.matmul(a, b, out=out, epilogue=ep, epilogue_args=args, autotune=False)
    assert tma_launches == ["matmul_tma_epilogue_kernel"]
    assert_rel_err(out, ref, 1e-2, f"{which} {shape} {dtype}")


def test_tma_epilogue_fp32_out_column_bias_and_transposed_residual(tma_launches):
    """The other operand kinds: a column (M, 1), a transposed fp32 residual, a scalar; fp32 C."""
    M, N, K = 1000, 520, 264
    torch.manual_seed(3)
    a = torch.randn((M, K), device="cuda").bfloat16()
    b = torch.randn((K, N), device="cuda").bfloat16()
    ab = a.double() @ b.double()
    col = torch.randn((M, 1), device="cuda").bfloat16()
    out = poisoned((M, N), torch.float32)
    tk.matmul(a, b, out=out, epilogue=ep_bias_gelu, epilogue_args=(col,), autotune=False)
    assert_rel_err(out, gelu64(ab + col.double()), 1e-3, "column bias, fp32 out")
    residual = torch.randn((N, M), device="cuda", dtype=torch.float32).t()
    out = poisoned((M, N), torch.float32)
    tk.matmul(a, b, out=out, epilogue=ep_residual_scale, epilogue_args=(residual, -2.0), config="128x128x64/w4/s3")
    assert_rel_err(out, ab * -2.0 + residual.double(), 1e-3, "transposed fp32 residual")
    assert tma_launches == ["matmul_tma_epilogue_kernel"] * 2


def test_tma_epilogue_is_the_kernel_that_runs(tma_launches):
    """Row-major operands: the composed matmul_tma_epilogue_kernel compiles and runs (its cache grows,
    the cp.async one's does not); tma=False, or a column-major b, runs matmul_epilogue_kernel."""
    M, N, K = 1000, 520, 264
    a, b, _, args, ref = epilogue_case("bias_gelu", M, N, K, torch.float16, seed=5)
    ep = ep_bias_gelu_fresh
    tma_kernel = tk.matmul_epilogue_autotuner(ep, tma=True).fn
    cp_async_kernel = tk.matmul_epilogue_autotuner(ep, tma=False).fn
    assert tma_kernel.__name__ == "matmul_tma_epilogue_kernel"
    assert cp_async_kernel.__name__ == "matmul_epilogue_kernel"

    def compiled():
        return tma_kernel.cache_info()["compiled"], cp_async_kernel.cache_info()["compiled"]
    before = compiled()
    out = poisoned((M, N), torch.float16)
    tk.matmul(a, b, out=out, epilogue=ep, epilogue_args=args, config="64x128x64/w4/s4")
    assert_rel_err(out, ref, 1e-2, "tma")
    assert tma_launches == ["matmul_tma_epilogue_kernel"]
    after_tma = compiled()
    assert after_tma[0] == before[0] + 1 and after_tma[1] == before[1], (before, after_tma)
    for kwargs, b_ in (({"tma": False}, b), ({}, b.t().contiguous().t())):  # the same product, column-major b
        out = poisoned((M, N), torch.float16)
        tk.matmul(a, b_, out=out, epilogue=ep, epilogue_args=args, config="64x128x64/w4/s4", **kwargs)
        assert_rel_err(out, ref, 1e-2, f"cp.async {kwargs}")
    assert tma_launches == ["matmul_tma_epilogue_kernel"]  # no other TMA launch
    after = compiled()
    assert after[0] == after_tma[0] and after[1] > after_tma[1], (after_tma, after)


def test_tma_epilogue_autotunes_every_config(tma_launches, monkeypatch):
    """Autotuned (the default): one autotuner per composed kernel, over the Hopper configs with the
    descriptors' pre_hook; every config compiles with its own blocks and is timed. A small problem
    (only tiles <= 128 kept by the pruning, none of the first config's shape) tunes too."""
    for name in ("TESSERA_MATMUL_AUTOTUNE", "TESSERA_AUTOTUNE"):
        monkeypatch.delenv(name, raising=False)
    tuner = tk.matmul_epilogue_autotuner(ep_bias_gelu)
    for M, N, K in ((1024, 1032, 520), (120, 128, 200)):  # keys no other test tunes
        a, b, ep, args, ref = epilogue_case("bias_gelu", M, N, K, torch.bfloat16, seed=M)
        out = poisoned((M, N), torch.bfloat16)
        tk.matmul(a, b, out=out, epilogue=ep, epilogue_args=args)
        assert_rel_err(out, ref, 1e-2, f"autotuned {M}x{N}x{K}")
        assert tuner.best_config in tuner.configs
        assert not tuner.failures, tuner.failures
        timed = [ms for ms in tuner.configs_timings.values() if ms is not None]
        kept = MM.prune_matmul_configs(tuner.configs, {"M": M, "N": N, "K": K}, NUM_SMS=MM._sm_count())
        assert len(timed) == len(kept) >= 2, \
            tuner.configs_timings
    assert tma_launches == ["matmul_tma_epilogue_kernel"] * 2
