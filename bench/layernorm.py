"""Layer norm forward (weight and bias): tessera.kernels.layer_norm vs
torch.nn.functional.layer_norm vs a Triton layer norm structured like its tutorial 05 (our code,
below) vs a device-to-device copy of x (torch copy_). GB/s = (x read + y
written + weight, bias, mean, rstd) / time.

    python3 bench/layernorm.py [--quick] [--out DIR] [--providers tessera,copy]
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import harness  # noqa: E402

SHAPES = [(16384, 1024), (8192, 4096), (4096, 16384), (2048, 32768)]
DTYPES = ["float32", "bfloat16"]
EPS = 1e-5

_triton_kernel = None


def _triton():
    global _triton_kernel
    if _triton_kernel is None:
        import triton
        import triton.language as tl

        @triton.jit
        def layer_norm_fwd(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, stride, n, eps,
                           BLOCK_SIZE: tl.constexpr):
            # The usual Triton layer norm: one row per program, three sweeps over
            # column blocks (sum, squared deviations, normalise + affine).
            base = tl.program_id(0) * stride
            partial = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
            for start in range(0, n, BLOCK_SIZE):
                idx = start + tl.arange(0, BLOCK_SIZE)
                partial += tl.load(x_ptr + base + idx, mask=idx < n, other=0.0).to(tl.float32)
            mu = tl.sum(partial, axis=0) / n
            partial = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
            for start in range(0, n, BLOCK_SIZE):
                idx = start + tl.arange(0, BLOCK_SIZE)
                v = tl.load(x_ptr + base + idx, mask=idx < n, other=0.0).to(tl.float32)
                d = tl.where(idx < n, v - mu, 0.0)
                partial += d * d
            inv_std = 1 / tl.sqrt(tl.sum(partial, axis=0) / n + eps)
            tl.store(mean_ptr + tl.program_id(0), mu)
            tl.store(rstd_ptr + tl.program_id(0), inv_std)
            for start in range(0, n, BLOCK_SIZE):
                idx = start + tl.arange(0, BLOCK_SIZE)
                valid = idx < n
                v = tl.load(x_ptr + base + idx, mask=valid, other=0.0).to(tl.float32)
                w = tl.load(w_ptr + idx, mask=valid)
                b = tl.load(b_ptr + idx, mask=valid)
                tl.store(y_ptr + base + idx, (v - mu) * inv_std * w + b, mask=valid)

        _triton_kernel = layer_norm_fwd
    return _triton_kernel


def triton_layer_norm(x, w, b, y, mean, rstd):
    import triton
    M, N = x.shape
    max_fused = 65536 // x.element_size()
    block = min(max_fused, triton.next_power_of_2(N))
    num_warps = min(max(block // 256, 1), 8)
    _triton()[(M,)](x, y, w, b, mean, rstd, x.stride(0), N, EPS, BLOCK_SIZE=block, num_warps=num_warps,
                    num_ctas=1)
    return y


def providers(options=None):
    import torch

    def tessera_provider(backend):
        def make(inputs):
            import tessera.kernels as tk
            x, w, b, _, _, _ = inputs
            return lambda: tk.layer_norm(x, w, b, EPS, backend=backend)
        return make

    def torch_provider(inputs):
        x, w, b, _, _, _ = inputs
        return lambda: torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, EPS)

    def triton_provider(inputs):
        x, w, b, y, mean, rstd = inputs
        return lambda: triton_layer_norm(x, w, b, y, mean, rstd)

    def copy_provider(inputs):
        x, _, _, y, _, _ = inputs
        return lambda: y.copy_(x)

    out = {name: tessera_provider(backend) for name, backend in harness.tessera_backends(options)}
    out.update({"torch": torch_provider, "triton": triton_provider, "copy": copy_provider})
    return out


def check(inputs, provider, fn):
    import torch
    if provider == "copy":
        return
    x, w, b, y, _, _ = inputs
    out = fn()
    torch.cuda.synchronize()
    ref = torch.nn.functional.layer_norm(x.double(), (x.shape[-1],), w.double(), b.double(), EPS)
    harness.check_close(out, ref, 1e-5 if x.dtype == torch.float32 else 1e-2)


def cases(dtypes=DTYPES, shapes=SHAPES):
    import torch
    out = []
    for dtype in dtypes:
        for shape in shapes:
            def make(shape=shape, dtype=dtype):
                t = getattr(torch, dtype)
                x = torch.randn(shape, device="cuda", dtype=t)
                w = torch.randn(shape[1], device="cuda", dtype=t)
                b = torch.randn(shape[1], device="cuda", dtype=t)
                y = torch.empty_like(x)
                mean = torch.empty(shape[0], device="cuda", dtype=torch.float32)
                rstd = torch.empty(shape[0], device="cuda", dtype=torch.float32)
                return x, w, b, y, mean, rstd
            out.append((f"{dtype} {shape[0]}x{shape[1]}", make))
    return out


def nbytes(inputs):
    x, w, _, _, mean, _ = inputs
    return 2 * x.numel() * x.element_size() + 2 * w.numel() * w.element_size() + 2 * mean.numel() * 4


def run(options):
    return [harness.run_benchmark("layernorm", cases(), providers(options), nbytes, options, check=check)]


if __name__ == "__main__":
    opts = harness.parse(harness.parser(__doc__))
    reason = harness.skip_reason()
    if reason:
        print(f"layernorm benchmark skipped: {reason}")
        sys.exit(0)
    run(opts)
