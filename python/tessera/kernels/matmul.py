"""tessera.kernels.matmul(a, b, out=None): C = A @ B for 2-D torch CUDA tensors
on tensor cores (kernels/matmul.py: mma.sync m16n8k16, cp.async pipelining,
fp32 accumulation; docs/tensor-cores.md).

    import tessera.kernels as tk
    c = tk.matmul(a, b)                        # autotuned over MATMUL_CONFIGS per (M, N, K, dtypes)
    c = tk.matmul(a, b, autotune=False)        # the first (default) config, no tuning
    tk.matmul(a, b.t(), out=c)                 # any strides: row- or column-major A and B
    c = tk.matmul(a, b, config="128x256x64/w8/s3")
    c = tk.matmul(a, b, epilogue=bias_gelu, epilogue_args=(bias,))   # fused: gelu(a @ b + bias)

Inputs: both the same dtype, one of MATMUL_DTYPES' enabled entries (fp16 and
bf16 today; fp32 as tf32 and int8 -> int32 are listed but switched off until
the compiler lowers them to tensor cores: they raise a TypeError that names
what is supported). The output is allocated in the input dtype (int32 for
int8); `out=` may also be fp32 for fp16/bf16 inputs. Strides are passed to the
kernel as they are, so transposed views (column-major, `x.t()`) need no copy.

Configuration: MATMUL_CONFIGS is the table (block shape, GROUP_M, warps,
pipeline stages), ordered by measured speed (H200, 4096^3 fp16; the data is
bench/matmul_configs.py's). By default the choice is @tessera.autotune's,
keyed on (M, N, K) (and the tensors' dtypes): the first call for a new key
times every config that fits (tiles much larger than the problem are pruned
first) and stores the winner on disk (tessera/autotune.py; `tessera tune`).
autotune=False, or TESSERA_MATMUL_AUTOTUNE=0 in the environment, skips
tuning and takes the table's first config (matmul_configs(): HOPPER_MATMUL_CONFIGS on
sm_90a, 128x256x64 with 8 warps and 4 stages; else MATMUL_CONFIGS, 128x128x32/w4/s3);
TESSERA_AUTOTUNE=off takes the stored winner, else that first config.
`config=` forces one (a tessera.Config or "BMxBNxBK/wW/sS[/gG]").

On sm_90a, row-major A and B with 16-byte aligned rows are read through TMA
tensor descriptors (kernels/matmul.py's matmul_tma_kernel, with an epilogue
matmul_tma_epilogue_kernel; docs/tma.md); tma=False or TESSERA_MATMUL_TMA=0
takes the cp.async kernels.

interpret=True (or TESSERA_INTERPRET=1) with numpy arrays / torch CPU
tensors runs the kernel on the host interpreter instead (no GPU; tests).
"""
import collections
import re

from .. import _compose, _env, _ext, cdiv, next_power_of_2
from ..jit import compose, jit
from ..autotune import Config
from . import _files
from ._target import wgmma_target

_NAME = "tessera.kernels.matmul"


# ------------------------------------------------------------------ tables

def _config(bm, bn, bk, warps, stages, group_m=8):
    return Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": group_m},
                  num_warps=warps, num_stages=stages)


# The candidates, best first. TFLOP/s measured on an H200 at 4096^3 fp16 (cuBLAS: 760);
# bf16 measured about the same. The first is the default when tuning is off.
MATMUL_CONFIGS = (
    _config(128, 128, 32, 4, 3),   # 409
    _config(128, 128, 32, 4, 4),   # 409
    _config(128, 128, 64, 4, 3),   # 396
    _config(128, 256, 64, 8, 3),   # 393 (156 KiB of shared memory: skipped where it does not fit)
    _config(128, 256, 32, 8, 3),   # 340
    _config(128, 64, 64, 4, 3),    # 334
    _config(64, 128, 64, 4, 4),    # 333
    _config(256, 128, 32, 8, 3),   # 332
    _config(64, 64, 64, 4, 3),     # not timed at 4096: for small M x N, where 128-wide tiles leave SMs idle
)

# Hopper (sm_90a: wgmma, docs/tensor-cores.md), best first; TFLOP/s measured on an H200
# at 4096^3 bf16 (cuBLAS: 774) with the cp.async kernel, before ptxas stopped serialising
# the wgmmas (the first one now reaches 756 through TMA on an H100, cuBLAS 781; docs/tma.md).
# BLOCK_K = 64 (128-byte swizzle lines) and 4 stages let one wgmma group run across
# iterations; the smaller tiles are for small M x N.
HOPPER_MATMUL_CONFIGS = (
    _config(128, 256, 64, 8, 4),   # 593 (192 KiB of shared memory)
    _config(256, 128, 64, 8, 4),   # 576
    _config(256, 128, 64, 8, 3),   # 530
    _config(128, 256, 64, 8, 3),   # 525
    _config(128, 128, 64, 4, 3),   # 506
    _config(128, 128, 64, 4, 4),   # 467
    _config(64, 128, 64, 4, 4),    # not timed at 4096: small M x N
    _config(64, 64, 64, 4, 3),     # not timed at 4096: small M x N
)


# Extra candidates of the TMA epilogue autotuner only (tk.matmul(..., epilogue=) on sm_90a):
# tiles small enough for two or three CTAs per SM (<= 113 KiB of shared memory, registers for
# 2 x 256 or 3 x 128 threads), so that one CTA's epilogue -- ALU work the tensor cores wait for
# in a 1-CTA/SM kernel: bias + GELU is ~27 SASS instructions per output more than the plain
# store -- may run while another CTA's wgmmas keep them busy. ptxas -v, bias + GELU, fp16
# (tests/python/test_tma_ptx.py): 128x128x64/w8/s3 116 registers, 96 KiB (2 CTAs/SM);
# 128x128x32/w4/s4 168 registers, 64 KiB (3); no spills. 128x128x64/w4/s3 and 64x128x64/w4/s4
# of the table above also fit twice. At least 3 stages: with 2 the wgmmas cannot run across
# iterations (the pipeline pass makes them synchronous). Not timed yet (bench/fusion.py
# --gemm-configs).
HOPPER_EPILOGUE_EXTRA_CONFIGS = (
    _config(128, 128, 64, 8, 3),
    _config(128, 128, 32, 4, 4),
)


def matmul_configs():
    """The table for the current GPU: HOPPER_MATMUL_CONFIGS where dots run on wgmma
    (an sm_90a target, TESSERA_WGMMA not 0), else MATMUL_CONFIGS (mma.sync)."""
    return HOPPER_MATMUL_CONFIGS if wgmma_target() else MATMUL_CONFIGS

# Input dtype -> what the GEMM does with it. `outputs`: the dtypes `out` may have, the
# first being the one allocated; `acc`: the accumulator; `enabled`: lowered to tensor
# cores by this wrapper today. The compiler lowers fp32 (tf32, m16n8k8) and int8 (m16n8k32)
# dots to tensor cores; the wrapper still needs a configuration table measured for them (the
# 16-bit table spills with 4-byte elements) and, for int8, kernels/matmul.py's accumulator
# following `acc`.
DtypeRule = collections.namedtuple("DtypeRule", "outputs acc enabled why")
MATMUL_DTYPES = {
    "float16": DtypeRule(("float16", "float32"), "float32", True, "mma.sync m16n8k16"),
    "bfloat16": DtypeRule(("bfloat16", "float32"), "float32", True, "mma.sync m16n8k16"),
    "float32": DtypeRule(("float32",), "float32", False,
                         "tf32 (mma.sync m16n8k8) needs a configuration table of its own first"),
    "int8": DtypeRule(("int32",), "int32", False,
                      "int8 (mma.sync m16n8k32) needs an int32 accumulator in kernels/matmul.py first"),
}


def supported_dtypes():
    """The input dtypes matmul accepts now, in table order (e.g. ['float16', 'bfloat16'])."""
    return [name for name, rule in MATMUL_DTYPES.items() if rule.enabled]


_CONFIG_TEXT = re.compile(r"^(\d+)x(\d+)x(\d+)/w(\d+)/s(\d+)(?:/g(\d+))?(/pair)?(/persistent|/pingpong)?$")


def parse_matmul_config(text):
    """'128x128x32/w4/s3' (optionally '/g8' for GROUP_M, default 8; '/pair': PAIR_K, the
    block-scaled GEMM's two K blocks a step, tk.scaled_matmul; '/persistent': the epilogue
    kernel's persistent form, _persistent_epilogue_config, for this device; '/pingpong': that
    form with two consumer warpgroups of num_warps = 4 on alternate tiles, _pingpong_config)
    -> tessera.Config."""
    m = _CONFIG_TEXT.match(text.strip())
    if not m:
        raise ValueError(f"{_NAME}: config {text!r} is not of the form BMxBNxBK/wWARPS/sSTAGES[/gGROUP_M], "
                         "e.g. '128x128x32/w4/s3'")
    bm, bn, bk, warps, stages = (int(v) for v in m.groups()[:5])
    config = _config(bm, bn, bk, warps, stages, int(m.group(6) or 8))
    if m.group(7):
        config.kwargs["PAIR_K"] = True
    if m.group(8) == "/persistent":
        config = _persistent_epilogue_config(config)
    elif m.group(8) == "/pingpong":
        config = _pingpong_config(config)
    return config


def matmul_config_name(config):
    """The inverse of parse_matmul_config: '128x128x32/w4/s3' ('/gG' when GROUP_M != 8, '/pair'
    with PAIR_K)."""
    kw = config.kwargs
    text = f"{kw['BLOCK_M']}x{kw['BLOCK_N']}x{kw['BLOCK_K']}/w{config.num_warps}/s{config.num_stages}"
    return (text + (f"/g{kw['GROUP_M']}" if kw.get("GROUP_M", 8) != 8 else "") + ("/pair" if kw.get("PAIR_K") else "")
            + ("/pingpong" if kw.get("PINGPONG") else "/persistent" if kw.get("PERSISTENT") else ""))


def _as_config(config):
    if isinstance(config, Config):
        missing = {"BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M"} - set(config.kwargs)
        if missing:
            raise ValueError(f"{_NAME}: config {config} lacks {', '.join(sorted(missing))}")
        return config
    if isinstance(config, str):
        return parse_matmul_config(config)
    raise TypeError(f"{_NAME}: config must be a tessera.Config or a string like '128x128x32/w4/s3', "
                    f"not {type(config).__name__}")


def prune_matmul_configs(configs, named, **kwargs):
    """early_config_prune: drops configs whose tile is larger than the problem rounded up to
    a power of two (at least 16) in M or N, and persistent ones where every program would get one
    tile at most (no more tiles than NUM_SMS); if that drops all, keeps the smallest tiles."""
    m = max(16, next_power_of_2(named["M"]))
    n = max(16, next_power_of_2(named["N"]))
    sms = kwargs.get("NUM_SMS", named.get("NUM_SMS", 0))

    def worth_persisting(c):
        return cdiv(named["M"], c.kwargs["BLOCK_M"]) * cdiv(named["N"], c.kwargs["BLOCK_N"]) > sms
    kept = [c for c in configs if c.kwargs["BLOCK_M"] <= m and c.kwargs["BLOCK_N"] <= n
            and (not c.kwargs.get("PERSISTENT") or worth_persisting(c))]
    if kept:
        return kept
    smallest = min(c.kwargs["BLOCK_M"] * c.kwargs["BLOCK_N"] for c in configs)
    return [c for c in configs if c.kwargs["BLOCK_M"] * c.kwargs["BLOCK_N"] == smallest]


# ---------------------------------------------------------------- operands

class _Operand:
    """What matmul needs of an argument, from a torch tensor or a numpy array."""

    def __init__(self, x, name):
        self.x, self.name = x, name
        if type(x).__module__ == "numpy" and hasattr(x, "__array_interface__"):
            self.kind, self.device, self.device_text = "numpy", "cpu", "the host (a numpy array)"
            self.dtype = x.dtype.name
            self.shape = tuple(x.shape)
            if any(s % x.itemsize for s in x.strides):
                raise ValueError(f"{_NAME}: {name} has strides {x.strides} bytes, not multiples of its element size")
            self.strides = tuple(s // x.itemsize for s in x.strides)
        elif all(hasattr(x, attr) for attr in ("shape", "dtype", "device", "stride", "data_ptr")):
            self.kind = "torch"
            self.dtype = str(x.dtype).replace("torch.", "")
            self.shape = tuple(x.shape)
            self.strides = tuple(x.stride())
            self.device = getattr(x.device, "type", str(x.device))
            self.device_text = str(x.device) if not hasattr(x.device, "type") else _device_str(x.device)
        else:
            raise TypeError(f"{_NAME}: {name} must be a torch tensor, not {type(x).__module__}.{type(x).__name__}")

    def data_ptr(self):
        return self.x.__array_interface__["data"][0] if self.kind == "numpy" else self.x.data_ptr()

    def max_offset(self):
        return sum((size - 1) * abs(stride) for size, stride in zip(self.shape, self.strides) if size > 0)

    def numel(self):
        n = 1
        for s in self.shape:
            n *= s
        return n


def _device_str(device):
    index = getattr(device, "index", None)
    return device.type if index is None else f"{device.type}:{index}"


def _shape_str(shape):
    return "(" + ", ".join(str(s) for s in shape) + ")"


def _check(a, b, out, interpret):
    """The operands described and checked; (A, B, OUT-or-None, rule, M, N, K). One error per
    problem, naming the argument and the reason."""
    A, B = _Operand(a, "a"), _Operand(b, "b")
    O = None if out is None else _Operand(out, "out")
    ops = [x for x in (A, B, O) if x is not None]
    # Where: CUDA tensors on one device (or host arrays for the interpreter).
    for x in ops:
        if interpret and x.device == "cuda":
            raise TypeError(f"{_NAME}: interpret=True runs on the host, but {x.name} is on {x.device_text}")
        if not interpret and x.device != "cuda":
            what = "a numpy array" if x.kind == "numpy" else f"a tensor on {x.device_text}"
            raise TypeError(f"{_NAME}: {x.name} is {what}; matmul needs CUDA tensors (interpret=True, or "
                            "TESSERA_INTERPRET=1, runs it on the host interpreter instead)")
    for x in ops[1:]:
        if x.device_text != A.device_text:
            raise ValueError(f"{_NAME}: a is on {A.device_text} but {x.name} is on {x.device_text}; "
                             "all must be on one device")
    # Rank.
    for x in (A, B):
        if len(x.shape) != 2:
            raise ValueError(f"{_NAME}: {x.name} must be 2-D ({'M x K' if x is A else 'K x N'}), got shape "
                             f"{_shape_str(x.shape)} (batched and 1-D products are not supported)")
    # Dtypes: the table decides.
    supported = ", ".join(supported_dtypes())
    rule = MATMUL_DTYPES.get(A.dtype)
    if rule is None:
        raise TypeError(f"{_NAME}: a has dtype {A.dtype}, which matmul does not support (supported: {supported})")
    if not rule.enabled:
        raise TypeError(f"{_NAME}: a has dtype {A.dtype}, which matmul does not support yet ({rule.why}; "
                        f"supported: {supported})")
    if B.dtype != A.dtype:
        raise TypeError(f"{_NAME}: a is {A.dtype} but b is {B.dtype}; a and b must have the same dtype")
    # Shapes.
    (M, K), (K2, N) = A.shape, B.shape
    if K2 != K:
        raise ValueError(f"{_NAME}: b must have K = {K} rows (a is {M} x {K}), got shape {_shape_str(B.shape)}")
    if O is not None:
        if len(O.shape) != 2 or O.shape != (M, N):
            raise ValueError(f"{_NAME}: out must have shape ({M}, {N}) (M x N for a {M} x {K} and b {K} x {N}), "
                             f"got {_shape_str(O.shape)}")
        if O.dtype not in rule.outputs:
            raise TypeError(f"{_NAME}: out has dtype {O.dtype}; for {A.dtype} inputs it must be "
                            + " or ".join(rule.outputs))
        if any(st == 0 and size > 1 for size, st in zip(O.shape, O.strides)):
            raise ValueError(f"{_NAME}: out has a zero stride {O.strides} (several elements at one address)")
        if O.numel() and O.data_ptr() in (A.data_ptr(), B.data_ptr()):
            raise ValueError(f"{_NAME}: out must not share memory with a or b")
    # The kernel computes element offsets in 32 bits.
    for x in ops:
        if x.max_offset() >= 2 ** 31:
            raise ValueError(f"{_NAME}: {x.name} (shape {_shape_str(x.shape)}, strides {x.strides}) spans "
                             f"{x.max_offset() + 1} elements; the kernel's offsets are 32-bit (at most 2^31)")
    return A, B, O, rule, M, N, K


def _allocate(A, dtype, M, N):
    if A.kind == "numpy":
        import numpy as np
        return np.empty((M, N), dtype=np.dtype(dtype))
    if type(A.x).__module__.split(".")[0] != "torch":
        raise TypeError(f"{_NAME}: cannot allocate the output for a {type(A.x).__name__}; pass out=")
    import torch
    return torch.empty((M, N), dtype=getattr(torch, dtype), device=A.x.device)


# ----------------------------------------------------------------- kernels

_state = {}


def _kernel_module():
    return _files.load("matmul")


def _autotuner(kernel, configs):
    """@tessera.autotune over `configs` keyed on (M, N, K), tiles much larger than the problem pruned."""
    from ..autotune import autotune
    return autotune(configs=list(configs), key=["M", "N", "K"],
                    prune_configs_by={"early_config_prune": prune_matmul_configs})(kernel)


def matmul_autotuner():
    """The tessera.Autotuner over MATMUL_CONFIGS (keyed on M, N, K): .best_config is the
    config of its last launch, .configs_timings the timings of its last tuning."""
    if "autotuner" not in _state:
        _state["autotuner"] = _autotuner(_kernel_module().matmul_kernel, matmul_configs())
    return _state["autotuner"]


def matmul_last_autotuner():
    """The autotuner that served the last autotuned matmul without an epilogue:
    matmul_tma_autotuner() when it took the TMA kernel, else matmul_autotuner(); None before any."""
    return _state.get("last_autotuner")


# ------------------------------------------------------- TMA (Hopper) path

def _tma_block_shapes(nargs):
    """Config pre_hook of the TMA kernel (Triton's pattern): each config reads blocks of its own
    shape, so the descriptors' block_shape follows BLOCK_M/N/K (re-encoded when it changes)."""
    nargs["a_desc"].block_shape = (nargs["BLOCK_M"], nargs["BLOCK_K"])
    nargs["b_desc"].block_shape = (nargs["BLOCK_K"], nargs["BLOCK_N"])


def _tma_configs(extra=()):
    return [Config(c.kwargs, num_warps=c.num_warps, num_stages=c.num_stages, pre_hook=_tma_block_shapes)
            for c in HOPPER_MATMUL_CONFIGS + tuple(extra)]


def _uses_tma(A, B):
    """matmul_tma_kernel (matmul_tma_epilogue_kernel) applies: Hopper tables (sm_90a), torch
    operands that TMA can describe (row-major, rows 16-byte aligned), and TESSERA_MATMUL_TMA not 0."""
    if A.kind != "torch" or not _env.flag("TESSERA_MATMUL_TMA", default=True) or matmul_configs() is not HOPPER_MATMUL_CONFIGS:
        return False
    for x in (A, B):
        size = x.x.element_size()
        if x.strides[1] != 1 or (x.strides[0] * size) % 16 or x.data_ptr() % 16:
            return False
    return True


def matmul_tma_autotuner():
    """The tessera.Autotuner of matmul_tma_kernel over HOPPER_MATMUL_CONFIGS (keyed on M, N, K)."""
    if "tma_autotuner" not in _state:
        _state["tma_autotuner"] = _autotuner(_kernel_module().matmul_tma_kernel, _tma_configs())
    return _state["tma_autotuner"]


def _persistent_config(c, pre_hook=None):
    """c for matmul_tma_persistent_kernel with WARP_SPECIALIZE: a producer warpgroup runs one ring
    across the program's tiles, which stays allocated while a tile is stored, so tiles of
    128 x 256 take 3 stages (the store's 64 KB staging next to 4 stages passes the 227 KB)."""
    kw = c.kwargs
    stages = min(c.num_stages, 3) if kw["BLOCK_M"] * kw["BLOCK_N"] >= 128 * 256 else c.num_stages
    return Config(dict(kw, WARP_SPECIALIZE=True), num_warps=c.num_warps, num_stages=stages,
                  pre_hook=pre_hook or c.pre_hook)


def _sm_count():
    return _ext.require().device_properties(-1)["multiprocessor_count"]


def _persistent_epilogue_config(c, pre_hook=None):
    """c for matmul_tma_epilogue_kernel's persistent form: _persistent_config's producer warpgroup and
    stages, and NUM_SMS (the device's SM count, passed by matmul) programs looping over the tiles.
    While one tile's epilogue computes and stores, the producer's ring fills with the next tile's blocks."""
    p = _persistent_config(c, pre_hook)
    p.kwargs["PERSISTENT"] = True
    return p


def _pingpong_config(c, pre_hook=None):
    """c for the persistent kernels' ping-pong form (docs/tma.md): a producer warpgroup and two
    consumer warpgroups of c's num_warps (which must be 4) taking alternate tiles, so that one's
    epilogue runs while the other's wgmmas keep the tensor cores busy; launched with 12 warps.
    Each group holds one BLOCK_M x BLOCK_N tile and has its own epilogue scratch, so 128 x 128
    tiles (128 accumulator registers a thread) and 4 stages (128 KB of ring) fit."""
    if c.num_warps != 4:
        raise ValueError(f"{_NAME}: a '/pingpong' config has num_warps=4 (one consumer warpgroup a tile), "
                         f"not {c.num_warps}")
    p = _persistent_epilogue_config(c, pre_hook)
    p.kwargs["PINGPONG"] = True
    return p


# The ping-pong forms the TMA epilogue autotuner also times (sm_90a; docs/tma.md).
HOPPER_PINGPONG_CONFIGS = (
    _config(128, 128, 64, 4, 4),
)


def _one_tile_form(c):
    """c without _persistent_epilogue_config's and _pingpong_config's additions (its tiles, warps
    and stages)."""
    kw = {k: v for k, v in c.kwargs.items() if k not in ("PERSISTENT", "WARP_SPECIALIZE", "PINGPONG")}
    return Config(kw, num_warps=c.num_warps, num_stages=c.num_stages, pre_hook=c.pre_hook)


def _epilogue_tma_configs():
    """The TMA epilogue autotuner's candidates: one tile a program (HOPPER_MATMUL_CONFIGS and
    HOPPER_EPILOGUE_EXTRA_CONFIGS, whose 2-3 CTAs an SM overlap one CTA's epilogue with another's
    wgmmas), and the persistent form (_persistent_epilogue_config) of those with tiles of at
    least 128 x 128, which overlaps them within one CTA."""
    persistent = {}
    for c in HOPPER_MATMUL_CONFIGS + HOPPER_EPILOGUE_EXTRA_CONFIGS:
        if c.kwargs["BLOCK_M"] * c.kwargs["BLOCK_N"] >= 128 * 128:
            p = _persistent_epilogue_config(c, _tma_block_shapes)
            persistent.setdefault(matmul_config_name(p), p)
    # The ping-pong forms (HOPPER_PINGPONG_CONFIGS) only with TESSERA_MATMUL_PINGPONG=1 until they are
    # measured and checked on a GPU (tests/gpu/test_pingpong_gemm.py); a '/pingpong' config works either way.
    pingpong = [_pingpong_config(c, _tma_block_shapes) for c in HOPPER_PINGPONG_CONFIGS
                if _env.flag("TESSERA_MATMUL_PINGPONG", default=False)]
    return _tma_configs(HOPPER_EPILOGUE_EXTRA_CONFIGS) + list(persistent.values()) + pingpong


def matmul_tma_persistent_autotuner():
    """The tessera.Autotuner of matmul_tma_persistent_kernel over HOPPER_MATMUL_CONFIGS (keyed on M, N,
    K), each with a producer warpgroup (_persistent_config)."""
    if "tma_persistent_autotuner" not in _state:
        # Configs that differ only in stages past 3 become one (the first kept, in table order).
        by_name = {}
        for c in HOPPER_MATMUL_CONFIGS:
            p = _persistent_config(c, _tma_block_shapes)
            by_name.setdefault(matmul_config_name(p), p)
        if _env.flag("TESSERA_MATMUL_PINGPONG", default=False):  # as _epilogue_tma_configs
            for c in HOPPER_PINGPONG_CONFIGS:
                p = _pingpong_config(c, _tma_block_shapes)
                p.kwargs.pop("PERSISTENT")  # matmul_tma_persistent_kernel is persistent anyway
                by_name.setdefault(matmul_config_name(p), p)
        _state["tma_persistent_autotuner"] = _autotuner(_kernel_module().matmul_tma_persistent_kernel,
                                                        by_name.values())
    return _state["tma_persistent_autotuner"]


def _launch_tma(a, b, out, A, B, O, M, N, K, chosen, grid, kernel=None, tuner=None, extra=(), meta=None):
    """Launches a TMA kernel on descriptors of a and b: matmul_tma_kernel (autotuned by
    matmul_tma_autotuner()), or `kernel` / `tuner` with `extra` arguments after C's strides and
    the constexprs `meta` (the epilogue kernel). A forced config sets the blocks; else each
    config's pre_hook does."""
    from ..tensor_descriptor import TensorDescriptor
    first = (chosen or HOPPER_MATMUL_CONFIGS[0]).kwargs
    a_desc = TensorDescriptor(a, [M, K], [A.strides[0], 1], [first["BLOCK_M"], first["BLOCK_K"]])
    b_desc = TensorDescriptor(b, [K, N], [B.strides[0], 1], [first["BLOCK_K"], first["BLOCK_N"]])
    args = (a_desc, b_desc, out, M, N, K, O.strides[0], O.strides[1]) + tuple(extra)
    meta = meta or {}
    if chosen is None:
        if tuner is None:  # the plain kernel
            tuner = _state["last_autotuner"] = matmul_tma_autotuner()
        tuner[grid](*args, **meta)
    else:
        (kernel or _kernel_module().matmul_tma_kernel)[grid](*args, **meta, **chosen.all_kwargs())


def _interpreted_kernel():
    if "interpreted" not in _state:
        _state["interpreted"] = jit(_kernel_module().matmul_kernel.fn, interpret=True)
    return _state["interpreted"]


def _interpret_default():
    return _env.flag("TESSERA_INTERPRET")


MAX_EPILOGUE_ARGS = 4


def _epilogue_slots(epilogue_args, M, N, A):
    """Runtime arguments and constexprs for the epilogue kernels' four E slots (kernels/matmul.py's
    _epilogue_operand): a scalar is KIND 2; a tensor constant along M (a bias (N,) or (1, N)) is
    KIND 3, a row vector, and one constant along N ((M, 1)) KIND 4, a column, each loaded once per
    tile as a vector (which the fusion pass reloads in the accumulator's layout); others KIND 1."""
    if len(epilogue_args) > MAX_EPILOGUE_ARGS:
        raise ValueError(f"{_NAME}: at most {MAX_EPILOGUE_ARGS} epilogue_args, got {len(epilogue_args)}")
    args, meta = [], {"NUM_EPI": len(epilogue_args)}
    for i in range(MAX_EPILOGUE_ARGS):
        if i >= len(epilogue_args):
            args += [0, 0, 0]
            continue
        e = epilogue_args[i]
        if isinstance(e, (bool, int, float)):
            args += [e, 0, 0]
            meta[f"E{i}_KIND"] = 2
            continue
        E = _Operand(e, f"epilogue_args[{i}]")
        if E.kind != A.kind or E.device_text != A.device_text:
            raise ValueError(f"{_NAME}: epilogue_args[{i}] is on {E.device_text}, a on {A.device_text}")
        shape, strides = E.shape, E.strides
        if len(shape) > 2:
            raise ValueError(f"{_NAME}: epilogue_args[{i}] has shape {_shape_str(shape)}; epilogue tensors "
                             f"broadcast to ({M}, {N}) (at most 2-D)")
        shape = (1,) * (2 - len(shape)) + tuple(shape)
        strides = (0,) * (2 - len(strides)) + tuple(strides)
        for d, (size, want) in enumerate(zip(shape, (M, N))):
            if size not in (1, want):
                raise ValueError(f"{_NAME}: epilogue_args[{i}] of shape {_shape_str(E.shape)} does not broadcast "
                                 f"to ({M}, {N})")
        sm = 0 if shape[0] == 1 else strides[0]
        sn = 0 if shape[1] == 1 else strides[1]
        if E.max_offset() >= 2 ** 31:
            raise ValueError(f"{_NAME}: epilogue_args[{i}] spans more than 2^31 elements")
        args += [e, sm, sn]
        meta[f"E{i}_KIND"] = 3 if shape[0] == 1 else 4 if shape[1] == 1 else 1
    return args, meta


def _epilogue_kernel(epilogue, interpret, tma=False):
    """matmul_epilogue_kernel (with tma: matmul_tma_epilogue_kernel) composed with `epilogue`
    (tessera/_compose.py), its autotuner (one per composed kernel: over matmul_configs(), or the
    Hopper configs with the descriptors' pre_hook) and the constexpr naming the function."""
    base_key = "interpreted_epilogue" if interpret else "tma_epilogue" if tma else "epilogue"
    if base_key not in _state:
        module = _kernel_module()
        base = module.matmul_tma_epilogue_kernel if tma else module.matmul_epilogue_kernel
        if interpret:
            base = jit(base.fn, interpret=True)
        _state[base_key] = base
    jf = _compose.as_jit(epilogue)
    if jf is None:
        raise TypeError(f"{_NAME}: epilogue must be a @tessera.jit (or @tessera.elementwise) function, "
                        f"not {type(epilogue).__name__}")
    kernel = compose(_state[base_key], {"EPILOGUE": jf})
    tuners = _state.setdefault("epilogue_tuners", {})
    if not interpret and id(kernel) not in tuners:
        tuners[id(kernel)] = _autotuner(kernel, _epilogue_tma_configs() if tma else matmul_configs())
    return kernel, tuners.get(id(kernel)), jf.fn.__name__


def matmul_epilogue_autotuner(epilogue, tma=True):
    """The tessera.Autotuner of the epilogue kernel composed with `epilogue` (a @jit function):
    matmul_tma_epilogue_kernel's (tma=True; over _epilogue_tma_configs(): HOPPER_MATMUL_CONFIGS +
    HOPPER_EPILOGUE_EXTRA_CONFIGS, one tile a program, and persistent forms) or matmul_epilogue_kernel's
    (tma=False; over matmul_configs()). Its .fn is the composed kernel, .best_config the config of
    its last launch (None before any)."""
    return _epilogue_kernel(epilogue, False, tma)[1]


def matmul(a, b, out=None, *, epilogue=None, epilogue_args=(), config=None, autotune=None, interpret=None,
           tma=None, persistent=False):
    """C = a @ b for 2-D tensors a (M x K) and b (K x N) of one dtype (supported_dtypes()),
    any strides. Returns `out` (M x N; allocated in the input dtype when None).

    epilogue: a @tessera.jit function fused into the store stage, C = epilogue(acc, *args)
    with acc the fp32 tile and args the tiles of `epilogue_args` (tensors broadcast to
    M x N, e.g. a bias of shape (N,), a residual (M, N); any strides) or scalars, at most 4
    (docs/fusion.md). Its result is cast to C's dtype. On sm_90a the epilogue's autotuner also
    times persistent forms of the TMA kernel (one program an SM; the producer warpgroup's ring
    runs into the next tile while this tile's epilogue computes and stores).
    config: a tessera.Config or 'BMxBNxBK/wW/sS[/gG]' to force one; autotune: False for
    matmul_configs()[0] without tuning (default: on unless TESSERA_MATMUL_AUTOTUNE=0);
    interpret: run on the host interpreter (numpy arrays / CPU tensors; default from
    TESSERA_INTERPRET, only for host inputs). tma: False takes the cp.async kernel where the
    TMA one would apply (default: TMA on sm_90a for row-major operands, unless
    TESSERA_MATMUL_TMA=0; with or without an epilogue). persistent: True launches
    matmul_tma_persistent_kernel (as many programs as SMs, each looping over tiles, a producer
    warpgroup issuing the copies through one ring across them; the TMA path without an epilogue
    only, autotuned by matmul_tma_persistent_autotuner(); a config's 128 x 256 tiles take 3
    stages, _persistent_config)."""
    if interpret is None:
        host = _Operand(a, "a").device != "cuda"
        interpret = host and _interpret_default()
    A, B, O, rule, M, N, K = _check(a, b, out, bool(interpret))
    if out is None:
        out = _allocate(A, rule.outputs[0], M, N)
        O = _Operand(out, "out")
    if M == 0 or N == 0:
        return out
    if K == 0 and epilogue is None:  # a sum of nothing (no launch with zero-size, possibly null, inputs)
        if hasattr(out, "fill_"):
            out.fill_(0)
        else:
            out[...] = 0
        return out
    if config is not None:
        chosen = _as_config(config)
    elif interpret or not (_env.flag("TESSERA_MATMUL_AUTOTUNE", default=True) if autotune is None else autotune):
        chosen = MATMUL_CONFIGS[0] if interpret else matmul_configs()[0]
    else:
        chosen = None
    args = (a, b, out, M, N, K, A.strides[0], A.strides[1], B.strides[0], B.strides[1],
            O.strides[0], O.strides[1])

    def grid(meta):  # a persistent config launches at most one program an SM
        tiles = cdiv(M, meta["BLOCK_M"]) * cdiv(N, meta["BLOCK_N"])
        return (min(tiles, meta["NUM_SMS"]) if meta.get("PERSISTENT") else tiles,)
    # TMA (sm_90a, row-major operands): the descriptors need K > 0 and blocks of >= 32-byte rows.
    use_tma = (not interpret and tma is not False and K > 0 and _uses_tma(A, B)
               and (chosen is None or chosen.kwargs["BLOCK_K"] * A.x.element_size() >= 32))
    if chosen is not None and chosen.kwargs.get("PERSISTENT") and (epilogue is None or not use_tma):
        # A '/persistent' config: the epilogue kernel's persistent form needs the TMA path; without an
        # epilogue it names matmul_tma_persistent_kernel (persistent=True); else the same tiles, one a program.
        persistent = persistent or (epilogue is None and use_tma)
        pingpong = persistent and chosen.kwargs.get("PINGPONG")
        chosen = _one_tile_form(chosen)
        if pingpong:  # the plain persistent kernel's ping-pong form
            chosen = Config(dict(chosen.kwargs, PINGPONG=True), num_warps=chosen.num_warps,
                            num_stages=chosen.num_stages, pre_hook=chosen.pre_hook)
    if persistent and (not use_tma or epilogue is not None):
        raise ValueError(f"{_NAME}: persistent=True needs the TMA kernel (sm_90a, row-major 16-byte aligned "
                         "operands, K > 0, tma not False) and no epilogue")
    if epilogue is not None:
        slots, meta = _epilogue_slots(tuple(epilogue_args), M, N, A)
        kernel, tuner, name = _epilogue_kernel(epilogue, bool(interpret), use_tma)
        meta["EPILOGUE"] = name
        if use_tma:
            meta["NUM_SMS"] = _sm_count()  # for the persistent configs
            _launch_tma(a, b, out, A, B, O, M, N, K, chosen, grid, kernel, tuner, slots, meta)
            return out
        args = args + tuple(slots)
        if chosen is None:
            tuner[grid](*args, **meta)
        else:
            kernel[grid](*args, **meta, **chosen.all_kwargs())
        return out
    if epilogue_args:
        raise ValueError(f"{_NAME}: epilogue_args without an epilogue")
    if persistent:
        sms = _sm_count()

        def persistent_grid(meta):
            return (min(sms, grid(meta)[0]),)
        _launch_tma(a, b, out, A, B, O, M, N, K, chosen and _persistent_config(chosen), persistent_grid,
                    _kernel_module().matmul_tma_persistent_kernel,
                    None if chosen is not None else matmul_tma_persistent_autotuner(), meta={"NUM_SMS": sms})
        return out
    if use_tma:
        _launch_tma(a, b, out, A, B, O, M, N, K, chosen, grid)
        return out
    if chosen is None:
        _state["last_autotuner"] = matmul_autotuner()
        _state["last_autotuner"][grid](*args)
    else:
        kernel = _interpreted_kernel() if interpret else _kernel_module().matmul_kernel
        kernel[grid](*args, **chosen.all_kwargs())
    return out


__all__ = ["matmul", "MATMUL_CONFIGS", "HOPPER_MATMUL_CONFIGS", "HOPPER_EPILOGUE_EXTRA_CONFIGS", "HOPPER_PINGPONG_CONFIGS", "matmul_configs", "MATMUL_DTYPES", "supported_dtypes", "parse_matmul_config",
           "matmul_config_name", "matmul_autotuner", "matmul_tma_autotuner", "matmul_last_autotuner",
           "matmul_epilogue_autotuner", "matmul_tma_persistent_autotuner", "prune_matmul_configs"]
