"""Ready-made kernels with launch heuristics, on torch CUDA tensors.

    import tessera.kernels as tk
    y = tk.softmax(x)                        # softmax over the last dim, x's dtype
    y = tk.layer_norm(x, weight, bias, 1e-5) # layer norm over the last dim

The kernels themselves are the files in the repository's kernels/ folder
(see _files.py for how they are found); softmax.py and layernorm.py here
choose block size, warps and grid (docs/performance.md explains the choices)
and launch them.
"""
from .layernorm import layer_norm, layer_norm_config
from .softmax import softmax, softmax_config

__all__ = ["softmax", "softmax_config", "layer_norm", "layer_norm_config"]
