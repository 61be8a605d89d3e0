"""Row-wise softmax, fp32/bf16/fp16 in and out, computed in fp32.

softmax_kernel: the whole row in registers (BLOCK_SIZE >= n_cols), so each
element is read once and written once: bound by memory bandwidth. Programs
loop over rows (row, row + num_programs, ...): launch one per row (what
tessera.kernels.softmax does), or a persistent grid of a few per SM.

softmax_online_kernel: rows longer than one block. A first sweep over the
row's column blocks keeps a running max m and sum s of exp(x - m) (the sum
rescaled by exp(m_old - m_new) when the max grows); a second sweep writes
exp(x - m) / s. The first sweep asks L2 to keep the row (evict_last) so the
second one reads it from L2, not DRAM. With KEEP_LAST the row's last block
is loaded first (in flight with the first sweep's), kept in registers and
written from them: less of the row waits in L2 (tessera.kernels.softmax sets
it for 16-bit rows of 16385..32768 columns).

The candidates at the end of the file (persistent, with the next row or block
prefetched; bf16 rows kept packed in 32-bit words) are measured by
bench/softmax_variants.py and not dispatched by tessera.kernels.softmax yet.

softmax_kernel and softmax_online_kernel take optional fused functions (constexprs, @jit functions inlined; docs/fusion.md):
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
                          EPILOGUE: tl.constexpr = None, KEEP_LAST: tl.constexpr = False):
    offsets = tl.arange(0, BLOCK_SIZE)
    # KEEP_LAST: the row's last block stays in registers from the first sweep to the second,
    # which writes it without reading it again (less of the row waits in L2 between sweeps).
    if KEEP_LAST:
        swept = (n_cols - 1) // BLOCK_SIZE * BLOCK_SIZE
    else:
        swept = n_cols
    for row in range(tl.program_id(0), n_rows, tl.num_programs(0)):
        row_ptr = in_ptr + row * in_row_stride
        out_row = out_ptr + row * out_row_stride
        m = tl.max(tl.full([BLOCK_SIZE], -float("inf"), tl.float32), axis=0)
        s = tl.sum(tl.zeros([BLOCK_SIZE], tl.float32), axis=0)
        if KEEP_LAST:  # issued first: its load is in flight with the first block's
            last_cols = swept + offsets
            x_last = tl.load(row_ptr + last_cols, mask=last_cols < n_cols, other=-float("inf"),
                             eviction_policy="evict_first").to(tl.float32)
            if PROLOGUE is not None:
                x_last = tl.where(last_cols < n_cols, PROLOGUE(x_last, row, last_cols), -float("inf"))
        for start in range(0, swept, BLOCK_SIZE):
            cols = start + offsets
            x = tl.load(row_ptr + cols, mask=cols < n_cols, other=-float("inf"),
                        eviction_policy="evict_last").to(tl.float32)
            if PROLOGUE is not None:
                x = tl.where(cols < n_cols, PROLOGUE(x, row, cols), -float("inf"))
            m_new = tl.maximum(m, tl.max(x, axis=0))
            p = tl.exp2((x - m_new) * LOG2E)
            s = s * tl.exp2((m - m_new) * LOG2E) + tl.sum(p, axis=0)
            m = m_new
        if KEEP_LAST:
            m_new = tl.maximum(m, tl.max(x_last, axis=0))
            s = s * tl.exp2((m - m_new) * LOG2E) + tl.sum(tl.exp2((x_last - m_new) * LOG2E), axis=0)
            m = m_new
        inv = 1.0 / s
        for start in range(0, swept, BLOCK_SIZE):
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
        if KEEP_LAST:
            y_last = tl.exp2((x_last - m) * LOG2E) * inv
            if EPILOGUE is not None:
                y_last = EPILOGUE(y_last, row, last_cols)
            tl.store(out_row + last_cols, y_last, mask=last_cols < n_cols, eviction_policy="evict_first")


# ---------------------------------------------------------------------------------------------
# Candidates for long 16-bit rows (issue 5: bf16 rows of 16384 and 32768 reach ~86% of copy
# bandwidth with the kernels above). bench/softmax_variants.py times them against the kernels
# above; tessera.kernels.softmax does not dispatch to them (yet). All are persistent: launch a
# few programs per SM, each looping over rows pid, pid + P, ...


@tessera.jit
def softmax_prefetch_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_rows, n_cols,
                            BLOCK_SIZE: tl.constexpr, FMA_EXP: tl.constexpr = False,
                            STREAM: tl.constexpr = False):
    """Rows pid, pid + P, ... (P programs); row r + P is loaded before row r is reduced."""
    first = tl.program_id(0)
    step = tl.num_programs(0)
    offsets = tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_cols
    x_next = tl.load(in_ptr + first * in_row_stride + offsets, mask=mask & (first < n_rows),
                     other=-float("inf"))
    for row in range(first, n_rows, step):
        x = x_next.to(tl.float32)
        nxt = row + step
        if STREAM:
            x_next = tl.load(in_ptr + nxt * in_row_stride + offsets, mask=mask & (nxt < n_rows),
                             other=-float("inf"), eviction_policy="evict_first")
        else:
            x_next = tl.load(in_ptr + nxt * in_row_stride + offsets, mask=mask & (nxt < n_rows),
                             other=-float("inf"))
        row_max = tl.max(x, axis=0)
        if FMA_EXP:
            e = tl.exp2(x * LOG2E - row_max * LOG2E)
        else:
            e = tl.exp2((x - row_max) * LOG2E)
        inv = 1.0 / tl.sum(e, axis=0)
        y = e * inv
        if STREAM:
            tl.store(out_ptr + row * out_row_stride + offsets, y, mask=mask, cache_modifier=".cs")
        else:
            tl.store(out_ptr + row * out_row_stride + offsets, y, mask=mask)


@tessera.jit
def softmax_prefetch2_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_rows, n_cols,
                             BLOCK_SIZE: tl.constexpr):
    """As softmax_prefetch_kernel, two rows ahead: rows r + P and r + 2P are in flight while r is reduced."""
    first = tl.program_id(0)
    step = tl.num_programs(0)
    offsets = tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_cols
    x_a = tl.load(in_ptr + first * in_row_stride + offsets, mask=mask & (first < n_rows), other=-float("inf"))
    second = first + step
    x_b = tl.load(in_ptr + second * in_row_stride + offsets, mask=mask & (second < n_rows), other=-float("inf"))
    for row in range(first, n_rows, step):
        x = x_a.to(tl.float32)
        x_a = x_b
        nxt = row + 2 * step
        x_b = tl.load(in_ptr + nxt * in_row_stride + offsets, mask=mask & (nxt < n_rows), other=-float("inf"))
        row_max = tl.max(x, axis=0)
        e = tl.exp2((x - row_max) * LOG2E)
        inv = 1.0 / tl.sum(e, axis=0)
        tl.store(out_ptr + row * out_row_stride + offsets, e * inv, mask=mask)


@tessera.jit
def softmax_packed_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_rows, n_cols,
                          BLOCK_SIZE: tl.constexpr):
    """16-bit rows kept packed: the row is read as 32-bit words (two bf16 each, element 2i in the low
    half), the prefetched next row stays packed (half the registers of fp32), and each half is widened
    by a shift or a mask when it is used. Needs an even n_cols and even row strides; BLOCK_SIZE counts
    bf16 elements. Persistent with a one-row prefetch, as softmax_prefetch_kernel."""
    first = tl.program_id(0)
    step = tl.num_programs(0)
    words_in = in_ptr.to(tl.pointer_type(tl.int32))
    words_out = out_ptr.to(tl.pointer_type(tl.int32))
    in_stride = in_row_stride // 2
    out_stride = out_row_stride // 2
    offsets = tl.arange(0, BLOCK_SIZE // 2)
    mask = offsets < n_cols // 2
    NEG_INF2: tl.constexpr = -8323200  # 0xFF80FF80: two bf16 -inf
    w_next = tl.load(words_in + first * in_stride + offsets, mask=mask & (first < n_rows), other=NEG_INF2)
    for row in range(first, n_rows, step):
        w = w_next
        nxt = row + step
        w_next = tl.load(words_in + nxt * in_stride + offsets, mask=mask & (nxt < n_rows), other=NEG_INF2)
        lo = (w << 16).to(tl.float32, bitcast=True)
        hi = (w & -65536).to(tl.float32, bitcast=True)
        row_max = tl.max(tl.maximum(lo, hi), axis=0)
        e_lo = tl.exp2((lo - row_max) * LOG2E)
        e_hi = tl.exp2((hi - row_max) * LOG2E)
        inv = 1.0 / tl.sum(e_lo + e_hi, axis=0)
        y_lo = (e_lo * inv).to(tl.bfloat16).to(tl.uint16, bitcast=True).to(tl.int32)
        y_hi = (e_hi * inv).to(tl.bfloat16).to(tl.uint16, bitcast=True).to(tl.int32)
        tl.store(words_out + row * out_stride + offsets, y_lo | (y_hi << 16), mask=mask)


@tessera.jit
def softmax_online_prefetch_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_rows, n_cols,
                                   BLOCK_SIZE: tl.constexpr):
    """kernels/softmax.py's online kernel with the next column block loaded before the current
    one is reduced, in both sweeps (a fully masked load past the row's end moves no data)."""
    offsets = tl.arange(0, BLOCK_SIZE)
    for row in range(tl.program_id(0), n_rows, tl.num_programs(0)):
        row_ptr = in_ptr + row * in_row_stride
        out_row = out_ptr + row * out_row_stride
        m = tl.max(tl.full([BLOCK_SIZE], -float("inf"), tl.float32), axis=0)
        s = tl.sum(tl.zeros([BLOCK_SIZE], tl.float32), axis=0)
        x_next = tl.load(row_ptr + offsets, mask=offsets < n_cols, other=-float("inf"),
                         eviction_policy="evict_last")
        for start in range(0, n_cols, BLOCK_SIZE):
            x = x_next.to(tl.float32)
            ncols = start + BLOCK_SIZE + offsets
            x_next = tl.load(row_ptr + ncols, mask=ncols < n_cols, other=-float("inf"),
                             eviction_policy="evict_last")
            m_new = tl.maximum(m, tl.max(x, axis=0))
            p = tl.exp2((x - m_new) * LOG2E)
            s = s * tl.exp2((m - m_new) * LOG2E) + tl.sum(p, axis=0)
            m = m_new
        inv = 1.0 / s
        x_next = tl.load(row_ptr + offsets, mask=offsets < n_cols, other=-float("inf"),
                         eviction_policy="evict_first")
        for start in range(0, n_cols, BLOCK_SIZE):
            cols = start + offsets
            x = x_next.to(tl.float32)
            ncols = cols + BLOCK_SIZE
            x_next = tl.load(row_ptr + ncols, mask=ncols < n_cols, other=-float("inf"),
                             eviction_policy="evict_first")
            y = tl.exp2((x - m) * LOG2E) * inv
            tl.store(out_row + cols, y, mask=cols < n_cols, eviction_policy="evict_first")
