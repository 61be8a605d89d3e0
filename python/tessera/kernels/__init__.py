"""Ready-made kernels with launch heuristics, on torch CUDA tensors.

    import tessera.kernels as tk
    y = tk.softmax(x)                        # softmax over the last dim, x's dtype
    y = tk.layer_norm(x, weight, bias, 1e-5) # layer norm over the last dim
    o = tk.attention(q, k, v, causal=True)   # FlashAttention-style, autograd included

The kernels themselves are the files in the repository's kernels/ folder
(see _files.py for how they are found); softmax.py and layernorm.py here
choose block size, warps and grid (docs/performance.md explains the choices)
and launch them; attention.py does the same for kernels/attention.py
(docs/attention.md).
"""
from .attention import attention, attention_backward, attention_config, attention_forward
from .layernorm import layer_norm, layer_norm_config
from .softmax import softmax, softmax_config

__all__ = ["softmax", "softmax_config", "layer_norm", "layer_norm_config", "attention", "attention_forward",
           "attention_backward", "attention_config"]
