"""tessera.kernels.softmax(x): softmax over the last dim, computed in fp32,
returned in x's dtype (fp32, bf16, fp16).

Two kernels (kernels/softmax.py): softmax_kernel holds a whole row in
registers (BLOCK_SIZE = next power of two >= the row), reading and writing
each element once; softmax_online_kernel sweeps over column blocks twice
(running max and sum, then the output; the second sweep reads the row back
from L2, which the first asked to keep it). Both are launched with one
program per row: the hardware then overlaps one program's loads with
another's reductions, which beat a persistent grid in every case measured.

The table was measured on an H200 (docs/performance.md): what matters is
the bytes each SM has in flight, i.e. elements per thread times programs
per SM (limited by registers). 16-bit rows want ~32 elements per thread,
fp32 rows ~16; from 32 KiB rows on, the two-sweep kernel wins for bf16,
and at 64 KiB for fp32 (its registers hold one block, not the whole row).
The rows its first sweep leaves in L2 for the second must fit there: 16-bit
rows of 32768 (64 KiB) on 8192 blocks at five programs per SM leave up to
~42 MB waiting, near the whole 50 MB L2 (the likely cause of their 0.80x
copy bandwidth: the second sweep then reads from DRAM). They take 16384 blocks on 16 warps with the
last block kept in registers (KEEP_LAST) under a 64-register cap: two
programs per SM, 32 KiB of each row waiting in L2 (8.5 MB in all). Fused
functions keep the cap (a causal mask and a column scale spill 16 bytes a
thread: cheaper than one program per SM).
"""
from .. import next_power_of_2
from . import _files

# block -> (kernel, num_warps[, online block[, keep the last block, maxnreg]]) by element size;
# bigger blocks: online.
_TABLE = {
    4: {1024: ("register", 2), 2048: ("register", 4), 4096: ("register", 8), 8192: ("register", 16),
        16384: ("online", 16, 16384), 32768: ("register", 16)},
    2: {1024: ("register", 1), 2048: ("register", 2), 4096: ("register", 4), 8192: ("register", 8),
        16384: ("online", 8, 8192), 32768: ("online", 16, 16384, True, 64)},
}
_LONG = {4: ("online", 16, 16384), 2: ("online", 8, 8192)}  # rows longer than 32768
# NVRTC's PTX for KEEP_LAST needs more registers (52 bytes of spills in the sweep under the cap): its
# 16-bit rows of 32768 take the plain online kernel on 16384 blocks (64 registers, two programs per SM).
_NVRTC = {2: {32768: ("online", 16, 16384)}}
ONLINE_BLOCK = 8192  # for online=True without a block size


def softmax_config(n_cols, dtype=None, backend="llvm"):
    """{'kernel': 'register'|'online', 'BLOCK_SIZE', 'num_warps', 'KEEP_LAST', 'maxnreg'} for rows of
    n_cols elements (KEEP_LAST and maxnreg: the online kernel's, None for ptxas's choice) compiled by
    backend ("llvm" or "nvrtc")."""
    size = 4 if dtype is None else max(2, min(4, _element_size(dtype)))
    block = max(1024, next_power_of_2(max(1, n_cols)))
    if next_power_of_2(max(1, n_cols)) < 1024:
        return {"kernel": "register", "BLOCK_SIZE": next_power_of_2(max(1, n_cols)),
                "num_warps": max(1, min(4, n_cols // 256)), "KEEP_LAST": False, "maxnreg": None}
    entry = _TABLE[size].get(block, _LONG[size])
    if backend == "nvrtc":
        entry = _NVRTC.get(size, {}).get(block, entry)
    if entry[0] == "online":
        keep_last, maxnreg = entry[3:] if len(entry) > 3 else (False, None)
        return {"kernel": "online", "BLOCK_SIZE": entry[2], "num_warps": entry[1], "KEEP_LAST": keep_last,
                "maxnreg": maxnreg}
    return {"kernel": "register", "BLOCK_SIZE": block, "num_warps": entry[1], "KEEP_LAST": False, "maxnreg": None}


def _element_size(dtype):
    if isinstance(getattr(dtype, "itemsize", None), int):  # numpy dtypes, torch >= 2.1
        return dtype.itemsize
    import torch
    return torch.empty((), dtype=dtype).element_size()


def softmax(x, out=None, *, prologue=None, epilogue=None, block_size=None, num_warps=None, programs=None,
            online=None, backend=None):
    """Row softmax of the last dim of a CUDA tensor (any leading dims). The keyword
    arguments override the heuristics (programs: grid size; online: which kernel);
    backend: "llvm" or "nvrtc" (default: TESSERA_BACKEND, else llvm).
    prologue(x, row, cols) / epilogue(y, row, cols): @tessera.jit functions fused before and
    after the softmax (x and y fp32 blocks of one row; docs/fusion.md), e.g. a scale and a
    causal mask: `return tl.where(cols <= row, x * 0.125, -float("inf"))`."""
    import torch
    if x.dim() == 0:
        raise ValueError("softmax needs at least one dimension")
    shape = x.shape
    x2 = x.reshape(-1, shape[-1]) if x.dim() != 2 else x
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    n_rows, n_cols = x2.shape
    y = out.view(n_rows, n_cols) if out is not None else torch.empty((n_rows, n_cols), dtype=x.dtype,
                                                                      device=x.device)
    if n_rows == 0 or n_cols == 0:
        return y.view(shape)
    from .. import _C
    config = softmax_config(n_cols, x.dtype, backend or (_C.default_backend() if _C is not None else "llvm"))
    if online is not None and online != (config["kernel"] == "online"):
        config.update(kernel="online" if online else "register", KEEP_LAST=False, maxnreg=None,
                      BLOCK_SIZE=min(ONLINE_BLOCK, next_power_of_2(n_cols)) if online else next_power_of_2(n_cols))
    if block_size is not None or num_warps is not None:  # the register cap was chosen for the table's shape
        config.update(KEEP_LAST=False, maxnreg=None)
    if block_size is not None:
        config["BLOCK_SIZE"] = block_size
    if num_warps is not None:
        config["num_warps"] = num_warps
    module = _files.load("softmax")
    kernel = module.softmax_online_kernel if config["kernel"] == "online" else module.softmax_kernel
    kernel = _files.with_backend(kernel, backend)
    if config["kernel"] == "register" and config["BLOCK_SIZE"] < n_cols:
        raise ValueError(f"block_size {config['BLOCK_SIZE']} < {n_cols} columns needs online=True")
    args = (y, x2, x2.stride(0), y.stride(0), n_rows, n_cols)
    meta = {"BLOCK_SIZE": config["BLOCK_SIZE"]}
    if config["KEEP_LAST"]:
        meta["KEEP_LAST"] = True
    if config["maxnreg"] is not None:
        meta["maxnreg"] = config["maxnreg"]
    if prologue is not None:
        meta["PROLOGUE"] = prologue
    if epilogue is not None:
        meta["EPILOGUE"] = epilogue
    if programs is None:
        programs = n_rows
    kernel[(programs,)](*args, **meta, num_warps=config["num_warps"])
    return y.view(shape)
