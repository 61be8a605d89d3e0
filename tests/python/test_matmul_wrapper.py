"""tessera.kernels.matmul (python/tessera/kernels/matmul.py) without a GPU:
argument checking and its messages, the dtype and configuration tables, which
config a call launches (autotuned, first, forced), and -- on the host
interpreter -- that every config of the table computes C = A @ B (ragged
sizes, tensor-core and pipeline passes applied) and that the wrapper passes
the strides of row- and column-major operands; on an sm_90a table, which of the
TMA and cp.async kernels (with and without an epilogue) it launches, with which
descriptors and arguments, and that the TMA autotuners compile every config."""
import importlib
import subprocess

import numpy as np
import pytest

from conftest import PTXAS

import tessera  # noqa: E402
import tessera.language as tl  # noqa: E402

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")

tk = importlib.import_module("tessera.kernels")
mm = importlib.import_module("tessera.kernels.matmul")
CONFIGS = mm.MATMUL_CONFIGS
NAMES = [mm.matmul_config_name(c) for c in CONFIGS]


# --------------------------------------------------------------- fake tensors

class FakeTensor:
    """What matmul reads of a torch tensor (shape, stride(), dtype, device, data_ptr), with
    no torch: backed by a numpy array, or by nothing (shape/strides only) for checks that
    fail before any launch."""

    class Dtype:
        def __init__(self, name):
            self.name = name

        def __str__(self):
            return "torch." + self.name

    class Device:
        def __init__(self, text):
            self.type, _, index = text.partition(":")
            self.index = int(index) if index else (0 if self.type == "cuda" else None)

    def __init__(self, array=None, dtype=None, device="cuda", shape=None, strides=None, ptr=4096):
        self.array = array
        self.dtype = self.Dtype(dtype or array.dtype.name)
        self.device = self.Device(device)
        self.shape = tuple(array.shape if shape is None else shape)
        if strides is None:
            strides = ([s // array.itemsize for s in array.strides] if array is not None
                       else [int(np.prod(self.shape[i + 1:])) for i in range(len(self.shape))])
        self._strides = tuple(strides)
        self._ptr = ptr

    def stride(self):
        return self._strides

    def data_ptr(self):
        return self.array.__array_interface__["data"][0] if self.array is not None else self._ptr

    def element_size(self):
        return self.array.itemsize if self.array is not None else ITEMSIZE[self.dtype.name]


ITEMSIZE = {"float16": 2, "bfloat16": 2, "float32": 4, "int8": 1, "int32": 4}


def cuda(shape, dtype="float16", ptr=4096, strides=None, device="cuda:0"):
    return FakeTensor(None, dtype, device, shape, strides, ptr)


def bf16_bits(x):
    """float32 values exactly representable in bf16 -> their uint16 bit patterns."""
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32)
    assert not (bits & 0xFFFF).any()
    return (bits >> 16).astype(np.uint16)


def bf16_values(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def rel_err(c, ref):
    return np.linalg.norm(c.astype(np.float64) - ref) / np.linalg.norm(ref)


# --------------------------------------------------------------------- tables

def test_config_table_is_well_formed():
    assert NAMES[0] == "128x128x32/w4/s3"  # the default (tuning off)
    assert len(set(NAMES)) == len(NAMES), NAMES
    for c, name in zip(CONFIGS, NAMES):
        kw = c.kwargs
        assert set(kw) == {"BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M"}, name
        for key in ("BLOCK_M", "BLOCK_N", "BLOCK_K"):
            assert kw[key] >= 16 and kw[key] & (kw[key] - 1) == 0, f"{name}: {key} is not a power of two >= 16"
        assert kw["GROUP_M"] >= 1, name
        assert c.num_warps in (1, 2, 4, 8, 16), name
        # every warp gets whole m16n8 tiles of the block
        assert (kw["BLOCK_M"] // 16) * (kw["BLOCK_N"] // 8) % c.num_warps == 0, name
        assert 2 <= c.num_stages <= 4, name
        assert mm.parse_matmul_config(name) == c
    assert tk.MATMUL_CONFIGS is CONFIGS


def test_config_names_round_trip():
    c = mm.parse_matmul_config(" 64x128x64/w4/s4/g4 ")
    assert c.kwargs == {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 4}
    assert (c.num_warps, c.num_stages) == (4, 4)
    assert mm.matmul_config_name(c) == "64x128x64/w4/s4/g4"
    with pytest.raises(ValueError) as e:
        mm.parse_matmul_config("128x128/w4")
    assert str(e.value) == ("tessera.kernels.matmul: config '128x128/w4' is not of the form "
                            "BMxBNxBK/wWARPS/sSTAGES[/gGROUP_M], e.g. '128x128x32/w4/s3'")


def test_dtype_table():
    assert mm.supported_dtypes() == ["float16", "bfloat16"]
    assert set(mm.MATMUL_DTYPES) >= {"float16", "bfloat16", "float32", "int8"}
    assert mm.MATMUL_DTYPES["int8"].outputs[0] == "int32" and not mm.MATMUL_DTYPES["int8"].enabled
    assert mm.MATMUL_DTYPES["float32"].outputs[0] == "float32" and not mm.MATMUL_DTYPES["float32"].enabled
    for name, rule in mm.MATMUL_DTYPES.items():
        assert rule.outputs and rule.acc in ("float32", "int32") and rule.why, name


def test_switching_a_dtype_on_is_one_table_entry(monkeypatch):
    rule = mm.MATMUL_DTYPES["float32"]
    monkeypatch.setitem(mm.MATMUL_DTYPES, "float32", rule._replace(enabled=True))
    assert mm.supported_dtypes() == ["float16", "bfloat16", "float32"]
    A, B, O, r, M, N, K = mm._check(cuda((4, 8), "float32"), cuda((8, 2), "float32"), None, False)
    assert (M, N, K) == (4, 2, 8) and r.outputs[0] == "float32"


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("config", CONFIGS, ids=NAMES)
def test_table_configs_compile_for_tensor_cores(tmp_path, config, dtype):
    """Every config compiles to PTX with mma.sync and cp.async, within the shared memory of
    an sm_90 block (227 KiB); the default fits in 99 KiB (every sm_80+ part); ptxas takes it."""
    from kernels.matmul import matmul_kernel
    sig = f"*{dtype}:16,*{dtype}:16,*{dtype}:16,i32,i32,i32,i32,i32:1,i32,i32:1,i32,i32:1"
    k = tessera.compile(matmul_kernel, signature=sig, constexprs=config.kwargs, num_warps=config.num_warps,
                        num_stages=config.num_stages, target="sm_90a")
    ptx = k.asm["ptx"]
    ty = "f16" if dtype == "fp16" else "bf16"
    assert (f"mma.sync.aligned.m16n8k16.row.col.f32.{ty}.{ty}.f32" in ptx
            or f"wgmma.mma_async.sync.aligned.m64n{config.kwargs['BLOCK_N']}k16.f32.{ty}.{ty}" in ptx)
    assert "cp.async" in ptx
    assert k.metadata.shared <= 227 * 1024, k.metadata.shared
    if config is CONFIGS[0]:
        assert k.metadata.shared <= 99 * 1024, k.metadata.shared
    if dtype == "fp16":
        assert PTXAS.exists(), f"ptxas not found at {PTXAS}"
        (tmp_path / "k.ptx").write_text(ptx)
        proc = subprocess.run([str(PTXAS), "-arch=sm_90a", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")],
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr


def test_prune_keeps_tiles_that_fit_the_problem():
    def names(M, N):
        return [mm.matmul_config_name(c) for c in mm.prune_matmul_configs(list(CONFIGS), {"M": M, "N": N, "K": 64})]
    assert names(1000, 3000) == NAMES
    assert "256x128x32/w8/s3" not in names(100, 1000) and "128x256x64/w8/s3" in names(100, 1000)
    assert names(64, 64) == ["64x64x64/w4/s3"]
    assert names(1, 5) == ["64x64x64/w4/s3"]  # nothing fits: the smallest tiles


# ---------------------------------------------------------- the interpreter

@pytest.fixture
def all_passes(monkeypatch):
    """The interpreter runs the IR code generation sees (accelerate-dot, the cp.async
    pipeline with num_stages buffers); a fresh interpreted kernel so no cached
    specialisation without the passes is reused."""
    monkeypatch.setenv("TESSERA_INTERPRET_PASSES", "1")
    monkeypatch.setattr(mm, "_state", {})


@pytest.mark.parametrize("config", CONFIGS, ids=NAMES)
def test_table_configs_compute_the_product(all_passes, config):
    M, N, K = 150, 270, 100  # ragged for every tile: partial row, column and K blocks
    rng = np.random.default_rng(sum(config.kwargs.values()) + config.num_stages)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = tk.matmul(a, b, config=config, interpret=True)
    assert c.dtype == np.float16 and c.shape == (M, N)
    assert rel_err(c, a.astype(np.float64) @ b.astype(np.float64)) <= 1e-3


@pytest.mark.parametrize("config", [CONFIGS[0], CONFIGS[3]], ids=[NAMES[0], NAMES[3]])
def test_table_configs_bf16(all_passes, config):
    M, N, K = 140, 260, 90
    rng = np.random.default_rng(1)
    a = rng.integers(-16, 17, (M, K)).astype(np.float32) / 8  # exact in bf16
    b = rng.integers(-16, 17, (N, K)).astype(np.float32).T / 8
    out = np.full((M, N), 0xFFFF, np.uint16)  # NaN
    bt = bf16_bits(b.T)  # (N, K) contiguous: B column-major
    fb = FakeTensor(bt, "bfloat16", "cpu", shape=(K, N), strides=(1, K))
    tk.matmul(FakeTensor(bf16_bits(a), "bfloat16", "cpu"), fb, FakeTensor(out, "bfloat16", "cpu"), config=config,
              interpret=True)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert rel_err(bf16_values(out), ref) <= 1e-2


@pytest.mark.parametrize("a_major, b_major", [("row", "row"), ("col", "row"), ("row", "col"), ("col", "col")])
def test_layouts(a_major, b_major):
    M, N, K = 130, 200, 75
    rng = np.random.default_rng(3)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    if a_major == "col":
        a = np.asfortranarray(a)
    if b_major == "col":
        b = np.asfortranarray(b)
    c = tk.matmul(a, b, interpret=True)
    assert rel_err(c, ref) <= 1e-3


def test_strided_views_and_fp32_out():
    rng = np.random.default_rng(4)
    big_a = rng.standard_normal((100, 90)).astype(np.float16)
    big_b = rng.standard_normal((120, 80)).astype(np.float16)
    a, b = big_a[::2, 5:65], big_b[:60:1, ::3]  # row stride 180, column stride 3
    out = np.full((50, 27), np.nan, np.float32)
    got = tk.matmul(a, b, out, interpret=True)
    assert got is out
    assert rel_err(out, a.astype(np.float64) @ b.astype(np.float64)) <= 1e-5  # fp32 out: only fp32 sums


def test_out_column_major():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((40, 30)).astype(np.float16)
    b = rng.standard_normal((30, 50)).astype(np.float16)
    out = np.asfortranarray(np.full((40, 50), np.nan, np.float16))
    tk.matmul(a, b, out=out, interpret=True)
    assert rel_err(out, a.astype(np.float64) @ b.astype(np.float64)) <= 1e-3


def test_empty_dimensions():
    a = np.ones((0, 8), np.float16)
    b = np.ones((8, 5), np.float16)
    assert tk.matmul(a, b, interpret=True).shape == (0, 5)
    c = tk.matmul(np.ones((3, 0), np.float16), np.ones((0, 4), np.float16), interpret=True)
    assert c.shape == (3, 4) and (c == 0).all()  # K = 0: a sum of nothing


def test_interpret_from_environment(monkeypatch):
    monkeypatch.setenv("TESSERA_INTERPRET", "1")
    a = np.eye(16, dtype=np.float16)
    b = np.arange(16 * 16, dtype=np.float16).reshape(16, 16) / 256
    assert (tk.matmul(a, b) == b).all()


# ---------------------------------------------------------------- errors

def message(call):
    with pytest.raises((TypeError, ValueError)) as e:
        call()
    return f"{e.type.__name__}: {e.value}"


P = "tessera.kernels.matmul: "


def test_host_and_device_errors():
    a = np.zeros((4, 8), np.float16)
    b = np.zeros((8, 2), np.float16)
    assert message(lambda: tk.matmul(a, b)) == (
        "TypeError: " + P + "a is a numpy array; matmul needs CUDA tensors (interpret=True, or "
        "TESSERA_INTERPRET=1, runs it on the host interpreter instead)")
    assert message(lambda: tk.matmul(cuda((4, 8)), FakeTensor(b, device="cpu"))) == (
        "TypeError: " + P + "b is a tensor on cpu; matmul needs CUDA tensors (interpret=True, or "
        "TESSERA_INTERPRET=1, runs it on the host interpreter instead)")
    assert message(lambda: tk.matmul(cuda((4, 8)), cuda((8, 2)), interpret=True)) == (
        "TypeError: " + P + "interpret=True runs on the host, but a is on cuda:0")
    assert message(lambda: tk.matmul(cuda((4, 8)), cuda((8, 2), device="cuda:1"))) == (
        "ValueError: " + P + "a is on cuda:0 but b is on cuda:1; all must be on one device")
    assert message(lambda: tk.matmul([[1.0]], cuda((8, 2)))) == (
        "TypeError: " + P + "a must be a torch tensor, not builtins.list")


def test_rank_and_shape_errors():
    assert message(lambda: tk.matmul(cuda((2, 4, 8)), cuda((8, 2)))) == (
        "ValueError: " + P + "a must be 2-D (M x K), got shape (2, 4, 8) (batched and 1-D products are not supported)")
    assert message(lambda: tk.matmul(cuda((4, 8)), cuda((8,)))) == (
        "ValueError: " + P + "b must be 2-D (K x N), got shape (8) (batched and 1-D products are not supported)")
    assert message(lambda: tk.matmul(cuda((4, 8)), cuda((7, 2)))) == (
        "ValueError: " + P + "b must have K = 8 rows (a is 4 x 8), got shape (7, 2)")
    assert message(lambda: tk.matmul(cuda((4, 8)), cuda((8, 2)), cuda((2, 4)))) == (
        "ValueError: " + P + "out must have shape (4, 2) (M x N for a 4 x 8 and b 8 x 2), got (2, 4)")


def test_dtype_errors():
    assert message(lambda: tk.matmul(cuda((4, 8), "float32"), cuda((8, 2), "float32"))) == (
        "TypeError: " + P + "a has dtype float32, which matmul does not support yet (tf32 "
        "(mma.sync m16n8k8) needs a configuration table of its own first; supported: float16, bfloat16)")
    assert message(lambda: tk.matmul(cuda((4, 8), "int8"), cuda((8, 2), "int8"))) == (
        "TypeError: " + P + "a has dtype int8, which matmul does not support yet (int8 "
        "(mma.sync m16n8k32) needs an int32 accumulator in kernels/matmul.py first; supported: float16, bfloat16)")
    assert message(lambda: tk.matmul(cuda((4, 8), "float64"), cuda((8, 2), "float64"))) == (
        "TypeError: " + P + "a has dtype float64, which matmul does not support (supported: float16, bfloat16)")
    assert message(lambda: tk.matmul(cuda((4, 8), "float16"), cuda((8, 2), "bfloat16"))) == (
        "TypeError: " + P + "a is float16 but b is bfloat16; a and b must have the same dtype")
    assert message(lambda: tk.matmul(cuda((4, 8), "bfloat16"), cuda((8, 2), "bfloat16"), cuda((4, 2), "float16"))) == (
        "TypeError: " + P + "out has dtype float16; for bfloat16 inputs it must be bfloat16 or float32")


def test_out_and_size_errors():
    a, b = cuda((4, 8), ptr=4096), cuda((8, 2), ptr=8192)
    assert message(lambda: tk.matmul(a, b, cuda((4, 2), ptr=4096))) == (
        "ValueError: " + P + "out must not share memory with a or b")
    assert message(lambda: tk.matmul(a, b, cuda((4, 2), strides=(0, 1), ptr=1 << 20))) == (
        "ValueError: " + P + "out has a zero stride (0, 1) (several elements at one address)")
    assert message(lambda: tk.matmul(cuda((65536, 40000)), cuda((40000, 16)))) == (
        "ValueError: " + P + "a (shape (65536, 40000), strides (40000, 1)) spans 2621440000 elements; "
        "the kernel's offsets are 32-bit (at most 2^31)")


def test_config_argument_errors():
    a, b, out = cuda((4, 8)), cuda((8, 2)), cuda((4, 2), ptr=1 << 20)
    assert message(lambda: tk.matmul(a, b, out, config=3)) == (
        "TypeError: " + P + "config must be a tessera.Config or a string like '128x128x32/w4/s3', not int")
    assert message(lambda: tk.matmul(a, b, out, config=tessera.Config({"BLOCK_M": 64}))) == (
        "ValueError: " + P + "config BLOCK_M: 64, num_warps: 4, num_stages: 3 lacks BLOCK_K, BLOCK_N, GROUP_M")
    assert message(lambda: tk.matmul(cuda((4, 8)), cuda((8, 2)))) == (
        "TypeError: " + P + "cannot allocate the output for a FakeTensor; pass out=")


# ------------------------------------------------------------- dispatch

class Recorder:
    """Stands in for the kernel / the autotuner: records kernel[grid](*args, **kwargs)."""

    def __init__(self):
        self.calls = []

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.calls.append((grid, args, kwargs))


@pytest.fixture
def recorders(monkeypatch):
    kernel, tuner = Recorder(), Recorder()
    module = type("FakeKernels", (), {"matmul_kernel": kernel})
    monkeypatch.setattr(mm, "_kernel_module", lambda: module)
    monkeypatch.setattr(mm, "_state", {"autotuner": tuner})
    monkeypatch.delenv("TESSERA_MATMUL_AUTOTUNE", raising=False)
    return kernel, tuner


def test_default_is_autotuned_with_strides(recorders):
    kernel, tuner = recorders
    a = cuda((300, 200), strides=(1, 300))     # column-major A (a.t() of a 200 x 300 tensor)
    b = cuda((200, 500), ptr=1 << 20)
    out = cuda((300, 500), ptr=1 << 24)
    assert tk.matmul(a, b, out) is out
    assert not kernel.calls and len(tuner.calls) == 1
    grid, args, kwargs = tuner.calls[0]
    assert args[3:] == (300, 500, 200, 1, 300, 500, 1, 500, 1) and args[:3] == (a, b, out)
    assert kwargs == {}
    assert grid({"BLOCK_M": 128, "BLOCK_N": 128}) == (3 * 4,)
    assert grid({"BLOCK_M": 64, "BLOCK_N": 256}) == (5 * 2,)


@pytest.mark.parametrize("how", ["argument", "environment"])
def test_tuning_off_takes_the_first_config(recorders, monkeypatch, how):
    kernel, tuner = recorders
    a, b, out = cuda((64, 32)), cuda((32, 48), ptr=1 << 20), cuda((64, 48), ptr=1 << 24)
    if how == "environment":
        monkeypatch.setenv("TESSERA_MATMUL_AUTOTUNE", "0")
        tk.matmul(a, b, out)
    else:
        tk.matmul(a, b, out, autotune=False)
    assert not tuner.calls and len(kernel.calls) == 1
    grid, args, kwargs = kernel.calls[0]
    assert kwargs == {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 4, "num_stages": 3}
    assert grid(kwargs) == (1,)
    monkeypatch.setenv("TESSERA_MATMUL_AUTOTUNE", "0")
    tk.matmul(a, b, out, autotune=True)  # the argument wins over the environment
    assert len(tuner.calls) == 1


def test_forced_config(recorders):
    kernel, tuner = recorders
    tk.matmul(cuda((64, 32)), cuda((32, 48), ptr=1 << 20), cuda((64, 48), ptr=1 << 24), config="64x128x64/w4/s4")
    assert not tuner.calls
    assert kernel.calls[0][2] == {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 4,
                                  "num_stages": 4}


def test_empty_output_launches_nothing(recorders):
    kernel, tuner = recorders
    out = cuda((0, 48), ptr=1 << 24)
    assert tk.matmul(cuda((0, 32)), cuda((32, 48), ptr=1 << 20), out) is out
    assert not kernel.calls and not tuner.calls


def test_the_autotuner(monkeypatch):
    monkeypatch.setattr(mm, "_state", {})
    tuner = tk.matmul_autotuner()
    assert tuner is tk.matmul_autotuner()
    assert tuner.keys == ["M", "N", "K"] and tuner.configs == list(CONFIGS)
    assert tuner.early_config_prune is mm.prune_matmul_configs
    assert tuner.arg_names[:6] == ["a_ptr", "b_ptr", "c_ptr", "M", "N", "K"]
    named = {"a_ptr": cuda((10, 20)), "b_ptr": cuda((20, 30)), "c_ptr": cuda((10, 30)), "M": 10, "N": 30, "K": 20}
    assert tuner.tuning_key(named) == (10, 30, 20, "torch.float16", "torch.float16", "torch.float16")


# ------------------------------------------------------ TMA on sm_90a, with and without an epilogue

@tessera.jit
def ep_bias_gelu(acc, bias):
    y = acc + bias
    return 0.5 * y * (1.0 + tl.erf(y * 0.7071067811865476))


@pytest.fixture
def hopper(monkeypatch):
    """The wrapper as on an sm_90a GPU (the Hopper table), every launch recorded: the plain kernels
    and their autotuners, and the epilogue kernels by `tma` ({tma: (kernel, tuner)})."""
    rec = {name: Recorder() for name in ("kernel", "tuner", "tma_kernel", "tma_tuner")}
    module = type("FakeKernels", (), {"matmul_kernel": rec["kernel"], "matmul_tma_kernel": rec["tma_kernel"]})
    monkeypatch.setattr(mm, "_kernel_module", lambda: module)
    monkeypatch.setattr(mm, "_state", {"autotuner": rec["tuner"], "tma_autotuner": rec["tma_tuner"]})
    monkeypatch.setattr(mm, "matmul_configs", lambda: mm.HOPPER_MATMUL_CONFIGS)
    monkeypatch.setattr(mm, "_sm_count", lambda: 132)
    for name in ("TESSERA_MATMUL_AUTOTUNE", "TESSERA_MATMUL_TMA"):
        monkeypatch.delenv(name, raising=False)
    epilogue_kernels = {}

    def epilogue_kernel(epilogue, interpret, tma=False):
        assert not interpret
        kernel, tuner = epilogue_kernels.setdefault(tma, (Recorder(), Recorder()))
        return kernel, tuner, epilogue.fn.__name__
    monkeypatch.setattr(mm, "_epilogue_kernel", epilogue_kernel)
    return rec, epilogue_kernels


def gemm_operands(M=1000, N=520, K=264, dtype="bfloat16"):
    """Row-major a, b and out with 16-byte aligned rows and bases, and a bias (N,)."""
    return (cuda((M, K), dtype, ptr=1 << 12), cuda((K, N), dtype, ptr=1 << 22), cuda((M, N), dtype, ptr=1 << 26),
            cuda((N,), dtype, ptr=1 << 30))


def launches(rec, epilogue_kernels):
    """{which: number of launches} of everything recorded, which being a name or (tma, 'kernel'|'tuner')."""
    out = {name: len(r.calls) for name, r in rec.items() if r.calls}
    for tma, (kernel, tuner) in epilogue_kernels.items():
        out.update({(tma, what): len(r.calls) for what, r in (("kernel", kernel), ("tuner", tuner)) if r.calls})
    return out


def test_epilogue_takes_the_tma_kernel_on_hopper(hopper):
    """Row-major torch-like operands on sm_90a: the composed matmul_tma_epilogue_kernel's autotuner gets
    descriptors of A (M x K) and B (K x N), C, its strides, the epilogue slots and constexprs."""
    rec, epilogue_kernels = hopper
    M, N, K = 1000, 520, 264
    a, b, out, bias = gemm_operands(M, N, K)
    assert tk.matmul(a, b, out, epilogue=ep_bias_gelu, epilogue_args=(bias,)) is out
    assert launches(rec, epilogue_kernels) == {(True, "tuner"): 1}
    grid, args, kwargs = epilogue_kernels[True][1].calls[0]
    a_desc, b_desc = args[:2]
    assert isinstance(a_desc, tessera.TensorDescriptor) and isinstance(b_desc, tessera.TensorDescriptor)
    assert (tuple(a_desc.shape), tuple(a_desc.strides), tuple(a_desc.block_shape)) == ((M, K), (K, 1), (128, 64))
    assert (tuple(b_desc.shape), tuple(b_desc.strides), tuple(b_desc.block_shape)) == ((K, N), (N, 1), (64, 256))
    assert a_desc.base is a and b_desc.base is b
    assert args[2:] == (out, M, N, K, N, 1, bias, 0, 1) + (0,) * 9
    assert kwargs == {"EPILOGUE": "ep_bias_gelu", "NUM_EPI": 1, "E0_KIND": 3, "NUM_SMS": 132}
    assert grid({"BLOCK_M": 128, "BLOCK_N": 256}) == (8 * 3,)
    # A persistent config: one program an SM at most, so as many as there are tiles when fewer.
    assert grid({"BLOCK_M": 128, "BLOCK_N": 256, "PERSISTENT": True, "NUM_SMS": 132}) == (8 * 3,)
    assert grid({"BLOCK_M": 64, "BLOCK_N": 64, "PERSISTENT": True, "NUM_SMS": 132}) == (132,)
    # Each autotuning config's pre_hook gives the descriptors its blocks.
    for config in mm._tma_configs():
        kw = config.kwargs
        config.pre_hook({"a_desc": a_desc, "b_desc": b_desc, **config.all_kwargs()})
        assert tuple(a_desc.block_shape) == (kw["BLOCK_M"], kw["BLOCK_K"])
        assert tuple(b_desc.block_shape) == (kw["BLOCK_K"], kw["BLOCK_N"])
    # The plain GEMM on the same operands: the TMA kernel too.
    tk.matmul(a, b, out)
    assert launches(rec, epilogue_kernels) == {(True, "tuner"): 1, "tma_tuner": 1}


def test_pingpong_forced_configs_on_hopper(hopper, monkeypatch):
    """A '/pingpong' config: the epilogue kernel's persistent form with PINGPONG and 4 warps a group;
    without an epilogue (persistent=True or the config alone) matmul_tma_persistent_kernel's."""
    rec, epilogue_kernels = hopper
    a, b, out, bias = gemm_operands()
    tk.matmul(a, b, out, epilogue=ep_bias_gelu, epilogue_args=(bias,), config="128x128x64/w4/s4/pingpong")
    assert epilogue_kernels[True][0].calls[0][2] == {
        "EPILOGUE": "ep_bias_gelu", "NUM_EPI": 1, "E0_KIND": 3, "NUM_SMS": 132, "BLOCK_M": 128, "BLOCK_N": 128,
        "BLOCK_K": 64, "GROUP_M": 8, "WARP_SPECIALIZE": True, "PERSISTENT": True, "PINGPONG": True,
        "num_warps": 4, "num_stages": 4}
    persistent = Recorder()
    monkeypatch.setattr(mm, "_kernel_module", lambda: type("FakeKernels", (), {
        "matmul_tma_persistent_kernel": persistent, "matmul_tma_kernel": rec["tma_kernel"]}))
    for kw in ({"persistent": True}, {}):
        tk.matmul(a, b, out, config="128x128x64/w4/s4/pingpong", **kw)
        grid, args, kwargs = persistent.calls.pop()
        assert kwargs == {"NUM_SMS": 132, "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8,
                          "PINGPONG": True, "WARP_SPECIALIZE": True, "num_warps": 4, "num_stages": 4}, kw


def test_epilogue_forced_configs_on_hopper(hopper):
    rec, epilogue_kernels = hopper
    a, b, out, bias = gemm_operands()
    tk.matmul(a, b, out, epilogue=ep_bias_gelu, epilogue_args=(bias, 0.5), config="128x128x64/w4/s3")
    grid, args, kwargs = epilogue_kernels[True][0].calls[0]
    assert (tuple(args[0].block_shape), tuple(args[1].block_shape)) == ((128, 64), (64, 128))
    assert args[8:14] == (bias, 0, 1, 0.5, 0, 0)
    assert kwargs == {"EPILOGUE": "ep_bias_gelu", "NUM_EPI": 2, "E0_KIND": 3, "E1_KIND": 2, "NUM_SMS": 132,
                      "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 4, "num_stages": 3}
    tk.matmul(a, b, out, epilogue=ep_bias_gelu, epilogue_args=(bias,), config="128x128x64/w4/s3/persistent")
    assert epilogue_kernels[True][0].calls[1][2] == {
        "EPILOGUE": "ep_bias_gelu", "NUM_EPI": 1, "E0_KIND": 3, "NUM_SMS": 132, "BLOCK_M": 128, "BLOCK_N": 128,
        "BLOCK_K": 64, "GROUP_M": 8, "WARP_SPECIALIZE": True, "PERSISTENT": True, "num_warps": 4, "num_stages": 3}
    del epilogue_kernels[True][0].calls[1]
    # Operands TMA cannot describe (N = 521: rows of 1042 bytes): the cp.async kernel, which has one
    # form, takes the same tiles one a program.
    b_odd, out_odd, bias_odd = cuda((264, 521), "bfloat16", ptr=1 << 22), cuda((1000, 521), "bfloat16", ptr=1 << 26), \
        cuda((521,), "bfloat16", ptr=1 << 30)
    tk.matmul(a, b_odd, out_odd, epilogue=ep_bias_gelu, epilogue_args=(bias_odd,), config="128x128x64/w4/s3/persistent")
    odd = epilogue_kernels[False][0].calls.pop()[2]
    assert odd == {"EPILOGUE": "ep_bias_gelu", "NUM_EPI": 1, "E0_KIND": 3, "BLOCK_M": 128, "BLOCK_N": 128,
                   "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 4, "num_stages": 3}
    tk.matmul(a, b, out, epilogue=ep_bias_gelu, epilogue_args=(bias,), autotune=False)  # the table's first
    assert epilogue_kernels[True][0].calls[1][2]["BLOCK_N"] == 256
    # 8 bf16 columns are 16-byte rows: too narrow for a TMA box (>= 32 bytes), so cp.async.
    tk.matmul(a, b, out, epilogue=ep_bias_gelu, epilogue_args=(bias,), config="64x64x8/w4/s3")
    assert launches(rec, epilogue_kernels) == {(True, "kernel"): 2, (False, "kernel"): 1}
    assert epilogue_kernels[False][0].calls[0][1][:3] == (a, b, out)


@pytest.mark.parametrize("why", ["tma=False", "TESSERA_MATMUL_TMA=0", "column-major b", "odd N", "misaligned a",
                                 "K = 0"])
def test_epilogue_takes_cp_async_otherwise(hopper, monkeypatch, why):
    """tma=False, the environment, or operands TMA cannot describe: matmul_epilogue_kernel, with
    pointers and strides, the same slots."""
    rec, epilogue_kernels = hopper
    M, N, K = 1000, 520, 264
    a, b, out, bias = gemm_operands(M, N, K)
    kwargs = {}
    if why == "tma=False":
        kwargs["tma"] = False
    elif why == "TESSERA_MATMUL_TMA=0":
        monkeypatch.setenv("TESSERA_MATMUL_TMA", "0")
    elif why == "column-major b":
        b = cuda((K, N), "bfloat16", ptr=1 << 22, strides=(1, K))
    elif why == "odd N":  # 2 * 521 bytes per row of B: not a multiple of 16
        N = 521
        b, out, bias = (cuda((K, N), "bfloat16", ptr=1 << 22), cuda((M, N), "bfloat16", ptr=1 << 26),
                        cuda((N,), "bfloat16", ptr=1 << 30))
    elif why == "misaligned a":
        a = cuda((M, K), "bfloat16", ptr=(1 << 12) + 8)
    else:
        K = 0
        a, b = cuda((M, K), "bfloat16", ptr=1 << 12), cuda((K, N), "bfloat16", ptr=1 << 22)
    tk.matmul(a, b, out, epilogue=ep_bias_gelu, epilogue_args=(bias,), **kwargs)
    assert launches(rec, epilogue_kernels) == {(False, "tuner"): 1}
    grid, args, meta = epilogue_kernels[False][1].calls[0]
    B = mm._Operand(b, "b")
    assert args[:12] == (a, b, out, M, N, K, K, 1) + B.strides + (N, 1)
    assert args[12:15] == (bias, 0, 1) and meta == {"EPILOGUE": "ep_bias_gelu", "NUM_EPI": 1, "E0_KIND": 3}


def test_epilogue_operand_kinds():
    """Scalars are KIND 2; tensors constant along M (a bias) rows, KIND 3; constant along N columns,
    KIND 4; others tiles, KIND 1 -- each with its strides, 0 on broadcast dims."""
    M, N = 6, 10
    a = cuda((M, 4))
    cases = [(cuda((N,)), 3, 0, 1), (cuda((1, N)), 3, 0, 1), (cuda((N,), strides=(2,)), 3, 0, 2),
             (cuda((M, 1)), 4, 1, 0), (cuda((M, 1), strides=(1, M)), 4, 1, 0),
             (cuda((M, N)), 1, N, 1), (cuda((M, N), strides=(1, M)), 1, 1, M), (cuda(()), 3, 0, 0),
             (cuda((1, 1)), 3, 0, 0)]
    for e, kind, sm, sn in cases:
        args, meta = mm._epilogue_slots((e,), M, N, mm._Operand(a, "a"))
        assert meta == {"NUM_EPI": 1, "E0_KIND": kind} and args[:3] == [e, sm, sn], (e.shape, e.stride())
    args, meta = mm._epilogue_slots((1.5, cuda((1, N))), 1, N, mm._Operand(a, "a"))   # M = 1: a row too
    assert meta == {"NUM_EPI": 2, "E0_KIND": 2, "E1_KIND": 3} and args[:6] == [1.5, 0, 0, args[3], 0, 1]


def test_the_tma_epilogue_kernel_and_its_autotuner(monkeypatch):
    """The epilogue composed with matmul_tma_epilogue_kernel: one autotuner per composed kernel, over
    the Hopper configs with the descriptors' pre_hook; the cp.async one stays apart."""
    monkeypatch.setattr(mm, "_state", {})
    kernel, tuner, name = mm._epilogue_kernel(ep_bias_gelu, False, True)
    assert name == "ep_bias_gelu" and kernel.__name__ == "matmul_tma_epilogue_kernel"
    assert "def ep_bias_gelu(acc, bias):" in kernel.text and tuner.fn is kernel
    table = mm.HOPPER_MATMUL_CONFIGS + mm.HOPPER_EPILOGUE_EXTRA_CONFIGS
    assert [(c.kwargs, c.num_warps, c.num_stages) for c in tuner.configs[:len(table)]] == [
        (c.kwargs, c.num_warps, c.num_stages) for c in table]
    # Then the persistent forms of the tiles of at least 128 x 128 (128 x 256 with 3 stages, so
    # 256 x 128's two entries become one), each with a producer warpgroup.
    assert [mm.matmul_config_name(c) for c in tuner.configs[len(table):]] == [
        "128x256x64/w8/s3/persistent", "256x128x64/w8/s3/persistent", "128x128x64/w4/s3/persistent",
        "128x128x64/w4/s4/persistent", "128x128x64/w8/s3/persistent", "128x128x32/w4/s4/persistent"]
    assert all(c.kwargs["WARP_SPECIALIZE"] and c.pre_hook is mm._tma_block_shapes for c in tuner.configs[len(table):])
    # ... which the pruning drops where every program would get one tile at most: 2048^2 is 128
    # tiles of 128 x 256 (<= 132 SMs), 256 of 128 x 128.
    kept = mm.prune_matmul_configs(tuner.configs, {"M": 2048, "N": 2048, "K": 64}, NUM_SMS=132)
    assert [mm.matmul_config_name(c) for c in kept if c.kwargs.get("PERSISTENT")] == [
        "128x128x64/w4/s3/persistent", "128x128x64/w4/s4/persistent", "128x128x64/w8/s3/persistent",
        "128x128x32/w4/s4/persistent"]
    assert len(kept) == len(table) + 4
    assert mm.parse_matmul_config("128x128x64/w4/s3/persistent").kwargs["PERSISTENT"]
    # The ping-pong forms: two consumer warpgroups of 4 warps on alternate tiles (docs/tma.md),
    # timed only with TESSERA_MATMUL_PINGPONG=1 so far.
    pp = mm.parse_matmul_config("128x128x64/w4/s4/pingpong")
    assert pp.kwargs["PINGPONG"] and pp.kwargs["PERSISTENT"] and pp.kwargs["WARP_SPECIALIZE"] and pp.num_warps == 4
    assert mm.matmul_config_name(pp) == "128x128x64/w4/s4/pingpong"
    assert mm.matmul_config_name(mm._one_tile_form(pp)) == "128x128x64/w4/s4"
    with pytest.raises(ValueError, match="num_warps=4"):
        mm.parse_matmul_config("128x128x64/w8/s3/pingpong")
    monkeypatch.setenv("TESSERA_MATMUL_PINGPONG", "1")
    assert [mm.matmul_config_name(c) for c in mm._epilogue_tma_configs() if c.kwargs.get("PINGPONG")] == [
        "128x128x64/w4/s4/pingpong"]
    saved = mm._state.pop("tma_persistent_autotuner", None)
    last = mm.matmul_tma_persistent_autotuner().configs[-1]
    assert mm.matmul_config_name(last) == "128x128x64/w4/s4/pingpong" and "PERSISTENT" not in last.kwargs
    mm._state.pop("tma_persistent_autotuner")
    if saved is not None:
        mm._state["tma_persistent_autotuner"] = saved
    monkeypatch.delenv("TESSERA_MATMUL_PINGPONG")
    # The plain TMA GEMM keeps the table alone.
    assert [(c.kwargs, c.num_warps, c.num_stages) for c in mm.matmul_tma_autotuner().configs] == [
        (c.kwargs, c.num_warps, c.num_stages) for c in mm.HOPPER_MATMUL_CONFIGS]
    assert all(c.pre_hook is mm._tma_block_shapes for c in tuner.configs)
    assert tuner.keys == ["M", "N", "K"] and tuner.early_config_prune is mm.prune_matmul_configs
    assert tuner.arg_names[:10] == ["a_desc", "b_desc", "c_ptr", "M", "N", "K", "stride_cm", "stride_cn", "E0",
                                    "stride_e0m"]
    assert mm._epilogue_kernel(ep_bias_gelu, False, True)[:2] == (kernel, tuner)
    assert tk.matmul_epilogue_autotuner(ep_bias_gelu) is tuner
    cp_async = tk.matmul_epilogue_autotuner(ep_bias_gelu, tma=False)
    assert cp_async is not tuner and cp_async.fn.__name__ == "matmul_epilogue_kernel"
    assert not any(c.pre_hook for c in cp_async.configs)
    from tessera.kernels import _files
    assert _files.load("matmul").matmul_tma_epilogue_kernel._function_params() == {"EPILOGUE"}
    assert _files.load("matmul").matmul_tma_kernel._function_params() == frozenset()


@pytest.mark.parametrize("epilogue", [False, True])
def test_tma_autotuners_compile_every_config_with_its_blocks(monkeypatch, epilogue):
    """The autotuner compiles its configs before timing them; a TMA config's blocks are part of the
    signature (tensordesc<bf16[BM,BK]>), so each compiles after its pre_hook set them -- not with the
    blocks the descriptors were made with (which failed every config of another shape)."""
    monkeypatch.setattr(mm, "_state", {})
    M, N, K = 1024, 1024, 512
    a, b, out, bias = gemm_operands(M, N, K)
    from tessera.tensor_descriptor import TensorDescriptor
    a_desc = TensorDescriptor(a, [M, K], [K, 1], [128, 64])
    b_desc = TensorDescriptor(b, [K, N], [N, 1], [64, 256])
    args = (a_desc, b_desc, out, M, N, K, N, 1)
    meta = {}
    if epilogue:
        tuner = tk.matmul_epilogue_autotuner(ep_bias_gelu)
        args += (bias, 0, 1) + (0,) * 9
        meta = {"EPILOGUE": "ep_bias_gelu", "NUM_EPI": 1, "E0_KIND": 3}
    else:
        tuner = tk.matmul_tma_autotuner()
    assert tuner._compile_all(tuner.configs, args, meta) == {}
    last = tuner.configs[-1].kwargs
    assert tuple(a_desc.block_shape) == (last["BLOCK_M"], last["BLOCK_K"])
