"""kernels/matmul.py (tensor cores on sm_80+, cp.async pipelining) against
torch.matmul in float64: fp16/bf16 inputs, fp32 accumulation, ragged M/N/K
(not multiples of the block), 4 and 8 warps, num_stages 2-4, row- and
column-major operands (.t() views: only strides change). ||out - ref|| /
||ref|| <= 1e-2, outputs poisoned with NaN first.

Two ways in: the raw kernel (matmul_kernel[grid](...)) and the wrapper
tessera.kernels.matmul (python/tessera/kernels/matmul.py: argument checks,
output allocation, the configuration table MATMUL_CONFIGS, @tessera.autotune
keyed on M, N, K). Tensor cores are on by default; this module sets
TESSERA_MMA=1 explicitly (and the disk cache off, so every run compiles what
it tests, and autotuning results last for this process only)."""
import importlib
import os

import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402
import tessera.kernels as tk  # noqa: E402
from gpu_helpers import assert_rel_err, poisoned  # noqa: E402
from kernels.matmul import matmul_kernel  # noqa: E402

MM = importlib.import_module("tessera.kernels.matmul")  # the module (tk.matmul is the function)
CONFIGS = MM.MATMUL_CONFIGS + MM.HOPPER_MATMUL_CONFIGS  # every config runs on this GPU
CONFIG_NAMES = [MM.matmul_config_name(c) for c in CONFIGS]
RAGGED = (1000, 3000, 700)  # M, N, K

SHAPES = [(128, 128, 32), (256, 256, 256), (512, 384, 640), (1000, 777, 333), (129, 65, 17), (1, 300, 45), (2048, 2048, 512)]
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


@pytest.fixture(autouse=True, scope="module")
def tensor_cores():
    saved = {k: os.environ.get(k) for k in ("TESSERA_MMA", "TESSERA_CACHE")}
    os.environ["TESSERA_MMA"], os.environ["TESSERA_CACHE"] = "1", "0"
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def matmul(a, b, block=(128, 128, 32), num_warps=8, out_dtype=None, num_stages=None):
    M, K = a.shape
    _, N = b.shape
    c = poisoned((M, N), out_dtype or a.dtype)
    bm, bn, bk = block
    grid = (tessera.cdiv(M, bm) * tessera.cdiv(N, bn),)
    extra = {} if num_stages is None else {"num_stages": num_stages}
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
                        num_warps=num_warps, **extra)
    torch.cuda.synchronize()
    return c


def operands(M, N, K, dtype, a_major="row", b_major="row", seed=0):
    """Random A (M x K) and B (K x N); "col": a column-major view (the .t() of a contiguous
    K x M / N x K tensor), as a transposed operand arrives in practice."""
    torch.manual_seed(seed)
    d = DTYPES[dtype] if isinstance(dtype, str) else dtype
    a = torch.randn((M, K), device="cuda").to(d) if a_major == "row" else torch.randn((K, M), device="cuda").to(d).t()
    b = torch.randn((K, N), device="cuda").to(d) if b_major == "row" else torch.randn((N, K), device="cuda").to(d).t()
    return a, b


def reference(a, b):
    return a.double() @ b.double()


@pytest.mark.parametrize("dtype", list(DTYPES), ids=list(DTYPES))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("config", [((128, 128, 32), 8), ((64, 64, 32), 4), ((128, 64, 64), 4)],
                         ids=["128x128x32w8", "64x64x32w4", "128x64x64w4"])
def test_matmul(shape, dtype, config):
    M, N, K = shape
    torch.manual_seed(0)
    a = torch.randn((M, K), device="cuda").to(DTYPES[dtype])
    b = torch.randn((K, N), device="cuda").to(DTYPES[dtype])
    c = matmul(a, b, *config)
    ref = a.double() @ b.double()
    assert_rel_err(c, ref, 1e-2, f"matmul {shape} {dtype} {config}")


def test_matmul_fp32_output_and_transposed_b():
    a = torch.randn((300, 200), device="cuda").half()
    bt = torch.randn((150, 200), device="cuda").half()
    b = bt.t()  # K-major B: strides (1, 200)
    c = matmul(a, b, out_dtype=torch.float32)
    assert_rel_err(c, a.double() @ b.double(), 1e-2, "fp32 out, transposed b")


def test_matmul_runs_on_tensor_cores():
    a = torch.randn((256, 64), device="cuda").half()
    b = torch.randn((64, 256), device="cuda").half()
    c = torch.empty((256, 256), device="cuda").half()
    k = matmul_kernel.warmup(a, b, c, 256, 256, 64, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                             c.stride(0), c.stride(1), BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8,
                             num_warps=8, grid=(4,))
    ptx = k.asm["ptx"]
    if tessera._C.target_arch(0) == "sm_90a":  # Hopper: wgmma (docs/tensor-cores.md)
        assert "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16" in ptx
    else:
        assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in ptx and "ldmatrix" in ptx


# The three tensor-core paths on one GPU: mma.sync as sm_80 PTX, mma.sync on
# sm_90a (TESSERA_WGMMA=0), and wgmma on sm_90a; ragged shapes, both dtypes,
# row- and column-major B (the N-major and K-major wgmma tiles).
PATHS = [("sm_80", "1", "mma.sync.aligned.m16n8k16"), ("sm_90a", "0", "mma.sync.aligned.m16n8k16"),
         ("sm_90a", "1", "wgmma.mma_async")]
PATH_CONFIGS = [(128, 256, 64, 8, 4), (256, 128, 64, 8, 4), (128, 128, 64, 4, 3), (128, 128, 32, 4, 4),
                (64, 128, 64, 4, 4), (64, 64, 32, 4, 2)]


@pytest.mark.parametrize("target, wgmma, instruction", PATHS, ids=["sm_80", "sm_90a-mma.sync", "sm_90a-wgmma"])
@pytest.mark.parametrize("config", PATH_CONFIGS, ids=lambda c: "{}x{}x{}/w{}/s{}".format(*c))
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("b_major", ["row", "col"])
def test_tensor_core_paths(monkeypatch, target, wgmma, instruction, config, dtype, b_major):
    if target == "sm_90a" and tessera._C.target_arch(0) != "sm_90a":
        pytest.skip("needs a Hopper GPU (sm_90a)")
    monkeypatch.setenv("TESSERA_WGMMA", wgmma)
    bm, bn, bk, warps, stages = config
    if target == "sm_80":
        stages = min(stages, 3)  # 4 stages of 128x256x64 take 192 KiB, more than an sm_80 block has
    M, N, K = RAGGED
    t = DTYPES[dtype]
    a = torch.randn((M, K), device="cuda").to(t)
    b = torch.randn((K, N), device="cuda").to(t) if b_major == "row" else torch.randn((N, K), device="cuda").to(t).t()
    c = poisoned((M, N), t)
    sig = f"*{dtype}:16,*{dtype}:16,*{dtype}:16,i32,i32,i32,i32,i32,i32,i32,i32,i32"
    k = tessera.compile(matmul_kernel, signature=sig, num_warps=warps, num_stages=stages, target=target,
                        constexprs={"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8})
    assert instruction in k.asm["ptx"]
    k[(tessera.cdiv(M, bm) * tessera.cdiv(N, bn),)](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0),
                                                      b.stride(1), c.stride(0), c.stride(1))
    torch.cuda.synchronize()
    assert_rel_err(c, a.double() @ b.double(), 1e-2)


# ------------------------------------------------------------ the raw kernel, more

LAYOUTS = [("row", "row"), ("col", "row"), ("row", "col"), ("col", "col")]
LAYOUT_IDS = ["A_row-B_row", "A_col-B_row", "A_row-B_col", "A_col-B_col"]


@pytest.mark.parametrize("dtype", list(DTYPES), ids=list(DTYPES))
@pytest.mark.parametrize("layout", LAYOUTS, ids=LAYOUT_IDS)
def test_raw_kernel_layouts_ragged(layout, dtype):
    a, b = operands(*RAGGED, dtype, *layout)
    c = matmul(a, b, num_warps=4, num_stages=3)
    assert_rel_err(c, reference(a, b), 1e-2, f"raw kernel {RAGGED} {dtype} {layout}")


@pytest.mark.parametrize("dtype", list(DTYPES), ids=list(DTYPES))
@pytest.mark.parametrize("stages", [2, 3, 4])
def test_raw_kernel_num_stages(stages, dtype):
    a, b = operands(*RAGGED, dtype, seed=stages)
    c = matmul(a, b, num_warps=4, num_stages=stages)
    assert_rel_err(c, reference(a, b), 1e-2, f"num_stages={stages} {dtype}")


# ----------------------------------------------------- tessera.kernels.matmul

WRAPPER_SHAPES = [(512, 512, 512), (2048, 2048, 2048), (256, 1024, 128), (1024, 256, 640), RAGGED,
                  (129, 65, 17), (1, 300, 45)]


@pytest.fixture
def no_tuning(monkeypatch):
    monkeypatch.setenv("TESSERA_MATMUL_AUTOTUNE", "0")


@pytest.mark.parametrize("dtype", list(DTYPES), ids=list(DTYPES))
@pytest.mark.parametrize("layout", LAYOUTS, ids=LAYOUT_IDS)
@pytest.mark.parametrize("shape", WRAPPER_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_wrapper(no_tuning, shape, layout, dtype):
    M, N, K = shape
    a, b = operands(M, N, K, dtype, *layout)
    out = poisoned((M, N), a.dtype)
    assert tk.matmul(a, b, out=out) is out
    assert_rel_err(out, reference(a, b), 1e-2, f"tessera.kernels.matmul {shape} {dtype} {layout}")


@pytest.mark.parametrize("dtype", list(DTYPES), ids=list(DTYPES))
def test_wrapper_allocates_in_the_input_dtype(no_tuning, dtype):
    a, b = operands(300, 200, 100, dtype)
    c = tk.matmul(a, b)
    assert c.dtype == a.dtype and c.shape == (300, 200) and c.device == a.device and c.is_contiguous()
    assert_rel_err(c, reference(a, b), 1e-2, "allocated output")


def test_wrapper_fp32_out_strided_views_and_column_major_out(no_tuning):
    torch.manual_seed(1)
    big_a = torch.randn((2000, 900), device="cuda").half()
    big_b = torch.randn((700, 3000), device="cuda").half()
    a, b = big_a[::2, 100:800], big_b[:, ::3]  # 1000 x 700 (row stride 1800), 700 x 1000 (column stride 3)
    out = poisoned((1000, 1000), torch.float32)
    tk.matmul(a, b, out=out)
    assert_rel_err(out, reference(a, b), 1e-3, "fp32 out from strided views")
    out_t = poisoned((1000, 1000), torch.float16).t()  # column-major C
    tk.matmul(a, b.t().contiguous().t(), out=out_t)
    assert_rel_err(out_t, reference(a, b), 1e-2, "column-major out")


def test_wrapper_empty_and_k0(no_tuning):
    a, b = operands(0, 64, 32, "fp16")
    assert tk.matmul(a, b).shape == (0, 64)
    a, b = operands(64, 48, 0, "fp16")
    c = tk.matmul(a, b, out=poisoned((64, 48), torch.float16))
    assert (c == 0).all()


@pytest.mark.parametrize("dtype", list(DTYPES), ids=list(DTYPES))
@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_NAMES)
def test_every_table_config_ragged(config, dtype):
    """Each config of MATMUL_CONFIGS, forced, at 1000 x 3000 x 700 with B column-major (skipped
    only when the GPU has less shared memory per block than the config takes)."""
    a, b = operands(*RAGGED, dtype, "row", "col", seed=3)
    out = poisoned(RAGGED[:2], a.dtype)
    compiled = matmul_kernel.warmup(a, b, out, *RAGGED, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                    out.stride(0), out.stride(1), **config.all_kwargs(), grid=(1,))
    limit = tessera._C.device_properties(torch.cuda.current_device())["max_shared_mem"]
    if compiled.metadata.shared > limit:
        pytest.skip(f"{compiled.metadata.shared} bytes of shared memory > {limit} on this GPU")
    tk.matmul(a, b, out=out, config=config)
    assert_rel_err(out, reference(a, b), 1e-2, f"config {MM.matmul_config_name(config)} {dtype}")


def test_wrapper_autotunes(monkeypatch):
    monkeypatch.delenv("TESSERA_MATMUL_AUTOTUNE", raising=False)
    monkeypatch.delenv("TESSERA_AUTOTUNE", raising=False)
    for dtype in DTYPES:
        a, b = operands(*RAGGED, dtype, "row", "col", seed=5)
        out = poisoned(RAGGED[:2], a.dtype)
        tk.matmul(a, b, out=out)
        assert_rel_err(out, reference(a, b), 1e-2, f"autotuned {dtype}")
        tuner = tk.matmul_autotuner()
        assert tuner.best_config in CONFIGS
        timed = {MM.matmul_config_name(c): ms for c, ms in tuner.configs_timings.items() if ms is not None}
        assert len(timed) >= 2, (timed, tuner.failures)
        print(f"autotuned {RAGGED} {dtype}: best {MM.matmul_config_name(tuner.best_config)}; "
              + ", ".join(f"{k} {v:.3f} ms" for k, v in sorted(timed.items(), key=lambda kv: kv[1])))
    # The same key again: no new tuning.
    count = tuner.bench_count
    tk.matmul(a, b, out=out)
    assert tuner.bench_count == count


def test_wrapper_errors_on_real_tensors():
    a, b = operands(64, 32, 48, "fp16")
    with pytest.raises(TypeError, match=r"a has dtype float32, which matmul does not support yet \(tf32"):
        tk.matmul(a.float(), b.float())
    with pytest.raises(TypeError, match=r"b is a tensor on cpu; matmul needs CUDA tensors"):
        tk.matmul(a, b.cpu())
    with pytest.raises(ValueError, match=r"b must have K = 48 rows \(a is 64 x 48\), got shape \(32, 48\)"):
        tk.matmul(a, b.t())
    with pytest.raises(TypeError, match="a is float16 but b is bfloat16"):
        tk.matmul(a, b.bfloat16())
