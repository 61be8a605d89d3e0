"""Fused row-wise softmax: one program per row, the row held in registers.

Reads each element once and writes it once, so it is bound by memory
bandwidth: max, exp, sum and the division happen on the loaded block.
"""
import tessera
import tessera.language as tl

LOG2E = tl.constexpr(1.4426950408889634)


@tessera.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr):
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row in range(row_start, n_rows, row_step):
        row_ptr = in_ptr + row * in_row_stride
        offsets = tl.arange(0, BLOCK_SIZE)
        mask = offsets < n_cols
        row_x = tl.load(row_ptr + offsets, mask=mask, other=-float("inf")).to(tl.float32)
        shifted = row_x - tl.max(row_x, axis=0)
        numerator = tl.exp2(shifted * LOG2E)
        denominator = tl.sum(numerator, axis=0)
        result = numerator / denominator
        out_row = out_ptr + row * out_row_stride
        tl.store(out_row + offsets, result, mask=mask)
