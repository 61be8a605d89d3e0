"""tessera.kernels.scaled_matmul: the scaled fp8 GEMM C = (A * scale_a) @ (B * scale_b) + bias,
A and B float8_e4m3fn / float8_e5m2 (any pair), fp32 accumulation, C in out_dtype
(kernels/matmul.py's scaled_matmul_kernel, scaled_matmul_tma_kernel and
scaled_matmul_tma_persistent_kernel; on sm_90a fp8 wgmma, docs/tensor-cores.md).

    import tessera.kernels as tk
    c = tk.scaled_matmul(a, b, sa, sb, torch.bfloat16)             # per-tensor: sa, sb of one element
    c = tk.scaled_matmul(a, b, sa_rows, sb_cols, torch.bfloat16)   # (M, 1) and (1, N): per row / column
    c = tk.scaled_matmul(a, b, sa_blk, sb_blk, torch.bfloat16)     # (M, K/128) and (K/128, N/128): blocks
    c = tk.scaled_matmul(a, w.t(), sa, sb, torch.bfloat16, bias=bias, epilogue=gelu)

The scales are fp32 tensors; their shapes say the granularity (as torch._scaled_mm's do):
- one element each (per-tensor), or (M,) / (M, 1) for A's rows and (N,) / (1, N) for B's
  columns (mixed freely with per-tensor): dequantised A[m, k] = a[m, k] * sa[m],
  B[k, n] = b[k, n] * sb[n]; applied once to the fp32 tile after the K loop.
- blocks (DeepSeek-V3): sa of shape (M, ceil(K / 128)), one scale per row and 128 values of
  K (1 x 128), and sb of shape (ceil(K / 128), ceil(N / 128)), one per 128 x 128 block of B
  (either may also be one element): applied in the K loop, each 128-wide K step's fp32
  partial product scaled and added into the accumulator.
Any strides, so a weight's (N/128, K/128) scales are passed as `s.t()`.

bias: a vector of N (any float dtype), added after the scales; epilogue: a @tessera.jit
function fused into the store stage, C = epilogue(scaled + bias, *epilogue_args), as
tk.matmul's (docs/fusion.md).

Layouts: fp8 wgmma reads both operands K-major. A row-major A (K contiguous) and a
column-major B (b = w.t() for a row-major weight w of N x K: torch._scaled_mm's
convention) take the TMA kernel on sm_90a (A and B^T read through descriptors); other
strides take the cp.async kernel (a row-major B is staged transposed by the dot: correct,
slower).

Configuration, as tk.matmul's: @tessera.autotune over HOPPER_SCALED_MATMUL_CONFIGS (outer
scales) or HOPPER_BLOCK_SCALED_MATMUL_CONFIGS (blocks) on sm_90a, SCALED_MATMUL_CONFIGS and
BLOCK_SCALED_MATMUL_CONFIGS elsewhere (fp8 mma.sync on sm_89, widened to f16 on sm_80),
keyed on (M, N, K); autotune=False / TESSERA_MATMUL_AUTOTUNE=0 takes the table's first,
config= forces one. persistent=True: the TMA kernel as one program an SM with a producer
warpgroup (no epilogue). interpret=True (or TESSERA_INTERPRET=1) runs the cp.async kernel
on the host interpreter with numpy arrays (ml_dtypes' float8_e4m3fn / float8_e5m2).
"""
from .. import _compose, _env, _ext, cdiv
from ..autotune import Config
from ..jit import compose, jit
from . import _files
from ._target import wgmma_target
from .matmul import _Operand, _as_config, _config, _epilogue_slots, _shape_str, prune_matmul_configs

_NAME = "tessera.kernels.scaled_matmul"

FP8_DTYPES = ("float8_e4m3fn", "float8_e5m2")
OUT_DTYPES = ("bfloat16", "float16", "float32")
SCALE_BLOCK = 128  # the block scales' K (and B's N) extent: DeepSeek-V3's 1 x 128 and 128 x 128

# sm_90a, outer scales, best first (not timed yet: bench/matmul.py --scaled). BLOCK_K = 128: one
# 128-byte swizzle line of fp8, the bytes of tk.matmul's bf16 BLOCK_K = 64, so the same shared
# memory a stage. ptxas -v, e4m3 -> bf16 (tests/python/test_scaled_matmul.py): no spills.
HOPPER_SCALED_MATMUL_CONFIGS = (
    _config(128, 256, 128, 8, 4),   # 192 KiB of shared memory, as tk.matmul's first
    _config(128, 256, 128, 8, 3),
    _config(128, 128, 128, 8, 4),
    _config(128, 128, 128, 4, 3),
    _config(64, 128, 128, 4, 4),    # small M x N
)

def _paired(c):
    """c with PAIR_K: block scales two K blocks a step (kernels/matmul.py _paired_block_step)."""
    return Config(dict(c.kwargs, PAIR_K=True), num_warps=c.num_warps, num_stages=c.num_stages)


# sm_90a, block scales: each K step's partial product lives beside the accumulator (twice the
# registers of the outer kernel's tile), so 128 x 128 tiles at most; BLOCK_K = 128 = SCALE_BLOCK,
# one scale step a K step. The first takes two K blocks a step (PAIR_K, '/pair'): both partial
# products are issued before the first is promoted, which then runs under the second's wgmmas
# (wait_group 1; 224 registers, no spills); a stage holds both blocks (64 KiB), so 3 stages.
# Not timed yet against the unpaired 4-stage config after it (bench/matmul.py --fp8).
HOPPER_BLOCK_SCALED_MATMUL_CONFIGS = (
    _paired(_config(128, 128, 128, 8, 3)),
    _config(128, 128, 128, 8, 4),
    _config(128, 128, 128, 8, 3),
    _config(64, 128, 128, 4, 4),
)

# Elsewhere (fp8 mma.sync m16n8k32 on sm_89; on sm_80 the dot widens fp8 to f16).
SCALED_MATMUL_CONFIGS = (
    _config(128, 128, 64, 8, 3),
    _config(128, 128, 64, 4, 3),
    _config(64, 128, 64, 4, 3),
    _config(64, 64, 64, 4, 3),
)
BLOCK_SCALED_MATMUL_CONFIGS = (
    _config(128, 128, 64, 8, 3),
    _config(64, 128, 64, 4, 3),
    _config(64, 64, 64, 4, 3),
)


def scaled_matmul_configs(scaling="outer", bias=False, hopper=None, k_major_b=True):
    """The table for a scaling ("outer": per-tensor / row / column; "block") on the current GPU
    (hopper=None: the Hopper tables where dots run on wgmma) or the one named.
    With a bias, tiles at most 128 wide: the column scales and the bias, one register per column
    a thread holds each (64 of a 256-wide wgmma tile), beside its 128 accumulators spill.
    On Hopper a B that is not K-major (row-major: staged transposed by the dot, through
    registers) leaves room for 64 accumulators a thread at most, and for one K block a step."""
    hopper = wgmma_target() if hopper is None else hopper
    if scaling == "block":
        table = HOPPER_BLOCK_SCALED_MATMUL_CONFIGS if hopper else BLOCK_SCALED_MATMUL_CONFIGS
    else:
        table = HOPPER_SCALED_MATMUL_CONFIGS if hopper else SCALED_MATMUL_CONFIGS
    table = tuple(c for c in table if not bias or c.kwargs["BLOCK_N"] <= 128)
    if hopper and not k_major_b:  # PAIR_K's two staged B blocks spill there too
        table = tuple(c for c in table if c.kwargs["BLOCK_M"] * c.kwargs["BLOCK_N"] <= 64 * 32 * c.num_warps
                      and not c.kwargs.get("PAIR_K"))
    return table


def default_scaled_matmul_config(scaling, K, bias=False, hopper=None, k_major_b=True):
    """The config taken without autotuning: the table's first, except that a PAIR_K config
    (two K blocks a step) gives way to the next where K has an odd number of 128-blocks
    below 8: its last pair's second block is zeros, more than 1/8 of the wgmma work."""
    table = scaled_matmul_configs(scaling, bias, hopper, k_major_b)
    blocks = cdiv(K, SCALE_BLOCK)
    if table[0].kwargs.get("PAIR_K") and blocks % 2 and blocks < 8:
        return next((c for c in table if not c.kwargs.get("PAIR_K")), table[0])
    return table[0]


# ---------------------------------------------------------------- operands

def _dtype_name(dtype):
    """'bfloat16' for torch.bfloat16, numpy / ml_dtypes dtypes, or the name itself."""
    if isinstance(dtype, str):
        return dtype
    name = getattr(dtype, "name", None)  # numpy dtypes
    return name if isinstance(name, str) else str(dtype).replace("torch.", "")


def _scale_layout(S, rows, cols, blocks):
    """How a scale tensor reads: ('one' | 'vector' | 'block', stride along the first index,
    stride along the second). rows / cols: the outer shape ((M, 1) for A, (1, N) for B);
    blocks: the block shape."""
    if S.numel() == 1:
        return "one", 0, 0
    shape = S.shape
    strides = S.strides
    if len(shape) == 1 and shape[0] == max(rows, cols) and min(rows, cols) == 1:
        return ("vector",) + ((strides[0], 0) if rows > 1 else (0, strides[0]))
    if len(shape) == 2 and shape == (rows, cols):
        return "vector", strides[0] if rows > 1 else 0, strides[1] if cols > 1 else 0
    if len(shape) == 2 and shape == blocks:
        return "block", strides[0] if shape[0] > 1 else 0, strides[1] if shape[1] > 1 else 0
    return None, 0, 0


def _check_scales(scale_a, scale_b, A, M, N, K):
    """(SCALING, stride_sam, stride_sak, stride_sbk, stride_sbn, SA, SB): the granularity the
    shapes give, or one error naming the shapes accepted."""
    kb, nb = cdiv(K, SCALE_BLOCK), cdiv(N, SCALE_BLOCK)
    SA, SB = _Operand(scale_a, "scale_a"), _Operand(scale_b, "scale_b")
    for S in (SA, SB):
        if S.dtype != "float32":
            raise TypeError(f"{_NAME}: {S.name} has dtype {S.dtype}; scales are float32")
        if S.kind != A.kind or S.device_text != A.device_text:
            raise ValueError(f"{_NAME}: {S.name} is on {S.device_text}, a on {A.device_text}")
    ka, sam, sak = _scale_layout(SA, M, 1, (M, kb))
    kbk, sbk, sbn = _scale_layout(SB, 1, N, (kb, nb))
    if ka in ("one", "vector") and kbk in ("one", "vector"):
        # (M, 1) rows: the first stride; A's K stride is 0. B's (1, N) columns: the second.
        return "outer", sam, 0, 0, sbn, SA, SB
    if ka in ("one", "block") and kbk in ("one", "block"):
        return "block", sam, sak, sbk, sbn, SA, SB
    raise ValueError(
        f"{_NAME}: scale_a of shape {_shape_str(SA.shape)} and scale_b of shape {_shape_str(SB.shape)} do not "
        f"name one scaling for a {M} x {K} a and a {K} x {N} b: per-tensor (one element each), per-row / "
        f"per-column (scale_a ({M}, 1) or ({M},), scale_b (1, {N}) or ({N},)), or blocks of {SCALE_BLOCK} "
        f"(scale_a ({M}, {kb}): 1 x {SCALE_BLOCK}; scale_b ({kb}, {nb}): {SCALE_BLOCK} x {SCALE_BLOCK})")


def _check(a, b, interpret):
    A, B = _Operand(a, "a"), _Operand(b, "b")
    for x in (A, B):
        if interpret and x.device == "cuda":
            raise TypeError(f"{_NAME}: interpret=True runs on the host, but {x.name} is on {x.device_text}")
        if not interpret and x.device != "cuda":
            what = "a numpy array" if x.kind == "numpy" else f"a tensor on {x.device_text}"
            raise TypeError(f"{_NAME}: {x.name} is {what}; scaled_matmul needs CUDA tensors (interpret=True, or "
                            "TESSERA_INTERPRET=1, runs it on the host interpreter instead)")
        if len(x.shape) != 2:
            raise ValueError(f"{_NAME}: {x.name} must be 2-D ({'M x K' if x is A else 'K x N'}), got shape "
                             f"{_shape_str(x.shape)}")
        if x.dtype not in FP8_DTYPES:
            raise TypeError(f"{_NAME}: {x.name} has dtype {x.dtype}; scaled_matmul takes {' or '.join(FP8_DTYPES)} "
                            "(tk.matmul takes float16 / bfloat16)")
    if B.device_text != A.device_text:
        raise ValueError(f"{_NAME}: a is on {A.device_text} but b is on {B.device_text}; both must be on one device")
    (M, K), (K2, N) = A.shape, B.shape
    if K2 != K:
        raise ValueError(f"{_NAME}: b must have K = {K} rows (a is {M} x {K}), got shape {_shape_str(B.shape)}")
    for x in (A, B):
        if x.max_offset() >= 2 ** 31:
            raise ValueError(f"{_NAME}: {x.name} spans more than 2^31 elements; the kernel's offsets are 32-bit")
    return A, B, M, N, K


def _check_bias(bias, A, N):
    """(bias pointer argument, its stride, HAS_BIAS)."""
    if bias is None:
        return 0, 0, False
    X = _Operand(bias, "bias")
    if X.kind != A.kind or X.device_text != A.device_text:
        raise ValueError(f"{_NAME}: bias is on {X.device_text}, a on {A.device_text}")
    if X.shape not in ((N,), (1, N)):
        raise ValueError(f"{_NAME}: bias must have shape ({N},) (one value per column of C), got "
                         f"{_shape_str(X.shape)}")
    if X.dtype not in OUT_DTYPES:
        raise TypeError(f"{_NAME}: bias has dtype {X.dtype}; it must be one of {', '.join(OUT_DTYPES)}")
    return bias, X.strides[-1], True


def _allocate(A, dtype, M, N):
    if A.kind == "numpy":
        import numpy as np
        return np.empty((M, N), dtype=np.float32 if dtype == "float32" else np.float16 if dtype == "float16"
                        else _ml_bfloat16())
    import torch
    return torch.empty((M, N), dtype=getattr(torch, dtype), device=A.x.device)


def _ml_bfloat16():
    import ml_dtypes
    return ml_dtypes.bfloat16


# ----------------------------------------------------------------- kernels

_state = {}


def _kernels():
    return _files.load("matmul")


def _autotuner(kernel, configs):
    from ..autotune import autotune
    return autotune(configs=list(configs), key=["M", "N", "K", "SCALING", "HAS_BIAS"],
                    prune_configs_by={"early_config_prune": prune_matmul_configs})(kernel)


def _tma_block_shapes(nargs):
    """Config pre_hook of the TMA kernels: the descriptors' blocks follow BLOCK_M/N/K."""
    nargs["a_desc"].block_shape = (nargs["BLOCK_M"], nargs["BLOCK_K"])
    nargs["bt_desc"].block_shape = (nargs["BLOCK_N"], nargs["BLOCK_K"])


def _with_hook(configs, hook):
    return [Config(c.kwargs, num_warps=c.num_warps, num_stages=c.num_stages, pre_hook=hook) for c in configs]


def _persistent(c, hook=None, out_bytes=2):
    """c for the persistent kernel (producer warpgroup, one ring across tiles that stays allocated
    while a tile is stored): as many of c's stages as fit beside the stored tile of `out_bytes`
    elements (128 x 256 tiles take 3 stages with a 16-bit C, as tk.matmul's _persistent_config);
    None where not even 2 fit (a 128 x 256 fp32 tile)."""
    stages = c.num_stages
    while stages >= 2 and _persistent_shared_bytes(c.kwargs, stages, out_bytes) > _SM90_SHARED_BYTES:
        stages -= 1
    return _with_producer(c, stages, hook) if stages >= 2 else None


def _with_producer(c, stages, hook=None):
    return Config(dict(c.kwargs, WARP_SPECIALIZE=True), num_warps=c.num_warps, num_stages=stages,
                  pre_hook=hook or c.pre_hook)


_SM90_SHARED_BYTES = 232448  # opt-in shared memory a block on sm_90


def _persistent_shared_bytes(kw, stages, out_bytes):
    """The persistent kernel's shared memory: each stage holds the A and B^T blocks (two K blocks
    with PAIR_K) and its two 8-byte barriers; the C tile is staged with 8 elements of padding a
    row. tests/python/test_scaled_matmul.py checks this against the compiler."""
    stage = (kw["BLOCK_M"] + kw["BLOCK_N"]) * kw["BLOCK_K"] * (2 if kw.get("PAIR_K") else 1) + 16
    return stages * stage + kw["BLOCK_M"] * (kw["BLOCK_N"] + 8) * out_bytes


def scaled_matmul_autotuner(scaling="outer", tma=True, persistent=False, epilogue=None, bias=False, k_major_b=True):
    """The tessera.Autotuner scaled_matmul uses for a scaling ("outer" or "block"): of the TMA
    kernel (tma=True; persistent: its persistent form) or the cp.async kernel, composed with
    `epilogue` when given, with or without a bias, for a K-major (column-major) B or not.
    .best_config is the config of its last launch."""
    return _kernel_and_tuner(scaling, tma, persistent, epilogue, False, bias, k_major_b)[1]


def _kernel_and_tuner(scaling, tma, persistent, epilogue, interpret, bias=False, k_major_b=True):
    module = _kernels()
    base = (module.scaled_matmul_tma_persistent_kernel if persistent else
            module.scaled_matmul_tma_kernel if tma else module.scaled_matmul_kernel)
    if interpret:
        base = _state.setdefault("interpreted", jit(module.scaled_matmul_kernel.fn, interpret=True))
    kernel, name = base, None
    if epilogue is not None:
        jf = _compose.as_jit(epilogue)
        if jf is None:
            raise TypeError(f"{_NAME}: epilogue must be a @tessera.jit (or @tessera.elementwise) function, "
                            f"not {type(epilogue).__name__}")
        kernel, name = compose(base, {"EPILOGUE": jf}), jf.fn.__name__
    if interpret:
        return kernel, None, name
    key = (id(kernel), scaling, bias, k_major_b)
    tuners = _state.setdefault("tuners", {})
    if key not in tuners:
        configs = scaled_matmul_configs(scaling, bias, k_major_b=k_major_b)
        if persistent:
            by_name = {}
            for c in configs:  # sized for a 16-bit C: with fp32, configs that do not fit time as inf
                p = _persistent(c, _tma_block_shapes)
                if p is not None:
                    by_name.setdefault((tuple(sorted(p.kwargs.items())), p.num_warps, p.num_stages), p)
            configs = list(by_name.values())
        elif tma:
            configs = _with_hook(configs, _tma_block_shapes)
        tuners[key] = _autotuner(kernel, configs)
    return kernel, tuners[key], name


def _uses_tma(A, B, K):
    """The TMA kernel applies: sm_90a tables, torch operands, A row-major and B column-major
    (both K-major, as fp8 wgmma reads them), rows 16-byte aligned, TESSERA_MATMUL_TMA not 0."""
    if A.kind != "torch" or K == 0 or not _env.flag("TESSERA_MATMUL_TMA", default=True) or not wgmma_target():
        return False
    if A.strides[1] != 1 or A.strides[0] % 16 or A.data_ptr() % 16 or (A.shape[0] > 1 and A.strides[0] < K):
        return False
    return not (B.strides[0] != 1 or B.strides[1] % 16 or B.data_ptr() % 16 or (B.shape[1] > 1 and B.strides[1] < K))


def scaled_matmul(a, b, scale_a, scale_b, out_dtype=None, bias=None, epilogue=None, *, epilogue_args=(), out=None,
                  config=None, autotune=None, interpret=None, tma=None, persistent=False):
    """C = (a * scale_a) @ (b * scale_b) + bias for fp8 a (M x K) and b (K x N) and fp32 scales
    (the module's docstring says which shapes mean which granularity); out_dtype: torch.bfloat16
    (the default), torch.float16 or torch.float32 (or its name). Returns C (M x N), or `out`.

    epilogue / epilogue_args: as tk.matmul's (a @jit function on the fp32 tile, after scales and
    bias). config: a tessera.Config or 'BMxBNxBK/wW/sS[/gG]'; autotune: False for the table's
    first config; tma: False keeps the cp.async kernel where the TMA one applies; persistent:
    the persistent TMA kernel (needs the TMA layouts, no epilogue)."""
    if interpret is None:
        interpret = _Operand(a, "a").device != "cuda" and _env.flag("TESSERA_INTERPRET")
    interpret = bool(interpret)
    A, B, M, N, K = _check(a, b, interpret)
    scaling, sam, sak, sbk, sbn, SA, SB = _check_scales(scale_a, scale_b, A, M, N, K)
    bias_arg, stride_bias, has_bias = _check_bias(bias, A, N)
    if out is None:
        name = _dtype_name(out_dtype) if out_dtype is not None else "bfloat16"
        if name not in OUT_DTYPES:
            raise TypeError(f"{_NAME}: out_dtype {name} is not one of {', '.join(OUT_DTYPES)}")
        out = _allocate(A, name, M, N)
    O = _Operand(out, "out")
    if O.shape != (M, N) or O.dtype not in OUT_DTYPES:
        raise ValueError(f"{_NAME}: out must be ({M}, {N}) of {', '.join(OUT_DTYPES)}, got "
                         f"{_shape_str(O.shape)} {O.dtype}")
    if M == 0 or N == 0:
        return out
    if K == 0 and epilogue is None and not has_bias:
        if hasattr(out, "fill_"):
            out.fill_(0)
        else:
            out[...] = 0
        return out
    k_major_b = B.strides[0] == 1 or K == 1  # K contiguous: buffered K-major (cp.async or TMA)
    if config is not None:
        chosen = _as_config(config)
    elif interpret or not (_env.flag("TESSERA_MATMUL_AUTOTUNE", default=True) if autotune is None else autotune):
        chosen = (BLOCK_SCALED_MATMUL_CONFIGS if scaling == "block" else SCALED_MATMUL_CONFIGS)[0] if interpret \
            else default_scaled_matmul_config(scaling, K, has_bias, k_major_b=k_major_b)
    else:
        chosen = None
    if scaling == "block" and chosen is not None and SCALE_BLOCK % chosen.kwargs["BLOCK_K"]:
        raise ValueError(f"{_NAME}: block scales need BLOCK_K dividing {SCALE_BLOCK}, config has "
                         f"BLOCK_K = {chosen.kwargs['BLOCK_K']}")
    use_tma = not interpret and tma is not False and _uses_tma(A, B, K)
    if persistent and (not use_tma or epilogue is not None):
        raise ValueError(f"{_NAME}: persistent=True needs the TMA kernel (sm_90a, a row-major and b column-major, "
                         "16-byte aligned, K > 0, tma not False) and no epilogue")
    if persistent and chosen is not None:
        out_bytes = 4 if O.dtype == "float32" else 2
        # The default gives way to the table's next config whose C tile and 2 stages fit; a config
        # given keeps its own (and fails as too big where nothing fits).
        candidates = [chosen] + ([c for c in scaled_matmul_configs(scaling, has_bias, k_major_b=k_major_b)
                                  if c is not chosen] if config is None else [])
        chosen = next((p for p in (_persistent(c, out_bytes=out_bytes) for c in candidates) if p is not None),
                      _with_producer(chosen, chosen.num_stages))
    if epilogue is None and epilogue_args:
        raise ValueError(f"{_NAME}: epilogue_args without an epilogue")
    slots, meta = _epilogue_slots(tuple(epilogue_args), M, N, A)  # 4 x (tensor or scalar, strides); NUM_EPI
    kernel, tuner, epilogue_name = _kernel_and_tuner(scaling, use_tma, persistent, epilogue, interpret, has_bias,
                                                     k_major_b)
    meta.update(SCALING=scaling, SCALE_K=SCALE_BLOCK, SCALE_N=SCALE_BLOCK, HAS_BIAS=has_bias)
    if epilogue_name is not None:
        meta["EPILOGUE"] = epilogue_name
    scale_args = (scale_a, scale_b, bias_arg, M, N, K)
    scale_strides = (sam, sak, sbk, sbn, stride_bias)

    def grid(m):
        return (cdiv(M, m["BLOCK_M"]) * cdiv(N, m["BLOCK_N"]),)
    launch_grid = grid
    if use_tma:
        from ..tensor_descriptor import TensorDescriptor
        first = (chosen or scaled_matmul_configs(scaling, has_bias)[0]).kwargs
        a_desc = TensorDescriptor(a, [M, K], [A.strides[0], 1], [first["BLOCK_M"], first["BLOCK_K"]])
        bt_desc = TensorDescriptor(b.t(), [N, K], [B.strides[1], 1], [first["BLOCK_N"], first["BLOCK_K"]])
        args = (a_desc, bt_desc, out) + scale_args + (O.strides[0], O.strides[1]) + scale_strides
        if persistent:  # no epilogue slots
            sms = _ext.require().device_properties(-1)["multiprocessor_count"]
            meta = {k: v for k, v in meta.items() if k in ("SCALING", "SCALE_K", "SCALE_N", "HAS_BIAS")}
            meta["NUM_SMS"] = sms

            def launch_grid(m):
                return (min(sms, grid(m)[0]),)
        else:
            args += tuple(slots)
    else:
        args = ((a, b, out) + scale_args + (A.strides[0], A.strides[1], B.strides[0], B.strides[1], O.strides[0],
                                             O.strides[1]) + scale_strides + tuple(slots))
    if chosen is None:
        _state["last_autotuner"] = tuner
        tuner[launch_grid](*args, **meta)
    else:
        kernel[launch_grid](*args, **meta, **chosen.all_kwargs())
    return out


def scaled_matmul_last_autotuner():
    """The autotuner that served the last autotuned scaled_matmul (None before any)."""
    return _state.get("last_autotuner")


__all__ = ["scaled_matmul", "scaled_matmul_configs", "default_scaled_matmul_config", "scaled_matmul_autotuner", "scaled_matmul_last_autotuner",
           "HOPPER_SCALED_MATMUL_CONFIGS", "HOPPER_BLOCK_SCALED_MATMUL_CONFIGS", "SCALED_MATMUL_CONFIGS",
           "BLOCK_SCALED_MATMUL_CONFIGS", "FP8_DTYPES", "SCALE_BLOCK"]
