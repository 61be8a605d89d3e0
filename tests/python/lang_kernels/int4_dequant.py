"""Two int4 dequantisation kernels shaped as GPTQ's and AWQ's (tests/python/test_ptx_emulator.py runs their PTX
in tests/python/ptx_emulator.py): act-order 4-bit unpacking over a flat index (g_idx gather, zeros from a packed
row, fp32 arithmetic, fp16 store), and an 8-way unpack built from a triple tl.interleave with shifts made by
reshape / broadcast (all in registers, as Triton compiles it)."""
import tessera.language as tl
from tessera import jit


@jit
def dequant_act_order(g_idx_ptr, scales_ptr, qweight_ptr, qzeros_ptr, out_ptr, numels,
                      N: tl.constexpr, NUM_GROUPS: tl.constexpr, BLOCK: tl.constexpr):
    x = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = x < numels
    row = x // N
    col = x % N
    g = tl.load(g_idx_ptr + row, mask=mask, eviction_policy="evict_last")
    g = tl.where(g < 0, g + NUM_GROUPS, g)
    scale = tl.load(scales_ptr + col + N * g, mask=mask, eviction_policy="evict_last").to(tl.float32)
    qz = tl.load(qzeros_ptr + (N // 8) * g + col // 8, mask=mask, other=0, eviction_policy="evict_last")
    zero = (qz >> ((col % 8) * 4)) & 15
    qw = tl.load(qweight_ptr + col + N * (row // 8), mask=mask, other=0, eviction_policy="evict_last")
    weight = (qw >> ((row % 8) * 4)) & 15
    value = (weight.to(tl.float32) - zero.to(tl.float32)) * scale
    tl.store(out_ptr + x, value.to(tl.float16), mask=mask)


@jit
def dequant_interleaved(qweight_ptr, scales_ptr, zeros_ptr, group_size, out_ptr, num_cols, num_rows,
                        BLOCK_X: tl.constexpr, BLOCK_Y: tl.constexpr):
    rows = tl.program_id(1) * BLOCK_Y + tl.arange(0, BLOCK_Y)
    cols = tl.program_id(0) * BLOCK_X + tl.arange(0, BLOCK_X)
    mask = (rows < num_rows)[:, None] & (cols < num_cols)[None, :]
    packed = tl.load(qweight_ptr + num_cols * rows[:, None] + cols[None, :], mask)
    packed = tl.interleave(packed, packed)
    packed = tl.interleave(packed, packed)
    packed = tl.interleave(packed, packed)
    # nibble j of each word is the value at position order[j] = [0, 4, 1, 5, 2, 6, 3, 7]
    order = ((tl.arange(0, 2) * 4)[None, :] + tl.arange(0, 4)[:, None]).reshape(8)
    shifts = tl.broadcast_to((order * 4)[None, :], (BLOCK_Y * BLOCK_X, 8))
    shifts = tl.reshape(shifts, (BLOCK_Y, BLOCK_X * 8))
    weights = (packed >> shifts) & 0xF
    zrow = tl.program_id(1) * BLOCK_Y // group_size + tl.arange(0, 1)
    zmask = (zrow < num_rows // group_size)[:, None] & (cols < num_cols)[None, :]
    zeros = tl.load(zeros_ptr + num_cols * zrow[:, None] + cols[None, :], zmask)
    zeros = tl.interleave(zeros, zeros)
    zeros = tl.interleave(zeros, zeros)
    zeros = tl.interleave(zeros, zeros)
    zeros = (tl.broadcast_to(zeros, (BLOCK_Y, BLOCK_X * 8)) >> shifts) & 0xF
    out_cols = tl.program_id(0) * BLOCK_X * 8 + tl.arange(0, BLOCK_X * 8)
    smask = (zrow < num_rows // group_size)[:, None] & (out_cols < num_cols * 8)[None, :]
    scales = tl.load(scales_ptr + num_cols * 8 * zrow[:, None] + out_cols[None, :], smask)
    scales = tl.broadcast_to(scales, (BLOCK_Y, BLOCK_X * 8))
    values = ((weights - zeros) * scales).to(out_ptr.dtype.element_ty)
    omask = (rows < num_rows)[:, None] & (out_cols < num_cols * 8)[None, :]
    tl.store(out_ptr + 8 * num_cols * rows[:, None] + out_cols[None, :], values, omask)
