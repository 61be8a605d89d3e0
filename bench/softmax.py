"""Row softmax: tessera.kernels.softmax vs torch.softmax vs Triton's fused
softmax (tutorial 02, below) vs a device-to-device copy of the same bytes
(torch copy_: the bandwidth ceiling). GB/s = (bytes read + written) / time.

    python3 bench/softmax.py [--quick] [--out DIR] [--providers tessera,copy] [--backend llvm|nvrtc|both]

tessera runs with each back-end (--backend, default both): "tessera" is LLVM's NVPTX
back-end, "tessera-nvrtc" the NVRTC one (docs/nvrtc.md).
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import harness  # noqa: E402

SHAPES = [(16384, 1024), (8192, 4096), (4096, 16384), (2048, 32768)]
DTYPES = ["float32", "bfloat16"]


# ---------------------------------------------------------------- Triton's
# Triton's baseline: the persistent fused softmax the way Triton's tutorial
# 02 structures it (programs sized from the compiled kernel's register use),
# written here in our own words.
_triton_kernel = None
_triton_cache = {}


def _triton():
    global _triton_kernel
    if _triton_kernel is None:
        import triton
        import triton.language as tl

        @triton.jit
        def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, rows, cols,
                           BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
            # The usual persistent Triton softmax: a row per iteration, the row in registers.
            for r in tl.range(tl.program_id(0), rows, tl.num_programs(0), num_stages=num_stages):
                idx = tl.arange(0, BLOCK_SIZE)
                valid = idx < cols
                x = tl.load(in_ptr + r * in_stride + idx, mask=valid, other=-float("inf"))
                e = tl.exp(x - tl.max(x, axis=0))
                tl.store(out_ptr + r * out_stride + idx, e / tl.sum(e, axis=0), mask=valid)

        _triton_kernel = softmax_kernel
    return _triton_kernel


def triton_softmax(x, y):
    import torch
    import triton
    kernel = _triton()
    n_rows, n_cols = x.shape
    block = triton.next_power_of_2(n_cols)
    num_warps = 8
    props = torch.cuda.get_device_properties(x.device)
    size_smem = getattr(props, "shared_memory_per_multiprocessor", 228 * 1024)
    num_stages = 4 if size_smem > 200000 else 2
    key = (x.dtype, block)
    if key not in _triton_cache:
        # As the tutorial sizes it, except that when num_stages=4 needs more shared memory than the GPU
        # has (fp32 rows of 32768 on an H200), fewer stages are tried.
        for stages in (num_stages, 2, 1):
            try:
                compiled = kernel.warmup(y, x, x.stride(0), y.stride(0), n_rows, n_cols, BLOCK_SIZE=block,
                                         num_stages=stages, num_warps=num_warps, grid=(1,))
                compiled._init_handles()
                break
            except Exception as e:  # noqa: BLE001 (triton.runtime.errors.OutOfResources)
                if "OutOfResources" not in type(e).__name__ or stages == 1:
                    raise
        regs = getattr(props, "regs_per_multiprocessor", 65536)
        occupancy = regs // (compiled.n_regs * 32 * num_warps)
        if compiled.metadata.shared:
            occupancy = min(occupancy, size_smem // compiled.metadata.shared)
        _triton_cache[key] = (max(1, occupancy) * props.multi_processor_count, stages)
    programs, num_stages = _triton_cache[key]
    programs = min(programs, n_rows)
    kernel[(programs, 1, 1)](y, x, x.stride(0), y.stride(0), n_rows, n_cols, BLOCK_SIZE=block,
                             num_stages=num_stages, num_warps=num_warps)


# -------------------------------------------------------------- providers

def providers(options=None):
    import torch

    def tessera_provider(backend):
        def make(inputs):
            import tessera.kernels as tk
            x, y = inputs
            return lambda: tk.softmax(x, out=y, backend=backend)
        return make

    def torch_provider(inputs):
        x, _ = inputs
        return lambda: torch.softmax(x, dim=-1)

    def triton_provider(inputs):
        x, y = inputs
        return lambda: triton_softmax(x, y)

    def copy_provider(inputs):
        x, y = inputs
        return lambda: y.copy_(x)

    out = {name: tessera_provider(backend) for name, backend in harness.tessera_backends(options)}
    out.update({"torch": torch_provider, "triton": triton_provider, "copy": copy_provider})
    return out


def check(inputs, provider, fn):
    import torch
    if provider == "copy":
        return
    x, y = inputs
    y.fill_(float("nan"))
    out = fn()
    torch.cuda.synchronize()
    out = y if out is None else out
    ref = torch.softmax(x.double(), dim=-1)
    harness.check_close(out, ref, 1e-5 if x.dtype == torch.float32 else 1e-2)


def cases(dtypes=DTYPES, shapes=SHAPES):
    import torch
    out = []
    for dtype in dtypes:
        for shape in shapes:
            def make(shape=shape, dtype=dtype):
                x = torch.randn(shape, device="cuda", dtype=getattr(torch, dtype))
                return x, torch.empty_like(x)
            out.append((f"{dtype} {shape[0]}x{shape[1]}", make))
    return out


def nbytes(inputs):
    x, _ = inputs
    return 2 * x.numel() * x.element_size()


def run(options):
    return [harness.run_benchmark("softmax", cases(), providers(options), nbytes, options, check=check)]


if __name__ == "__main__":
    opts = harness.parse(harness.parser(__doc__))
    reason = harness.skip_reason()
    if reason:
        print(f"softmax benchmark skipped: {reason}")
        sys.exit(0)
    run(opts)
