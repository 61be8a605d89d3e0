import tessera
import tessera.language as tl

@tessera.jit
def helper(x, lim):
    if x > lim:
        return lim
    y = x * 2
    if y > lim:
        return y - lim
    return y

@tessera.jit
def pair(x):
    if x < 0:
        return -x, 1
    return x, 0

@tessera.jit
def cf_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid >= n:
        return
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(0, n):
        if i == 3:
            continue
        v = tl.load(x_ptr + i * BLOCK + offs)
        if tl.sum(v, axis=0) > 100.0:
            break
        acc += v
    j = 0
    while True:
        j += 1
        if j >= n:
            break
    k = 0
    while k < n:
        k += 2
        if k == 7:
            continue
        acc += 1.0
    for q in tl.range(0, 10, num_stages=3):
        if q > n:
            return
        acc += q
    for s in tl.static_range(4):
        if s == 2:
            break
        acc += s
    h = helper(pid, n)
    a, sgn = pair(pid - 3)
    tl.store(out_ptr + pid * BLOCK + offs, acc + h + j + a + sgn)
