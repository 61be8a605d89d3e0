"""Runs one attention forward (tessera's or Triton's compile of kernels/attention.py with the
same blocks) a few times, for a profiler to catch (bench/profile/ncu_attention.sh):

    python3 bench/profile/attention_once.py tessera|triton [D] [N] [causal] [CONFIG]

B = 32768 / N, H = 16, bf16, (B, H, N, D) contiguous, tessera's default configuration or CONFIG,
a JSON object of attention_config keys (e.g. '{"BLOCK_N": 128, "num_stages": 2}')."""
import json
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import attention as bench  # noqa: E402  (bench/attention.py: triton_forward)
import tessera.kernels as tk  # noqa: E402

which = sys.argv[1]
D = int(sys.argv[2]) if len(sys.argv) > 2 else 64
N = int(sys.argv[3]) if len(sys.argv) > 3 else 4096
causal = len(sys.argv) > 4 and sys.argv[4] in ("1", "causal", "true", "True")
config = json.loads(sys.argv[5]) if len(sys.argv) > 5 else None
B, H = max(1, 32768 // N), 16
q, k, v = (torch.randn((B, H, N, D), device="cuda", dtype=torch.bfloat16) for _ in range(3))
for _ in range(3):
    if which == "tessera":
        tk.attention_forward(q, k, v, causal, config=config)
    else:
        o = torch.empty_like(q)
        lse = torch.empty(q.shape[:3], device="cuda", dtype=torch.float32)
        bench.triton_forward(q, k, v, o, lse, causal, dict(tk.attention_config(D, causal), **(config or {})))
torch.cuda.synchronize()
