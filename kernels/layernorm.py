"""Layer norm forward with weight and bias (Triton's tutorial 05), fp32
statistics: y = (x - mean) * rstd * w + b per row, rstd = 1 / sqrt(var + eps),
var the biased variance; Mean and Rstd (fp32, one per row) are written too.

layer_norm_fwd_kernel: the row in registers (BLOCK_SIZE >= N), read once;
programs loop over rows (row, row + num_programs, ...).
layer_norm_fwd_looped_kernel: any N, one program per row, three sweeps over
column blocks (mean, variance, output) as in the tutorial.
"""
import tessera
import tessera.language as tl


@tessera.jit
def layer_norm_fwd_kernel(X, Y, W, B, Mean, Rstd, x_row_stride, y_row_stride, n_rows, N, eps,
                          BLOCK_SIZE: tl.constexpr):
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < N
    for row in range(tl.program_id(0), n_rows, tl.num_programs(0)):
        x = tl.load(X + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
        mean = tl.sum(x, axis=0) / N
        diff = tl.where(mask, x - mean, 0.0)
        var = tl.sum(diff * diff, axis=0) / N
        rstd = 1.0 / tl.sqrt(var + eps)
        tl.store(Mean + row, mean)
        tl.store(Rstd + row, rstd)
        w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(B + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(Y + row * y_row_stride + cols, diff * rstd * w + b, mask=mask)


@tessera.jit
def layer_norm_fwd_looped_kernel(X, Y, W, B, Mean, Rstd, x_row_stride, y_row_stride, N, eps,
                                 BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    X += row * x_row_stride
    Y += row * y_row_stride
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        _mean += tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.0)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1.0 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(B + cols, mask=mask, other=0.0).to(tl.float32)
        x = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(Y + cols, (x - mean) * rstd * w + b, mask=mask)
