"""Two wgmma dots issued before either result is read (FlashAttention-3's key step in
miniature): the pass marks both `deferred` and puts dot_wait {pending = 1} before the first
reader of S (the later dot T may still run) and dot_wait {pending = 0} before T's, that one
with the values computed in between (e) as the operands it must follow."""
import tessera
import tessera.language as tl


@tessera.jit
def two_dots(q_ptr, k_ptr, v_ptr, o_ptr):
    r = tl.arange(0, 64)
    q = tl.load(q_ptr + r[:, None] * 64 + r[None, :])
    k = tl.load(k_ptr + r[:, None] * 64 + r[None, :])
    v = tl.load(v_ptr + r[:, None] * 64 + r[None, :])
    s = tl.dot(q, k)
    t = tl.dot(q, v)
    e = tl.exp2(s * 0.5)
    tl.store(o_ptr + r[:, None] * 64 + r[None, :], t * e)
