import tessera
import tessera.language as tl

@tessera.jit
def shape_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    t = tl.trans(x)                      # N x M
    t2 = x.T
    p = tl.permute(x, (1, 0))
    r = tl.reshape(x, (N, M))
    v = x.reshape(N, M)
    j = tl.join(x, x + 1.0)              # M x N x 2
    a, b = tl.split(j)
    c = tl.cat(x, x, can_reorder=True)   # 2M x N
    f = tl.flip(x)
    f0 = tl.flip(x, 0)
    e = tl.expand_dims(tl.ravel(x), 0)   # 1 x MN
    bt = tl.broadcast_to(tl.arange(0, N)[None, :], (M, N))
    out = a + b + f + f0 + bt.to(tl.float32) + tl.sum(t, axis=1)[None, :] * 0 + tl.sum(c, axis=0)[None, :]
    out += tl.reshape(t2 + p + r + v, (M, N)) + tl.reshape(e, (M, N))
    tl.store(out_ptr + offs, out)
