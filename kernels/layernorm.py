"""Layer norm forward with weight and bias, fp32
statistics: y = (x - mean) * rstd * w + b per row, rstd = 1 / sqrt(var + eps),
var the biased variance; Mean and Rstd (fp32, one per row) are written too.

layer_norm_fwd_kernel: the row in registers (BLOCK_SIZE >= N), read once;
programs loop over rows (row, row + num_programs, ...).
layer_norm_fwd_looped_kernel: any N, one program per row, three sweeps over
column blocks (mean, variance, output).
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
    # Rows too long for registers: sweep the row three times (sum, squared
    # deviations, output), keeping per-lane partial sums in fp32.
    row = tl.program_id(0)
    x_row = X + row * x_row_stride
    y_row = Y + row * y_row_stride
    lanes = tl.arange(0, BLOCK_SIZE)
    sums = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, N, BLOCK_SIZE):
        sums += tl.load(x_row + start + lanes, mask=start + lanes < N, other=0.0).to(tl.float32)
    mean = tl.sum(sums, axis=0) / N
    squares = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, N, BLOCK_SIZE):
        inside = start + lanes < N
        v = tl.load(x_row + start + lanes, mask=inside, other=0.0).to(tl.float32)
        d = tl.where(inside, v - mean, 0.0)
        squares += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(squares, axis=0) / N + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for start in range(0, N, BLOCK_SIZE):
        inside = start + lanes < N
        v = tl.load(x_row + start + lanes, mask=inside, other=0.0).to(tl.float32)
        w = tl.load(W + start + lanes, mask=inside, other=0.0).to(tl.float32)
        b = tl.load(B + start + lanes, mask=inside, other=0.0).to(tl.float32)
        tl.store(y_row + start + lanes, (v - mean) * rstd * w + b, mask=inside)
