"""Golden input for hoist-epilogue-loads: a pipelined wgmma K loop, then a 16-bit residual tile
(moved above the loop's dot_wait, anchoring it, evict_first) and a bias row (stays: an L2 hit
that every tile reads)."""
import tessera
import tessera.language as tl


@tessera.jit
def gemm_residual_bias(a_ptr, b_ptr, c_ptr, r_ptr, bias_ptr, K, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    ks = tl.arange(0, 64)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k in range(0, K, 64):
        a = tl.load(a_ptr + offs[:, None] * K + (k + ks)[None, :])
        b = tl.load(b_ptr + (k + ks)[:, None] * BLOCK + offs[None, :])
        acc = tl.dot(a, b, acc)
    tile = offs[:, None] * BLOCK + offs[None, :]
    acc += tl.load(r_ptr + tile)
    acc += tl.load(bias_ptr + offs)[None, :]
    tl.store(c_ptr + tile, acc.to(tl.float16))
