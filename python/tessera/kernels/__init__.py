"""Ready-made kernels with launch heuristics, on torch CUDA tensors.

    import tessera.kernels as tk
    y = tk.softmax(x)                        # softmax over the last dim, x's dtype
    y = tk.layer_norm(x, weight, bias, 1e-5) # layer norm over the last dim
    c = tk.matmul(a, b)                      # GEMM on tensor cores (fp16/bf16), autotuned
    o = tk.attention(q, k, v, causal=True)   # FlashAttention-style, autograd included
    o = tk.attention_fp8(q8, k8, vt8, qs, ks, vs)          # fp8 e4m3 forward, per-tensor descales, bf16 out
    c = tk.scaled_matmul(a8, b8, sa, sb, torch.bfloat16)   # fp8 GEMM: per-tensor/row/column or block scales

The kernels themselves are the files in the repository's kernels/ folder,
which a wheel carries as tessera/kernels/src/ (see _files.py for how they
are found); softmax.py and layernorm.py here
choose block size, warps and grid (docs/performance.md explains the choices)
and launch them; matmul.py picks a GEMM configuration from its table
(MATMUL_CONFIGS) with @tessera.autotune; attention.py launches
kernels/attention.py (docs/attention.md).

`tessera.kernels.matmul` is the function (as softmax is); the module with the
tables is importlib.import_module("tessera.kernels.matmul"), and its tables
are exported here too.
"""
from .attention import (attention, attention_backward, attention_config, attention_forward, attention_forward_autotuner,
                        attention_fp8, attention_fp8_config)
from .layernorm import layer_norm, layer_norm_config
from .matmul import (MATMUL_CONFIGS, HOPPER_MATMUL_CONFIGS, HOPPER_EPILOGUE_EXTRA_CONFIGS, matmul_configs, MATMUL_DTYPES, matmul, matmul_autotuner, matmul_config_name,
                     matmul_tma_autotuner, matmul_last_autotuner, matmul_epilogue_autotuner, parse_matmul_config,
                     matmul_tma_persistent_autotuner)
from .scaled_matmul import (HOPPER_SCALED_MATMUL_CONFIGS, HOPPER_BLOCK_SCALED_MATMUL_CONFIGS, SCALED_MATMUL_CONFIGS,
                            BLOCK_SCALED_MATMUL_CONFIGS, scaled_matmul, scaled_matmul_autotuner, scaled_matmul_configs,
                            scaled_matmul_last_autotuner)
from .softmax import softmax, softmax_config

__all__ = ["softmax", "softmax_config", "layer_norm", "layer_norm_config", "matmul", "MATMUL_CONFIGS", "HOPPER_MATMUL_CONFIGS",
           "HOPPER_EPILOGUE_EXTRA_CONFIGS", "matmul_configs",
           "MATMUL_DTYPES", "matmul_autotuner", "matmul_tma_autotuner", "matmul_last_autotuner", "matmul_epilogue_autotuner",
           "matmul_tma_persistent_autotuner",
           "matmul_config_name", "parse_matmul_config", "attention", "attention_forward", "attention_backward", "attention_config",
           "attention_forward_autotuner", "attention_fp8", "attention_fp8_config", "scaled_matmul", "scaled_matmul_configs", "scaled_matmul_autotuner",
           "scaled_matmul_last_autotuner", "HOPPER_SCALED_MATMUL_CONFIGS", "HOPPER_BLOCK_SCALED_MATMUL_CONFIGS",
           "SCALED_MATMUL_CONFIGS", "BLOCK_SCALED_MATMUL_CONFIGS"]
