"""Golden input: pointer casts in the axis analysis (a bf16 row read as 32-bit words)."""
import tessera
import tessera.language as tl


@tessera.jit
def pointer_casts(src, dst, n, BLOCK: tl.constexpr):
    # A scalar pointer cast keeps the byte alignment: 16-byte aligned words, 128-bit accesses.
    words = src.to(tl.pointer_type(tl.int32))
    offs = tl.arange(0, BLOCK)
    w = tl.load(words + offs, mask=offs < n)
    # Same element size: contiguity, alignment and constancy are kept.
    tl.store(dst.to(tl.pointer_type(tl.int32)) + offs, w, mask=offs < n)
    # A run of bf16 pointers cast to int32 pointers (2 bytes apart): no run of int32 (contiguity 1),
    # and each element is known 2-byte aligned only.
    ptrs = (src + offs).to(tl.pointer_type(tl.int32))
    v = tl.load(ptrs, mask=offs < n)
    tl.store(dst.to(tl.pointer_type(tl.int32)) + BLOCK + offs, v, mask=offs < n)
