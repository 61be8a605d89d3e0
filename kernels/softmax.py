"""Row-wise softmax, fp32/bf16/fp16 in and out, computed in fp32.

softmax_kernel: the whole row in registers (BLOCK_SIZE >= n_cols), so each
element is read once and written once: bound by memory bandwidth. Programs
loop over rows (row, row + num_programs, ...): launch one per row (what
tessera.kernels.softmax does), or a persistent grid of a few per SM.

softmax_online_kernel: rows longer than one block. A first sweep over the
row's column blocks keeps a running max m and sum s of exp(x - m) (the sum
rescaled by exp(m_old - m_new) when the max grows); a second sweep writes
exp(x - m) / s. The first sweep asks L2 to keep the row (evict_last) so the
second one reads it from L2, not DRAM.

Both take optional fused functions (constexprs, @jit functions inlined; docs/fusion.md):
PROLOGUE(x, row, cols) -> x on the fp32 input block before the softmax (e.g. scale and
mask: return -inf for masked columns), EPILOGUE(y, row, cols) -> y on the result before
the store. `row` is the row index, `cols` the block of column indices.
"""
import tessera
import tessera.language as tl

LOG2E = tl.constexpr(1.4426950408889634)


@tessera.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr, PROLOGUE: tl.constexpr = None, EPILOGUE: tl.constexpr = None):
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row in range(row_start, n_rows, row_step):
        row_ptr = in_ptr + row * in_row_stride
        offsets = tl.arange(0, BLOCK_SIZE)
        mask = offsets < n_cols
        row_x = tl.load(row_ptr + offsets, mask=mask, other=-float("inf")).to(tl.float32)
        if PROLOGUE is not None:
            row_x = tl.where(mask, PROLOGUE(row_x, row, offsets), -float("inf"))
        row_max = tl.max(row_x, axis=0)
        numerator = tl.exp2((row_x - row_max) * LOG2E)
        # One division per row, a multiply per element.
        inv = 1.0 / tl.sum(numerator, axis=0)
        out_row = out_ptr + row * out_row_stride
        out_ptrs = out_row + offsets
        row_y = numerator * inv
        if EPILOGUE is not None:
            row_y = EPILOGUE(row_y, row, offsets)
        tl.store(out_ptrs, row_y, mask=mask)


@tessera.jit
def softmax_online_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_rows, n_cols,
                          BLOCK_SIZE: tl.constexpr, PROLOGUE: tl.constexpr = None,
                          EPILOGUE: tl.constexpr = None):
    offsets = tl.arange(0, BLOCK_SIZE)
    for row in range(tl.program_id(0), n_rows, tl.num_programs(0)):
        row_ptr = in_ptr + row * in_row_stride
        out_row = out_ptr + row * out_row_stride
        m = tl.max(tl.full([BLOCK_SIZE], -float("inf"), tl.float32), axis=0)
        s = tl.sum(tl.zeros([BLOCK_SIZE], tl.float32), axis=0)
        for start in range(0, n_cols, BLOCK_SIZE):
            cols = start + offsets
            x = tl.load(row_ptr + cols, mask=cols < n_cols, other=-float("inf"),
                        eviction_policy="evict_last").to(tl.float32)
            if PROLOGUE is not None:
                x = tl.where(cols < n_cols, PROLOGUE(x, row, cols), -float("inf"))
            m_new = tl.maximum(m, tl.max(x, axis=0))
            p = tl.exp2((x - m_new) * LOG2E)
            s = s * tl.exp2((m - m_new) * LOG2E) + tl.sum(p, axis=0)
            m = m_new
        inv = 1.0 / s
        for start in range(0, n_cols, BLOCK_SIZE):
            cols = start + offsets
            mask = cols < n_cols
            x = tl.load(row_ptr + cols, mask=mask, other=-float("inf"),
                        eviction_policy="evict_first").to(tl.float32)
            if PROLOGUE is not None:
                x = tl.where(mask, PROLOGUE(x, row, cols), -float("inf"))
            y = tl.exp2((x - m) * LOG2E) * inv
            if EPILOGUE is not None:
                y = EPILOGUE(y, row, cols)
            tl.store(out_row + cols, y, mask=mask, eviction_policy="evict_first")
