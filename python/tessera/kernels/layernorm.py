"""tessera.kernels.layer_norm(x, weight, bias, eps): layer norm over the last
dim (statistics in fp32), like torch.nn.functional.layer_norm.

Two kernels (kernels/layernorm.py): layer_norm_fwd_kernel reads a row once
into registers (one program per row); layer_norm_fwd_looped_kernel sweeps
column blocks three times (mean, variance, output; the later sweeps hit L2).
The table was measured on an H200 (docs/performance.md). Mean and rstd
(fp32) are returned too with return_stats=True.
"""
from .. import next_power_of_2
from . import _files

LOOPED_BLOCK = 8192

# block -> (kernel, num_warps[, looped block]) by element size; bigger blocks: looped.
# Measured on an H200 (docs/performance.md): 1-warp rows of 1024 lost to 2 (fp32) and
# 4 (bf16) warps in the re-run, so those entries keep the larger counts.
_TABLE = {
    4: {1024: ("register", 2), 2048: ("register", 2), 4096: ("register", 2), 8192: ("register", 8),
        16384: ("register", 16), 32768: ("register", 32)},
    2: {1024: ("register", 4), 2048: ("register", 2), 4096: ("register", 4), 8192: ("register", 8),
        16384: ("looped", 8, 8192), 32768: ("looped", 8, 8192)},
}


def layer_norm_config(n_cols, dtype=None):
    size = 4 if dtype is None else max(2, min(4, _element_size(dtype)))
    block = next_power_of_2(max(1, n_cols))
    if block < 1024:
        return {"kernel": "register", "BLOCK_SIZE": block, "num_warps": max(1, min(4, n_cols // 256))}
    entry = _TABLE[size].get(block, ("looped", 8, LOOPED_BLOCK))
    if entry[0] == "looped":
        return {"kernel": "looped", "BLOCK_SIZE": entry[2], "num_warps": entry[1]}
    return {"kernel": "register", "BLOCK_SIZE": block, "num_warps": entry[1]}


def _element_size(dtype):
    import torch
    return torch.empty((), dtype=dtype).element_size()


def layer_norm(x, weight, bias, eps=1e-5, *, return_stats=False, block_size=None, num_warps=None,
               programs=None, looped=None, backend=None):
    import torch
    shape = x.shape
    n_cols = shape[-1]
    x2 = x.reshape(-1, n_cols)
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    weight, bias = weight.contiguous(), bias.contiguous()
    n_rows = x2.shape[0]
    y = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    mean = torch.empty(n_rows, dtype=torch.float32, device=x.device)
    rstd = torch.empty(n_rows, dtype=torch.float32, device=x.device)
    if n_rows and n_cols:
        config = layer_norm_config(n_cols, x.dtype)
        if looped is not None and looped != (config["kernel"] == "looped"):
            config["kernel"] = "looped" if looped else "register"
            config["BLOCK_SIZE"] = min(LOOPED_BLOCK, next_power_of_2(n_cols)) if looped else next_power_of_2(n_cols)
        if block_size is not None:
            config["BLOCK_SIZE"] = block_size
        if num_warps is not None:
            config["num_warps"] = num_warps
        module = _files.load("layernorm")
        meta = {"BLOCK_SIZE": config["BLOCK_SIZE"]}
        if config["kernel"] == "looped":
            _files.with_backend(module.layer_norm_fwd_looped_kernel, backend)[(n_rows,)](
                x2, y, weight, bias, mean, rstd, x2.stride(0), y.stride(0), n_cols, float(eps), **meta,
                num_warps=config["num_warps"])
        else:
            if config["BLOCK_SIZE"] < n_cols:
                raise ValueError(f"block_size {config['BLOCK_SIZE']} < {n_cols} columns needs looped=True")
            kernel = _files.with_backend(module.layer_norm_fwd_kernel, backend)
            args = (x2, y, weight, bias, mean, rstd, x2.stride(0), y.stride(0), n_rows, n_cols, float(eps))
            if programs is None:
                programs = n_rows  # one per row (measured faster than a persistent loop)
            kernel[(programs,)](*args, **meta, num_warps=config["num_warps"])
    y = y.view(shape)
    return (y, mean, rstd) if return_stats else y
