"""Golden input for dead-code-elimination: ops whose results nobody reads go when they are
pure (exp, the index math only they used) or only read memory (a plain load); a volatile
load, a store and an atomic whose old value is unused stay."""
import tessera
import tessera.language as tl


@tessera.jit
def unused(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    dead = tl.exp(x) * 2.0  # removed
    unread = tl.load(out_ptr + offs * 2, mask=mask)  # removed, with offs * 2
    kept = tl.load(x_ptr + offs, mask=mask, volatile=True)  # stays: volatile
    old = tl.atomic_max(out_ptr + offs, x, mask=mask)  # stays: writes memory
    tl.store(out_ptr + offs, x, mask=mask)
