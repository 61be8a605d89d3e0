"""A [XBLOCK, 1] column broadcast against a [1, RBLOCK] range and summed along the row: the gradient
of cross entropy as torch's Inductor writes it (triton_per_fused__log_softmax_backward... in a
training step: the target column, a one-hot row, the loss scale, the log-sum-exp)."""
import tessera
import tessera.language as tl


@tessera.jit
def nll_grad_kernel(grad_ptr, target_ptr, scale_ptr, lse_ptr, xnumel, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r = tl.arange(0, RBLOCK)[None, :]
    target = tl.load(target_ptr + xindex, xmask)  # [XBLOCK, 1] int64
    keep = target != -100
    onehot = tl.where(tl.where(keep, target, 0) == r, -1.0, 0.0)
    scale = tl.load(scale_ptr)
    weight = onehot * tl.where(keep, scale, 0.0)
    total = tl.sum(tl.where(xmask, weight, 0.0), 1)[:, None]
    logits = tl.load(grad_ptr + r + RBLOCK * xindex, xmask, other=0.0)
    lse = tl.load(lse_ptr + xindex, xmask)
    p = tl.exp(logits - lse)
    tl.store(grad_ptr + r + RBLOCK * xindex, weight - p * total, xmask)
