import tessera
import tessera.language as tl

@tessera.jit
def atomic_kernel(x_ptr, i_ptr, h_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(out_ptr + offs, mask=m, other=0.0)
    old = tl.atomic_add(x_ptr + offs, v, mask=m)
    old2 = tl.atomic_max(x_ptr + offs, v, mask=m, sem="relaxed", scope="cta")
    old3 = tl.atomic_min(x_ptr + (offs % 4), v)
    iv = offs.to(tl.int32)
    a = tl.atomic_and(i_ptr + offs, iv, mask=m) + tl.atomic_or(i_ptr + offs, iv) + tl.atomic_xor(i_ptr + offs, iv, sem="release")
    a += tl.atomic_xchg(i_ptr + offs, iv, mask=m, scope="sys") + tl.atomic_cas(i_ptr + offs, iv, iv + 1)
    a += tl.atomic_max(i_ptr + offs, iv, sem="acquire") + tl.atomic_min(i_ptr, 3)
    s = tl.atomic_add(x_ptr, 1.0)
    h = tl.atomic_add(h_ptr + offs, v.to(tl.float16), mask=m)
    tl.store(out_ptr + offs, old + old2 + old3 + a.to(tl.float32) + s + h.to(tl.float32), mask=m)
