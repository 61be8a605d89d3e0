import tessera
import tessera.language as tl


@tessera.jit
def _affine(a1, b1, a2, b2):
    # x -> a1 x + b1, then x -> a2 x + b2: associative, not commutative
    return a1 * a2, b1 * a2 + b2


@tessera.jit
def scan_2d(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr, REVERSE: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.cumsum(x, axis=AXIS, reverse=REVERSE))


@tessera.jit
def affine_scan_2d(a_ptr, b_ptr, out_a_ptr, out_b_ptr, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr,
                   REVERSE: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    a, b = tl.associative_scan((tl.load(a_ptr + offs), tl.load(b_ptr + offs)), AXIS, _affine, reverse=REVERSE)
    tl.store(out_a_ptr + offs, a)
    tl.store(out_b_ptr + offs, b)
