import tessera
import tessera.language as tl

@tessera.jit
def _add(a, b):
    return a + b

@tessera.jit
def _pair_max(v1, i1, v2, i2):
    take = v1 > v2
    return tl.where(take, v1, v2), tl.where(take, i1, i2)

@tessera.jit
def red_kernel(x_ptr, out_ptr, idx_ptr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    s = tl.reduce(x, 1, _add)                          # M
    am = tl.argmax(x, axis=1)                          # M
    mi = tl.argmin(x, axis=0)                          # N
    mv, mx = tl.max(x, axis=1, return_indices=True)
    nv, nx = tl.min(x, 1, return_indices=True, return_indices_tie_break_left=False)
    xi = x.to(tl.int32)
    xs = tl.xor_sum(xi, axis=1)
    cs = tl.cumsum(x, axis=1)
    cp = tl.cumprod(x, axis=0, reverse=True)
    sc = tl.associative_scan(x, 1, _add)
    all_max = tl.argmax(x, axis=None)
    tl.store(out_ptr + offs, cs + cp + sc)
    rows = tl.arange(0, M)
    tl.store(idx_ptr + rows, am + mx + nx + xs + all_max)
    tl.store(out_ptr + rows, s + mv + nv)
    tl.store(idx_ptr + tl.arange(0, N), mi)
    kv = tl.sum(x, axis=1, keep_dims=True)
    tl.store(out_ptr + offs, x + kv)
