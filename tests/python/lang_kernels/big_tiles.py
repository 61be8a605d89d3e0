import tessera
import tessera.language as tl


@tessera.jit
def copy_tile(p, q, BLOCK: tl.constexpr):
    # Issue 32: an unmasked BLOCK x BLOCK tile, loaded and stored.
    r = tl.arange(0, BLOCK)
    x = tl.load(p + r[:, None] * BLOCK + r[None, :])
    tl.store(q + r[:, None] * BLOCK + r[None, :], x)


@tessera.jit
def scale_tile(p, q, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(p + r[:, None] * BLOCK + r[None, :])
    tl.store(q + r[:, None] * BLOCK + r[None, :], x * 2.0 + 1.0)


@tessera.jit
def sum_tile(p, q, BLOCK: tl.constexpr):
    # Loads only: the tile is reduced to one value.
    r = tl.arange(0, BLOCK)
    x = tl.load(p + r[:, None] * BLOCK + r[None, :])
    tl.store(q, tl.sum(tl.sum(x, 1), 0))
