"""Kernels over Triton's fp8e4b15 (uint8 storage): widening, narrowing (explicit and by tl.store's implicit
conversion), |x|, and tl.dot of fp8e4b15 operands. test_lang_fp8e4b15.py (CPU) and
tests/gpu/test_fp8e4b15_gpu.py run them."""
import tessera
import tessera.language as tl


@tessera.jit
def widen(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=m).to(dst.dtype.element_ty), mask=m)


@tessera.jit
def narrow(src, dst, n, BLOCK: tl.constexpr, IMPLICIT: tl.constexpr = False):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(src + offs, mask=m)
    if IMPLICIT:
        tl.store(dst + offs, x, mask=m)  # tl.store converts to the pointer's element type
    else:
        tl.store(dst + offs, x.to(tl.float8e4b15), mask=m)


@tessera.jit
def absolute(src, dst, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.abs(tl.load(src + offs)))


@tessera.jit
def dot(a, b, c, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    x = tl.load(a + rm[:, None] * K + rk[None, :])
    y = tl.load(b + rk[:, None] * N + rn[None, :])
    tl.static_assert(x.dtype == tl.float8e4b15 and x.dtype.is_fp8e4b15() and x.dtype.is_fp8())
    tl.store(c + rm[:, None] * N + rn[None, :], tl.dot(x, y))


@tessera.jit
def constants(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(src + offs, mask=m, other=0.5)  # `other` converted to fp8e4b15
    z = tl.zeros([BLOCK], dtype=tl.float8e4b15)
    f = tl.full([BLOCK], 1.5, tl.float8e4b15)
    w = tl.where(offs % 3 == 0, f, v)
    tl.store(dst + offs, (w.to(tl.float32) + z.to(tl.float16)).to(tl.float8e4b15))
