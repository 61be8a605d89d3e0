"""Golden input: what tl.multiple_of / tl.max_contiguous add to the axis
analysis (a block start that is a runtime multiple of 16)."""
import tessera
import tessera.language as tl


@tessera.jit
def hinted_copy(src, dst, n, start_stride, BLOCK: tl.constexpr):
    start = tl.multiple_of(tl.program_id(0) * start_stride, 16)
    offs = tl.max_contiguous(tl.multiple_of(start + tl.arange(0, BLOCK), 16), BLOCK)
    unhinted = tl.program_id(0) * start_stride + tl.arange(0, BLOCK)
    x = tl.load(src + offs, mask=offs < n)
    tl.store(dst + unhinted, x, mask=unhinted < n)
