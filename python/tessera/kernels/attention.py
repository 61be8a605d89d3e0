"""tessera.kernels.attention(q, k, v, causal=False, sm_scale=None, layout=None):
softmax(sm_scale * q @ k^T) @ v per (batch, head), FlashAttention-style
(kernels/attention.py, docs/attention.md).

    o = tk.attention(q, k, v, causal=True)                  # q: (B, H, N, D), k, v: (B, H_KV, N_KV, D)
    o, lse = tk.attention(q, k, v, return_lse=True)         # lse: (B, H, N) fp32, natural log
    o = tk.attention(q, k, v, layout="bnhd")                # q: (B, N, H, D) (flash-attn's order)
    o.sum().backward()                                      # with torch autograd when inputs require grad
    o = tk.attention(q, k, v, mask_mod=window, kv_range=window_range, mod_args=(1024,))  # forward only

`layout` names the order of the dims in the *shape* ("bhnd", torch's SDPA
order, is the default; "bnhd" is flash-attn's). Strides are free in both:
every stride goes to the kernel, so e.g. a (B, H, N, D) view of a (B, N, H, D)
buffer works without a copy. Outputs (O, dQ, dK, dV) are allocated contiguous
in the layout of their input. k and v may have fewer heads than q (grouped-query
attention; H % H_KV == 0, query head h uses K/V head h // (H // H_KV), as
torch's enable_gqa). Causal masking is top-left aligned (query i sees keys
j <= i), as torch's is_causal.

Inputs: CUDA tensors (fp16 or bf16, head dims 16, 32, 64 or 128) run on the
GPU; numpy arrays and CPU torch tensors run on tessera's host interpreter
(slow, for tests). Block sizes and warps come from CONFIGS (HOPPER_FORWARD and
HOPPER_FORWARD_TMA for the forward on sm_90a) by head dim and causal flag, or with
autotune=True from @tessera.autotune (attention_forward_autotuner, sm_90a); `config=`
overrides any of them (attention_config(D, causal) shows the keys: forward BLOCK_M,
BLOCK_N, num_warps, num_stages (3 where dots run on wgmma, else 2; the D64 TMA blocks 2), maxnreg, OVERLAP and PINGPONG (two schedules of the key step,
kernels/attention.py), TMA (K and V through tensor descriptors, Hopper, for K/V packed as
(B, H_KV, N_KV, D) with N_KV a multiple of BLOCK_N); backward bwd_num_stages, DKDV_BLOCK_M, DKDV_BLOCK_N, dkdv_num_warps,
DQ_BLOCK_M, DQ_BLOCK_N, dq_num_warps).
"""
import math

from . import _files
from ._target import wgmma_target

LAYOUTS = ("bhnd", "bnhd")
HEAD_DIMS = (16, 32, 64, 128)

# Launch configurations by head dim (the same for causal and not, so far):
#   forward:  BLOCK_M query rows per program, BLOCK_N keys per step;
#   dK/dV:    DKDV_BLOCK_N keys per program, DKDV_BLOCK_M queries per step;
#   dQ:       DQ_BLOCK_M queries per program, DQ_BLOCK_N keys per step.
# Chosen so that ptxas allocates no spills on sm_80 and sm_90a (the fp32 accumulators -
# BLOCK_M x D in the forward and dQ kernels, two of BLOCK_N x D in dK/dV - plus the Q/K/V
# tiles must fit in 255 registers a thread; tests/python/test_attention_ptx.py checks it),
# preferring more rows per program (K/V reuse). Not yet tuned by timing: bench/attention.py
# --sweep times alternatives on a GPU.
_CONFIGS = {
    # D: (fwd BLOCK_M, BLOCK_N, warps), (dkdv BLOCK_M, BLOCK_N, warps), (dq BLOCK_M, BLOCK_N, warps)
    16: ((128, 64, 8), (64, 64, 8), (64, 64, 8)),
    32: ((128, 64, 8), (64, 64, 8), (64, 64, 8)),
    64: ((128, 64, 8), (64, 64, 8), (64, 64, 8)),
    128: ((128, 64, 8), (32, 32, 8), (64, 32, 8)),
}
CONFIGS = {(d, causal): c for d, c in _CONFIGS.items() for causal in (False, True)}

# Where dots run on wgmma (sm_90a), the forward's (BLOCK_M, BLOCK_N, warps, stages, maxnreg) by
# (head dim, causal), picked by bench/attention.py --sweep on an H100 (2026-11-22, with ptxas
# compiling the PTX as one program, runtime/Jit.cpp; bf16 TFLOP/s at N = 1k/4k/16k, same run):
# D = 64: 64 x 64 blocks, 4 warps, capped at 128 registers: 383/415/424 vs 376/409/414 for
# 128 x 64 / 8 warps (the table's choice while the driver's linker compiled the PTX), causal
# 296/385/421 vs 271/368/411. D = 128: 128 x 128 / 8 warps, 397/481/512 (Triton on the same
# source 401/481/511), causal 285/440/506 (Triton 276/434/504). D = 16 and 32 keep D = 64's
# former choice (not timed). At least 3 stages: P @ V runs on into the next key step while its
# V tile must stay put (the pipeline pass's async dots).
HOPPER_FORWARD = {
    (16, False): (128, 64, 8, 3, 128), (16, True): (128, 64, 8, 3, 128),
    (32, False): (128, 64, 8, 3, 128), (32, True): (128, 64, 8, 3, 128),
    (64, False): (64, 64, 4, 3, 128), (64, True): (64, 64, 4, 3, 128),
    (128, False): (128, 128, 8, 3, None), (128, True): (128, 128, 8, 3, None),
}


# The backward where dots run on wgmma: D: ((dK/dV BLOCK_M, BLOCK_N, warps), (dQ BLOCK_M,
# BLOCK_N, warps)), 2 stages, from bench/attention.py --sweep on an H100 (2026-11-22; bf16
# TFLOP/s at N = 16k vs CONFIGS' mma.sync-sized blocks: D64 293 vs 136, D128 349 vs 112).
# Blocks of 64 rows per warpgroup, so every dot is a wgmma. At D = 128 the dK/dV kernel's two
# 64 x 128 fp32 accumulators per warpgroup spill (~450 bytes a thread) and it is still the
# fastest measured; tests/python/test_attention_ptx.py bounds the spill.
HOPPER_BACKWARD = {
    16: ((64, 64, 4), (64, 64, 4)), 32: ((64, 64, 4), (64, 64, 4)),
    64: ((64, 64, 4), (64, 64, 4)), 128: ((64, 128, 8), (128, 64, 8)),
}

# The one-pass backward (BWD_FUSED=True: attn_bwd_fused_kernel, dQ by fp32 atomics) by head dim:
# (FUSED_BLOCK_M queries a step, FUSED_BLOCK_N keys a program, warps), where dots run on wgmma
# and elsewhere. bench/attention.py's providers tessera_fused and tessera_split run it beside the
# split kernels (timings below). 128 keys a program: the atomics move
# 4 * N_Q * D bytes per head and key block, so per flop they shrink with BLOCK_N (FlashAttention-3
# takes 128 too). At D <= 64 dQ's 64 rows x 64 columns stay on mma.sync (8 warps, no 64-column
# halves to split along N); the other four dots are wgmma, and nothing spills.
HOPPER_BACKWARD_FUSED = {16: (64, 128, 8), 32: (64, 128, 8), 64: (64, 128, 8), 128: (64, 128, 8)}
BACKWARD_FUSED = {16: (32, 64, 4), 32: (32, 64, 4), 64: (32, 64, 4), 128: (32, 64, 8)}
# The wrapper's default for BWD_FUSED, and the (head dim, causal) that take the one pass on sm_90a:
# bench/attention.py --quick --bwd-only, H200, 2026-11-28, bf16 TFLOP/s split / one pass, one run:
# D128 causal N1k/4k/16k 198.7/212.1, 277.0/297.2, 318.1/339.1 (+7 %); D128 non-causal 269.1/264.5,
# 320.4/317.0, 324.6/317.4 (-1 to -2 %); D64 260/183, 306/215, 315/225 (-30 %: dQ on mma.sync there).
BWD_FUSED_DEFAULT = False
HOPPER_BACKWARD_FUSED_BY_DEFAULT = {(128, True)}


# Other forward blocks where they measured faster for some numbers of keys (same sweep):
# (D, causal): [((BLOCK_M, BLOCK_N, warps, stages, maxnreg, OVERLAP), from keys, up to keys)],
# the first whose range holds the number of keys wins. D = 128 up to 1024 keys: 64 x 64 / 4
# warps, twice the programs to fill 132 SMs: 403 vs 397, causal 315 vs 285. OVERLAP (both dots
# of a key step in flight, kernels/attention.py) led for D = 128 from 8192 keys while the
# driver's linker compiled the PTX (503 vs 487); compiled as one program it trails (N16k 494
# vs 512, causal 440 vs 506), so no entry takes it now.
HOPPER_FORWARD_BY_KEYS = {
    (128, False): [((64, 64, 4, 3, None, False), 0, 1024)],
    (128, True): [((64, 64, 4, 3, None, False), 0, 1024)],
}


# Where K and V can be read through TMA descriptors (sm_90a; K and V packed as (B, H_KV, N_KV, D),
# N_KV a multiple of BLOCK_N: attention_forward checks), the forward takes these blocks with
# TMA=True, before HOPPER_FORWARD_BY_KEYS (bench/attention.py --sweep, H100, bf16 TFLOP/s at
# N = 1k/4k/16k, same run, Triton on the same source with its best blocks, HOPPER_FORWARD's, in
# brackets). D = 128 (2026-11-22), 128 x 128 / 8 warps / 3 stages: 446/590/618 (403/508/532),
# causal 300/496/612 (277/435/527); causal up to 1024 keys keeps the 64 x 64 pointer blocks
# (319 vs 300). D = 64 (2026-11-22, session 13, the copies issued under S = Q K^T, docs/tma.md), 64 x 128 /
# 4 warps / 2 stages: 459/507/490 (407/447/432), causal 319/463/460 (308/417/402); causal up to
# 1024 keys 64 x 64 / 4 warps / 3 stages / 128 registers (HOPPER_FORWARD_TMA_BY_KEYS): 325 vs 319.
HOPPER_FORWARD_TMA = {
    (64, False): (64, 128, 4, 2, None), (64, True): (64, 128, 4, 2, None),
    (128, False): (128, 128, 8, 3, None), (128, True): (128, 128, 8, 3, None),
}
HOPPER_FORWARD_TMA_UP_TO_KEYS = {(128, True): 1024}  # fewer keys: HOPPER_FORWARD(_BY_KEYS)
# (D, causal): [((BLOCK_M, BLOCK_N, warps, stages, maxnreg), from keys, up to keys)], as
# HOPPER_FORWARD_BY_KEYS, for the TMA blocks.
HOPPER_FORWARD_TMA_BY_KEYS = {(64, True): [((64, 64, 4, 3, 128), 0, 1024)]}


def warp_specializes(tma, num_warps, maxnreg):
    """Whether the TMA forward takes a producer warpgroup (WARP_SPECIALIZE, docs/tma.md): with two
    consumer warpgroups and no register cap, which lets setmaxnreg hand the producer's registers
    to them. H100, bf16 TFLOP/s at N = 1k/4k/16k, same run (2026-11-22, session 14), D128 128 x 128
    / 8 warps / 3 stages with / without: 494/659/706 vs 453/635/675, causal (4k/16k) 557/678 vs
    524/625. One consumer warpgroup (D64's 4 warps) loses occupancy without the handover: 241-304
    vs 462-527."""
    return bool(tma) and num_warps == 8 and maxnreg is None


# autotune=True (sm_90a, the forward without modifiers): the candidates @tessera.autotune times
# per (head dim, causal, TMA, dtypes, power-of-two buckets of the number of keys and of the query
# rows of all heads, which set how many programs fill the GPU), each
# (BLOCK_M, BLOCK_N, warps, stages, maxnreg); the table's choice for that key is timed first, so
# that a tie keeps it. TMA candidates need the number of keys to be a multiple of BLOCK_N.
AUTOTUNE_FORWARD = [(64, 128, 4, 2, None), (64, 64, 4, 3, 128), (128, 128, 8, 3, None), (128, 64, 8, 3, 128)]
AUTOTUNE_MAX_KEYS_BUCKET = 16384  # longer sweeps share the 16384 tuning
AUTOTUNE_QUERY_ROWS = (4096, 262144)  # query rows (B * H * N_Q) bucketed within these bounds


def keys_bucket(n_kv):
    """The autotuned forward's key for N_KV keys: the next power of two, at least 256, at most
    AUTOTUNE_MAX_KEYS_BUCKET (so a training run's changing lengths tune a handful of times)."""
    return min(max(256, 1 << (max(1, n_kv) - 1).bit_length()), AUTOTUNE_MAX_KEYS_BUCKET)


def query_rows_bucket(q):
    """The autotuned forward's key for the query tensor: B * H * N_Q rows, to a power of two
    within AUTOTUNE_QUERY_ROWS (a small batch and a large one fill the GPU differently)."""
    rows = max(1, math.prod(q.shape[:-1]))
    lo, hi = AUTOTUNE_QUERY_ROWS
    return min(max(lo, 1 << (rows - 1).bit_length()), hi)


def attention_config(head_dim, causal=False, wgmma=None, modifiers=False, keys=None, tma=False):
    """The launch configuration for this head dim and causal flag (a fresh dict). keys: the
    number of keys, which picks HOPPER_FORWARD_BY_KEYS's entries where they apply (None:
    never). wgmma: the table for GPUs whose dots run on wgmma (sm_90a); None asks the current
    device. tma: K and V can be read through TMA descriptors (attention_forward decides), which
    picks HOPPER_FORWARD_TMA's entries with TMA=True where they apply. modifiers:
    for the forward with score_mod/mask_mod/kv_range, which keeps CONFIGS' blocks (its
    modifiers' gathers take shared scratch that HOPPER_FORWARD's wider steps overflow)."""
    if head_dim not in HEAD_DIMS:
        raise ValueError(f"attention: head dim {head_dim} is not supported (one of {HEAD_DIMS})")
    fwd, dkdv, dq = CONFIGS[(head_dim, bool(causal))]
    stages, overlap, maxnreg, use_tma = 2, False, None, False
    fused, bwd_fused = BACKWARD_FUSED[head_dim], BWD_FUSED_DEFAULT
    if wgmma_target() if wgmma is None else wgmma:
        stages = 3
        dkdv, dq = HOPPER_BACKWARD[head_dim]
        fused = HOPPER_BACKWARD_FUSED[head_dim]
        key = (head_dim, bool(causal))
        bwd_fused = BWD_FUSED_DEFAULT or key in HOPPER_BACKWARD_FUSED_BY_DEFAULT
        if not modifiers:
            *fwd, stages, maxnreg = HOPPER_FORWARD[key]
            use_tma = tma and key in HOPPER_FORWARD_TMA and (keys is None or keys > HOPPER_FORWARD_TMA_UP_TO_KEYS.get(key, 0))
            if use_tma:
                *fwd, stages, maxnreg = HOPPER_FORWARD_TMA[key]
                for choice, lo, hi in HOPPER_FORWARD_TMA_BY_KEYS.get(key, ()):
                    if keys is not None and lo <= keys <= hi:
                        *fwd, stages, maxnreg = choice
                        break
            for choice, lo, hi in () if use_tma else HOPPER_FORWARD_BY_KEYS.get(key, ()):
                if keys is not None and lo <= keys <= hi:
                    *fwd, stages, maxnreg, overlap = choice
                    break
    return {"BLOCK_M": fwd[0], "BLOCK_N": fwd[1], "num_warps": fwd[2], "num_stages": stages, "OVERLAP": overlap,
            "PINGPONG": False, "TMA": use_tma, "WARP_SPECIALIZE": warp_specializes(use_tma, fwd[2], maxnreg),
            "maxnreg": maxnreg,
            "bwd_num_stages": 2,
            "DKDV_BLOCK_M": dkdv[0], "DKDV_BLOCK_N": dkdv[1], "dkdv_num_warps": dkdv[2],
            "DQ_BLOCK_M": dq[0], "DQ_BLOCK_N": dq[1], "dq_num_warps": dq[2],
            "BWD_FUSED": bwd_fused, "FUSED_BLOCK_M": fused[0], "FUSED_BLOCK_N": fused[1],
            "fused_num_warps": fused[2], "FUSED_STAGGER": False}


# ------------------------------------------------------------------ arrays

def _is_torch(x):
    return type(x).__module__.startswith("torch")


def _on_gpu(x):
    return _is_torch(x) and x.is_cuda


def _strides(x):
    """Element strides of a torch tensor or numpy array."""
    if _is_torch(x):
        return tuple(x.stride())
    return tuple(s // x.itemsize for s in x.strides)


def _empty(like, shape, dtype=None):
    if _is_torch(like):
        import torch
        return torch.empty(shape, dtype=like.dtype if dtype is None else dtype, device=like.device)
    import numpy as np
    return np.empty(shape, dtype=like.dtype if dtype is None else dtype)


def _fp32(like):
    if _is_torch(like):
        import torch
        return torch.float32
    import numpy as np
    return np.float32


def _dims(x, layout):
    """(B, H, N, D) of x and its strides in that order."""
    s = _strides(x)
    if layout == "bhnd":
        return tuple(x.shape), s
    b, n, h, d = x.shape
    return (b, h, n, d), (s[0], s[2], s[1], s[3])


def _check_q_against_k(who, q, k, q_dims, k_dims, head_dims):
    """q's (B, H, D) against k's: the same batch and head dim, q's heads a multiple of k's (GQA),
    a head dim of head_dims."""
    (B, H, D), (Bk, Hk, Dk) = q_dims, k_dims
    if Bk != B or Dk != D:
        raise ValueError(f"{who}: q {tuple(q.shape)} and k {tuple(k.shape)} differ in batch or head dim")
    if Hk == 0 or H % Hk:
        raise ValueError(f"{who}: q's {H} heads are not a multiple of k/v's {Hk}")
    if D not in head_dims:
        raise ValueError(f"{who}: head dim {D} is not supported (one of {head_dims})")


def _softmax_scale(who, sm_scale, head_dim):
    """sm_scale, 1 / sqrt(head_dim) by default; positive, since the kernels scale each row's maximum
    raw score (_online_softmax)."""
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(head_dim)
    if not sm_scale > 0:
        raise ValueError(f"{who}: sm_scale must be positive, got {sm_scale}")
    return sm_scale


def _kernels(interpret):
    """The kernels of kernels/attention.py; host-interpreted copies for CPU arrays."""
    module = _files.load("attention")
    names = ("attn_fwd_kernel", "attn_bwd_preprocess_kernel", "attn_bwd_dkdv_kernel", "attn_bwd_dq_kernel",
             "attn_fwd_mod_kernel", "attn_bwd_fused_preprocess_kernel", "attn_bwd_fused_kernel",
             "attn_bwd_dq_convert_kernel", "attn_fwd_fp8_kernel")
    if not interpret:
        return {n: getattr(module, n) for n in names}
    cache = module.__dict__.setdefault("_interpreted", {})
    if len(cache) != len(names):
        from .. import jit
        for n in names:
            cache[n] = jit(getattr(module, n).fn, interpret=True)
    return cache


def _check(q, k, v, layout):
    if layout not in LAYOUTS:
        raise ValueError(f"attention: layout must be one of {LAYOUTS}, not {layout!r}")
    for name, x in (("q", q), ("k", k), ("v", v)):
        if len(x.shape) != 4:
            raise ValueError(f"attention: {name} must have 4 dims ({layout}), has shape {tuple(x.shape)}")
    (B, H, N, D), _ = _dims(q, layout)
    (Bk, Hk, Nk, Dk), _ = _dims(k, layout)
    (Bv, Hv, Nv, Dv), _ = _dims(v, layout)
    if (Bk, Hk, Nk, Dk) != (Bv, Hv, Nv, Dv):
        raise ValueError(f"attention: k and v differ in shape: {tuple(k.shape)} vs {tuple(v.shape)}")
    _check_q_against_k("attention", q, k, (B, H, D), (Bk, Hk, Dk), HEAD_DIMS)
    if q.dtype != k.dtype or q.dtype != v.dtype:
        raise ValueError(f"attention: q, k, v must share a dtype ({q.dtype}, {k.dtype}, {v.dtype})")
    if _on_gpu(q):
        import torch
        if q.dtype not in (torch.float16, torch.bfloat16):
            raise ValueError(f"attention: dtype {q.dtype} is not supported on the GPU (float16 or bfloat16)")
        if not (k.is_cuda and v.is_cuda) or len({q.device, k.device, v.device}) != 1:
            raise ValueError("attention: q, k, v must be on the same CUDA device")
    return B, H, Hk, N, Nk, D


def _config(D, causal, config, modifiers=False, keys=None, tma=False):
    c = attention_config(D, causal, modifiers=modifiers, keys=keys, tma=tma)
    if config:
        unknown = set(config) - set(c)
        if unknown:
            raise ValueError(f"attention: unknown config keys {sorted(unknown)} (known: {sorted(c)})")
        c.update(config)
        if "WARP_SPECIALIZE" not in config:  # the table's rule, on the blocks asked for
            c["WARP_SPECIALIZE"] = warp_specializes(c["TMA"], c["num_warps"], c["maxnreg"])
    for key in ("BLOCK_M", "BLOCK_N"):
        if c[key] < 16 or c[key] & (c[key] - 1):
            raise ValueError(f"attention: {key} must be a power of two of at least 16 (got {c[key]})")
    return c


def _cdiv(a, b):
    return (a + b - 1) // b


# ----------------------------------------------------------------- launches

MAX_MOD_ARGS = 4


def _mod_args(mod_args, q):
    mod_args = tuple(mod_args)
    if len(mod_args) > MAX_MOD_ARGS:
        raise ValueError(f"attention: at most {MAX_MOD_ARGS} mod_args, got {len(mod_args)}")
    for i, a in enumerate(mod_args):
        if isinstance(a, (bool, int, float)):
            continue
        if not hasattr(a, "dtype"):
            raise TypeError(f"attention: mod_args[{i}] is a {type(a).__name__}; mod arguments are tensors "
                            "(passed as pointers) or Python scalars")
        if _on_gpu(q) != _on_gpu(a):
            raise ValueError(f"attention: mod_args[{i}] must be on the same device as q")
    return mod_args + (0,) * (MAX_MOD_ARGS - len(mod_args)), len(mod_args)


def _check_mod(name, fn):
    if fn is None:
        return
    from .. import _compose
    if _compose.as_jit(fn) is None:
        raise TypeError(f"attention: {name} must be a @tessera.jit function, not {type(fn).__name__}")


def attention_forward(q, k, v, causal=False, sm_scale=None, layout="bhnd", config=None, *,
                      score_mod=None, mask_mod=None, kv_range=None, mod_args=(), autotune=False):
    """(O, LSE): O like q (contiguous in `layout`), LSE (B, H, N) fp32, natural log.
    score_mod / mask_mod / kv_range: @jit modifiers (attn_fwd_mod_kernel, docs/fusion.md);
    rows that see no key then get O = 0, LSE = -inf. autotune=True: the blocks are
    @tessera.autotune's choice among AUTOTUNE_FORWARD (attention_forward_autotuner) where dots run on
    wgmma (sm_90a) and there are no modifiers; elsewhere the table's."""
    B, H, Hk, N, Nk, D = _check(q, k, v, layout)
    if autotune and config:
        raise ValueError("attention: config and autotune=True both choose the blocks: pass one")
    mods = score_mod is not None or mask_mod is not None or kv_range is not None
    if mods:
        for name, fn in (("score_mod", score_mod), ("mask_mod", mask_mod), ("kv_range", kv_range)):
            _check_mod(name, fn)
        padded, num_args = _mod_args(mod_args, q)
    elif mod_args:
        raise ValueError("attention: mod_args without score_mod, mask_mod or kv_range")
    sm_scale = _softmax_scale("attention", sm_scale, D)
    _, sk = _dims(k, layout)
    _, sv = _dims(v, layout)
    # TMA where the table has blocks for it and K/V allow it; asked for by config, it must apply.
    tma_blocks = None if mods else attention_config(D, causal, keys=Nk, tma=True)
    tma_ok = (tma_blocks is not None and tma_blocks["TMA"] and
              _tma_problem(q, k, v, sk, sv, (B, Hk, Nk, D), tma_blocks) is None)
    c = _config(D, causal, config, mods, keys=Nk, tma=tma_ok)
    tma_problem = _tma_problem(q, k, v, sk, sv, (B, Hk, Nk, D), c) if c["TMA"] else None
    if tma_problem and not (config and config.get("TMA")):
        c["TMA"] = False  # the config's BLOCK_N rules it out
    o = _empty(q, tuple(q.shape))
    lse = _empty(q, (B, H, N), _fp32(q))
    if B * H * N == 0:
        return o, lse
    if Nk == 0:
        raise ValueError("attention: k and v have no rows (every softmax would be empty)")
    kern = _kernels(not _on_gpu(q))
    _, sq = _dims(q, layout)
    _, so = _dims(o, layout)
    grid = (_cdiv(N, c["BLOCK_M"]), B * H)
    if mods:
        kern["attn_fwd_mod_kernel"][grid](q, k, v, o, lse, *sq, *sk, *sv, *so, H, Hk, N, Nk, float(sm_scale),
                                          *padded, HEAD_DIM=D, BLOCK_M=c["BLOCK_M"], BLOCK_N=c["BLOCK_N"],
                                          CAUSAL=bool(causal), SCORE_MOD=score_mod, MASK_MOD=mask_mod,
                                          KV_RANGE=kv_range, NUM_ARGS=num_args,
                                          num_warps=c["num_warps"], num_stages=c["num_stages"])
        return o, lse
    if autotune and _on_gpu(q) and wgmma_target():
        tma = (D, bool(causal)) in HOPPER_FORWARD_TMA and _tma_problem(
            q, k, v, sk, sv, (B, Hk, Nk, D), {"BLOCK_N": min(x[1] for x in AUTOTUNE_FORWARD)}) is None
        kk, vv = ((_key_descriptor(x, B * Hk * Nk, D, 64) for x in (k, v)) if tma else (k, v))
        attention_forward_autotuner(tma, D, causal)[lambda meta: (_cdiv(N, meta["BLOCK_M"]), B * H)](
            q, kk, vv, o, lse, *sq, *sk, *sv, *so, H, Hk, N, Nk, float(sm_scale),
            HEAD_DIM=D, CAUSAL=bool(causal), OVERLAP=False, PINGPONG=False, TMA=tma)
        return o, lse
    kk, vv = k, v
    if c["TMA"]:
        if tma_problem:
            raise ValueError(f"attention: config TMA=True needs {tma_problem}")
        kk, vv = (_key_descriptor(x, B * Hk * Nk, D, c["BLOCK_N"]) for x in (k, v))
    kern["attn_fwd_kernel"][grid](q, kk, vv, o, lse, *sq, *sk, *sv, *so, H, Hk, N, Nk, float(sm_scale),
                                  HEAD_DIM=D, BLOCK_M=c["BLOCK_M"], BLOCK_N=c["BLOCK_N"], CAUSAL=bool(causal),
                                  OVERLAP=bool(c["OVERLAP"]), PINGPONG=bool(c["PINGPONG"]), TMA=bool(c["TMA"]),
                                  WARP_SPECIALIZE=bool(c["WARP_SPECIALIZE"]),
                                  num_warps=c["num_warps"], num_stages=c["num_stages"], maxnreg=c["maxnreg"])
    return o, lse


def _tma_problem(q, k, v, sk, sv, dims, c):
    """Why K and V cannot be read through TMA descriptors over their (B * H_KV * N_KV, D) view
    (kernels/attention.py, TMA), or None."""
    B, Hk, Nk, D = dims
    if not _on_gpu(q) or not wgmma_target():
        return "a GPU whose dots run on wgmma (sm_90a)"
    if Nk % c["BLOCK_N"]:
        return f"a number of keys that is a multiple of BLOCK_N ({Nk} keys, BLOCK_N {c['BLOCK_N']})"
    packed = (Hk * Nk * D, Nk * D, D, 1)
    for name, x, strides in (("k", k, sk), ("v", v, sv)):
        if tuple(strides) != packed or x.data_ptr() % 16:
            return f"{name} packed as (B, H_KV, N_KV, D) in memory, 16-byte aligned (strides {tuple(strides)})"
    return None


def _prune_forward(configs, named, **_):
    """TMA candidates read whole blocks of keys: N_KV must be a multiple of BLOCK_N."""
    if not named.get("TMA"):
        return configs
    return [c for c in configs if named["N_KV"] % c.kwargs["BLOCK_N"] == 0]


def _tma_block_shapes(nargs):
    """Config pre_hook of the TMA forward: K's and V's descriptors read [BLOCK_N, HEAD_DIM] blocks."""
    for name in ("K", "V"):
        nargs[name].block_shape = (nargs["BLOCK_N"], nargs["HEAD_DIM"])


def attention_forward_autotuner(tma, D, causal):
    """The tessera.Autotuner of attn_fwd_kernel for autotune=True (TMA: K and V as descriptors):
    AUTOTUNE_FORWARD, the table's blocks for (D, causal) first; keyed on HEAD_DIM, CAUSAL, TMA,
    keys_bucket(N_KV) and query_rows_bucket(Q) (and the dtypes). .best_config is the config of its
    last launch."""
    from ..autotune import Config, autotune
    key = ("forward_autotuner", bool(tma), D, bool(causal))
    if key not in _tuners:
        c = attention_config(D, causal, wgmma=True, tma=tma)
        table = (c["BLOCK_M"], c["BLOCK_N"], c["num_warps"], c["num_stages"], c["maxnreg"])
        order = [table] + [x for x in AUTOTUNE_FORWARD if x != table]
        configs = [Config({"BLOCK_M": bm, "BLOCK_N": bn, "WARP_SPECIALIZE": warp_specializes(tma, w, r)},
                          num_warps=w, num_stages=st, maxnreg=r,
                          pre_hook=_tma_block_shapes if tma else None) for bm, bn, w, st, r in order]
        _tuners[key] = autotune(configs=configs, key=["HEAD_DIM", "CAUSAL", "TMA", ("N_KV", keys_bucket),
                                                            ("Q", query_rows_bucket)],
                                prune_configs_by={"early_config_prune": _prune_forward})(
                                    _kernels(False)["attn_fwd_kernel"])
    return _tuners[key]


_tuners = {}


def _key_descriptor(x, rows, D, block_n):
    from ..tensor_descriptor import TensorDescriptor
    return TensorDescriptor(x, shape=[rows, D], strides=[D, 1], block_shape=[block_n, D])


def attention_backward(do, q, k, v, o, lse, causal=False, sm_scale=None, layout="bhnd", config=None):
    """(dQ, dK, dV) of attention_forward's O given dO (any strides), O and LSE."""
    B, H, Hk, N, Nk, D = _check(q, k, v, layout)
    if tuple(do.shape) != tuple(q.shape):
        raise ValueError(f"attention backward: dO has shape {tuple(do.shape)}, O has {tuple(q.shape)}")
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(D)
    c = _config(D, causal, config)
    dq, dk, dv = _empty(q, tuple(q.shape)), _empty(k, tuple(k.shape)), _empty(v, tuple(v.shape))
    if B * H * N == 0 or Nk == 0:
        for t in (dq, dk, dv):
            t[...] = 0
        return dq, dk, dv
    kern = _kernels(not _on_gpu(q))
    _, sq = _dims(q, layout)
    _, sk = _dims(k, layout)
    _, sv = _dims(v, layout)
    _, so = _dims(o, layout)
    _, sdo = _dims(do, layout)
    _, sdq = _dims(dq, layout)
    _, sdk = _dims(dk, layout)
    _, sdv = _dims(dv, layout)
    delta = _empty(q, (B, H, N), _fp32(q))
    pre_m = 64
    if c["BWD_FUSED"]:
        # One pass over (key block, query block) pairs; dQ summed in fp32 (zeroed by the
        # preprocess), then scaled and cast.
        dq_acc = _empty(q, (B, H, N, D), _fp32(q))
        kern["attn_bwd_fused_preprocess_kernel"][(_cdiv(N, pre_m), B * H)](
            o, do, delta, dq_acc, *so, *sdo, H, N, HEAD_DIM=D, BLOCK_M=pre_m, num_warps=4)
        block_n = c["FUSED_BLOCK_N"]
        kern["attn_bwd_fused_kernel"][(_cdiv(Nk, block_n), B * Hk)](
            q, k, v, do, lse, delta, dq_acc, dk, dv, *sq, *sk, *sv, *sdo, *sdk, *sdv, H, Hk, N, Nk,
            float(sm_scale), HEAD_DIM=D, BLOCK_M=c["FUSED_BLOCK_M"], BLOCK_N=block_n, CAUSAL=bool(causal),
            MASK_KEYS=Nk % block_n != 0, STAGGER=bool(c["FUSED_STAGGER"]), num_warps=c["fused_num_warps"],
            num_stages=c["bwd_num_stages"])
        kern["attn_bwd_dq_convert_kernel"][(_cdiv(N, pre_m), B * H)](
            dq_acc, dq, *sdq, H, N, float(sm_scale), HEAD_DIM=D, BLOCK_M=pre_m, num_warps=4)
        return dq, dk, dv
    kern["attn_bwd_preprocess_kernel"][(_cdiv(N, pre_m), B * H)](
        o, do, delta, *so, *sdo, H, N, HEAD_DIM=D, BLOCK_M=pre_m, num_warps=4)
    common = dict(HEAD_DIM=D, CAUSAL=bool(causal), num_stages=c["bwd_num_stages"])
    kern["attn_bwd_dkdv_kernel"][(_cdiv(Nk, c["DKDV_BLOCK_N"]), B * Hk)](
        q, k, v, do, lse, delta, dk, dv, *sq, *sk, *sv, *sdo, *sdk, *sdv, H, Hk, N, Nk, float(sm_scale),
        BLOCK_M=c["DKDV_BLOCK_M"], BLOCK_N=c["DKDV_BLOCK_N"], num_warps=c["dkdv_num_warps"], **common)
    kern["attn_bwd_dq_kernel"][(_cdiv(N, c["DQ_BLOCK_M"]), B * H)](
        q, k, v, do, lse, delta, dq, *sq, *sk, *sv, *sdo, *sdq, H, Hk, N, Nk, float(sm_scale),
        BLOCK_M=c["DQ_BLOCK_M"], BLOCK_N=c["DQ_BLOCK_N"], num_warps=c["dq_num_warps"], **common)
    return dq, dk, dv


_Function = None


def _autograd_function():
    global _Function
    if _Function is None:
        import torch

        class AttentionFunction(torch.autograd.Function):
            @staticmethod
            def forward(ctx, q, k, v, causal, sm_scale, layout, config, autotune):
                o, lse = attention_forward(q, k, v, causal, sm_scale, layout, config, autotune=autotune)
                ctx.save_for_backward(q, k, v, o, lse)
                ctx.causal, ctx.sm_scale, ctx.layout, ctx.config = causal, sm_scale, layout, config
                ctx.mark_non_differentiable(lse)
                return o, lse

            @staticmethod
            def backward(ctx, do, _dlse):
                q, k, v, o, lse = ctx.saved_tensors
                dq, dk, dv = attention_backward(do, q, k, v, o, lse, ctx.causal, ctx.sm_scale, ctx.layout,
                                                ctx.config)
                return dq, dk, dv, None, None, None, None, None

        _Function = AttentionFunction
    return _Function


def attention(q, k, v, causal=False, sm_scale=None, layout=None, *, return_lse=False, config=None,
              score_mod=None, mask_mod=None, kv_range=None, mod_args=(), autotune=False):
    """softmax(sm_scale * q k^T [causal mask]) v; sm_scale defaults to 1/sqrt(head_dim).
    Differentiable (torch autograd) when an input requires grad. autotune=True: the forward's
    blocks are @tessera.autotune's choice on sm_90a (attention_forward); else the table's.

    Modifiers (FlexAttention-style, forward only; docs/fusion.md): @tessera.jit functions
    inlined into the kernel, each given `mod_args` (tensors as pointers, or scalars) last:
    score_mod(score, b, h, q_idx, kv_idx, *mod_args) -> score (after sm_scale),
    mask_mod(b, h, q_idx, kv_idx, *mod_args) -> bool (keep), and
    kv_range(q_lo, q_hi, n_kv, *mod_args) -> (kv_lo, kv_hi), the keys queries q_lo..q_hi-1
    can see: key blocks outside it are skipped (e.g. a sliding window)."""
    layout = "bhnd" if layout is None else layout
    mods = dict(score_mod=score_mod, mask_mod=mask_mod, kv_range=kv_range, mod_args=mod_args)
    if score_mod is not None or mask_mod is not None or kv_range is not None:
        if _is_torch(q):
            import torch
            if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
                raise NotImplementedError("attention: score_mod / mask_mod / kv_range are forward-only (no "
                                          "backward yet); call under torch.no_grad() or detach the inputs")
        o, lse = attention_forward(q, k, v, causal, sm_scale, layout, config, **mods)
        return (o, lse) if return_lse else o
    if mod_args:
        raise ValueError("attention: mod_args without score_mod, mask_mod or kv_range")
    if _is_torch(q):
        import torch
        if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
            o, lse = _autograd_function().apply(q, k, v, bool(causal), sm_scale, layout, config, autotune)
            return (o, lse) if return_lse else o
    o, lse = attention_forward(q, k, v, causal, sm_scale, layout, config, autotune=autotune)
    return (o, lse) if return_lse else o


# ------------------------------------------------------------------ fp8 forward

FP8_V_LAYOUTS = ("vt", "bhnd")
# The fp8 forward's blocks where dots run on wgmma (sm_90a), by (head dim, causal): (BLOCK_M,
# BLOCK_N, warps, stages, maxnreg); K and V^T through TMA descriptors with a producer warpgroup
# where attention_fp8 can (as the bf16 D128 forward's best). Not timed yet: bench/attention.py
# --fp8 --sweep times the alternatives (FP8_SWEEP there). BLOCK_N is a power of two (tl.arange):
# FlashAttention-3's 176-key fp8 blocks are not expressible.
HOPPER_FP8_FORWARD = {
    (64, False): (128, 128, 8, 3, None), (64, True): (128, 128, 8, 3, None),
    (128, False): (128, 128, 8, 3, None), (128, True): (128, 128, 8, 3, None),
}
# Elsewhere (sm_89's fp8 mma.sync, sm_80's widened f16 dot, the interpreter).
FP8_FORWARD = (128, 64, 8, 2, None)
FP8_HEAD_DIMS = (64, 128)


def attention_fp8_config(head_dim, causal=False, wgmma=None):
    """The fp8 forward's launch configuration (a fresh dict): BLOCK_M, BLOCK_N, num_warps,
    num_stages, maxnreg, TMA (taken where the tensors allow it), WARP_SPECIALIZE, PINGPONG (8
    warps: the two warpgroups take turns at the tensor cores; off by default, not yet timed)."""
    if head_dim not in FP8_HEAD_DIMS:
        raise ValueError(f"attention_fp8: head dim {head_dim} is not supported (one of {FP8_HEAD_DIMS})")
    hopper = wgmma_target() if wgmma is None else wgmma
    bm, bn, warps, stages, maxnreg = HOPPER_FP8_FORWARD[(head_dim, bool(causal))] if hopper else FP8_FORWARD
    return {"BLOCK_M": bm, "BLOCK_N": bn, "num_warps": warps, "num_stages": stages, "maxnreg": maxnreg,
            "TMA": bool(hopper), "WARP_SPECIALIZE": bool(hopper) and warps == 8 and maxnreg is None, "PINGPONG": False}


def _fp8_dtype_problem(x):
    """Why x is not float8_e4m3fn, or None."""
    name = str(x.dtype).replace("torch.", "")
    if name == "float8_e4m3fn":
        return None
    if name.startswith("float8"):
        return (f"has dtype {name}; attention_fp8 takes float8_e4m3fn only (e4m3fnuz and e5m2fnuz are AMD's "
                "encodings, e5m2 has too few mantissa bits for attention's inputs)")
    return f"has dtype {name}; attention_fp8 takes float8_e4m3fn (tk.attention takes float16 / bfloat16)"


def _descale(d, name, like):
    """A descale factor as a one-element fp32 array on like's device (a Python number is copied
    there; a one-element fp32 tensor is passed as it is)."""
    if hasattr(d, "item") and getattr(d, "shape", None) == () and not _is_torch(d):
        d = d.item()  # a numpy scalar
    if isinstance(d, (int, float)) and not isinstance(d, bool):
        if not d > 0 or d == float("inf"):
            raise ValueError(f"attention_fp8: {name} must be a positive finite number, got {d}")
        if _is_torch(like):
            import torch
            return torch.full((1,), float(d), dtype=torch.float32, device=like.device)
        import numpy as np
        return np.full((1,), d, np.float32)
    if not hasattr(d, "dtype") or not hasattr(d, "shape"):
        raise TypeError(f"attention_fp8: {name} must be a number or a one-element float32 tensor, "
                        f"not {type(d).__name__}")
    size = 1
    for n in d.shape:
        size *= n
    if size != 1 or str(d.dtype).replace("torch.", "") != "float32":
        raise ValueError(f"attention_fp8: {name} must be one float32 element (per-tensor scaling), got shape "
                         f"{tuple(d.shape)} and dtype {d.dtype}")
    if _on_gpu(like) != _on_gpu(d) or (_on_gpu(d) and d.device != like.device):
        raise ValueError(f"attention_fp8: {name} must be on q's device")
    if not _on_gpu(d):
        import numpy as np
        value = float(np.asarray(d).reshape(()))
        if not value > 0 or value == float("inf"):  # the softmax takes the maximum of the raw scores
            raise ValueError(f"attention_fp8: {name} must be positive and finite, got {value}")
        return np.asarray(d, np.float32).reshape(1)
    return d if tuple(d.shape) == (1,) else d.reshape(1)  # a pointer to its element


def attention_fp8(q, k, v, q_descale=1.0, k_descale=1.0, v_descale=1.0, causal=False, sm_scale=None,
                  v_layout="vt", *, return_lse=False, config=None):
    """The FP8 attention forward (kernels/attention.py attn_fwd_fp8_kernel, docs/attention.md):
    O = softmax(sm_scale * Q K^T [causal]) V of the dequantised inputs Q = q * q_descale,
    K = k * k_descale, V = v * v_descale, with q (B, H, N, D), k (B, H_KV, N_KV, D) float8_e4m3fn
    and v float8_e4m3fn as v_layout says: "vt" (the default and the fast one) V^T of shape
    (B, H_KV, D, N_KV), keys contiguous, the K-major operand fp8 wgmma needs; "bhnd" V itself
    (B, H_KV, N_KV, D), transposed on its way to shared memory (slower, no TMA). Descales:
    positive Python numbers or one-element float32 tensors (per-tensor scaling; a CUDA
    tensor's sign is not checked: it must be positive). O bfloat16 (B, H, N, D), contiguous;
    with return_lse=True also LSE (B, H, N) fp32, natural log. CUDA tensors run on the GPU
    (fp8 wgmma on sm_90a), numpy arrays (ml_dtypes.float8_e4m3fn) on the host interpreter.
    Grouped-query attention and ragged N as tk.attention. Forward only (no autograd)."""
    if v_layout not in FP8_V_LAYOUTS:
        raise ValueError(f"attention_fp8: v_layout must be one of {FP8_V_LAYOUTS}, not {v_layout!r}")
    for name, x in (("q", q), ("k", k), ("v", v)):
        if not hasattr(x, "shape") or len(x.shape) != 4:
            raise ValueError(f"attention_fp8: {name} must have 4 dims, has shape {tuple(getattr(x, 'shape', ()))}")
        problem = _fp8_dtype_problem(x)
        if problem:
            raise TypeError(f"attention_fp8: {name} {problem}")
        if _is_torch(x) and not x.is_cuda:
            raise ValueError(f"attention_fp8: {name} is a CPU tensor; pass CUDA tensors (the GPU) or numpy "
                             "arrays (the host interpreter)")
    if len({_on_gpu(x) for x in (q, k, v)}) != 1 or (_on_gpu(q) and len({q.device, k.device, v.device}) != 1):
        raise ValueError("attention_fp8: q, k, v must be on one device")
    if _on_gpu(q):
        from .. import _ext
        arch = _ext.require().target_arch(q.device.index or 0)
        if arch not in ("sm_90", "sm_90a"):  # codegen: conversions to fp8 need sm_90
            raise NotImplementedError(f"attention_fp8: needs an sm_90 GPU (Hopper), which rounds P to fp8 with "
                                      f"cvt.rn.satfinite.e4m3x2; this one is {arch}")
    B, H, N, D = q.shape
    Bk, Hk, Nk, Dk = k.shape
    sv = _strides(v)
    if v_layout == "vt":
        Bv, Hv, Dv, Nv = v.shape
        sv = (sv[0], sv[1], sv[3], sv[2])  # V[b, h, n, d]'s strides
    else:
        Bv, Hv, Nv, Dv = v.shape
    if (Bk, Hk, Nk, Dk) != (Bv, Hv, Nv, Dv):
        what = "(B, H_KV, D, N_KV)" if v_layout == "vt" else "(B, H_KV, N_KV, D)"
        raise ValueError(f"attention_fp8: v of shape {tuple(v.shape)} does not match k {tuple(k.shape)} "
                         f"(v_layout={v_layout!r}: v is {what})")
    _check_q_against_k("attention_fp8", q, k, (B, H, D), (Bk, Hk, Dk), FP8_HEAD_DIMS)
    sm_scale = _softmax_scale("attention_fp8", sm_scale, D)
    descales = [_descale(d, name, q) for d, name in ((q_descale, "q_descale"), (k_descale, "k_descale"),
                                                     (v_descale, "v_descale"))]
    c = attention_fp8_config(D, causal, wgmma=_on_gpu(q) and wgmma_target())
    if config:
        unknown = set(config) - set(c)
        if unknown:
            raise ValueError(f"attention_fp8: unknown config keys {sorted(unknown)} (known: {sorted(c)})")
        c.update(config)
        if "WARP_SPECIALIZE" not in config:
            c["WARP_SPECIALIZE"] = bool(c["TMA"]) and c["num_warps"] == 8 and c["maxnreg"] is None
    for key in ("BLOCK_M", "BLOCK_N"):
        if c[key] < 16 or c[key] & (c[key] - 1):
            raise ValueError(f"attention_fp8: {key} must be a power of two of at least 16 (got {c[key]})")
    sk = _strides(k)
    tma_problem = _fp8_tma_problem(q, k, v, v_layout, sk, _strides(v), (B, Hk, Nk, D), c) if c["TMA"] else None
    if tma_problem:
        if config and config.get("TMA"):
            raise ValueError(f"attention_fp8: config TMA=True needs {tma_problem}")
        c["TMA"] = c["WARP_SPECIALIZE"] = False
    if _is_torch(q):
        import torch
        bf16 = torch.bfloat16
    else:
        import ml_dtypes
        bf16 = ml_dtypes.bfloat16
    o = _empty(q, (B, H, N, D), bf16)
    lse = _empty(q, (B, H, N), _fp32(q))
    if B * H * N == 0:
        return (o, lse) if return_lse else o
    if Nk == 0:
        raise ValueError("attention_fp8: k and v have no rows (every softmax would be empty)")
    kk, vv = k, v
    if c["TMA"]:
        from ..tensor_descriptor import TensorDescriptor
        kk = TensorDescriptor(k, shape=[B * Hk * Nk, D], strides=[D, 1], block_shape=[c["BLOCK_N"], D])
        vv = TensorDescriptor(v, shape=[B * Hk * D, Nk], strides=[Nk, 1], block_shape=[D, c["BLOCK_N"]])
    kern = _kernels(not _on_gpu(q))["attn_fwd_fp8_kernel"]
    kern[(_cdiv(N, c["BLOCK_M"]), B * H)](
        q, kk, vv, o, lse, *descales, *_strides(q), *sk, *sv, *_strides(o), H, Hk, N, Nk, float(sm_scale),
        HEAD_DIM=D, BLOCK_M=c["BLOCK_M"], BLOCK_N=c["BLOCK_N"], CAUSAL=bool(causal), TMA=bool(c["TMA"]),
        WARP_SPECIALIZE=bool(c["WARP_SPECIALIZE"]), PINGPONG=bool(c["PINGPONG"]), num_warps=c["num_warps"],
        num_stages=c["num_stages"], maxnreg=c["maxnreg"])
    return (o, lse) if return_lse else o


def _fp8_tma_problem(q, k, v, v_layout, sk, sv, dims, c):
    """Why K and V^T cannot be read through TMA descriptors (K over (B * H_KV * N_KV, D), V^T over
    (B * H_KV * D, N_KV)), or None."""
    B, Hk, Nk, D = dims
    if not _on_gpu(q) or not wgmma_target():
        return "a GPU whose dots run on wgmma (sm_90a)"
    if v_layout != "vt":
        return "v_layout='vt' (V^T's keys contiguous)"
    if Nk % c["BLOCK_N"]:
        return f"a number of keys that is a multiple of BLOCK_N ({Nk} keys, BLOCK_N {c['BLOCK_N']})"
    if tuple(sk) != (Hk * Nk * D, Nk * D, D, 1) or k.data_ptr() % 16:
        return f"k packed as (B, H_KV, N_KV, D) in memory, 16-byte aligned (strides {tuple(sk)})"
    if tuple(sv) != (Hk * D * Nk, D * Nk, Nk, 1) or v.data_ptr() % 16:
        return f"v packed as (B, H_KV, D, N_KV) in memory, 16-byte aligned (strides {tuple(sv)})"
    return None
