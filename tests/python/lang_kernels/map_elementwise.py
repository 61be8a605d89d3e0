# tl.map_elementwise and tl.extra.cuda.smid / globaltimer: compiled by test_map_elementwise.py and
# test_special_registers.py (PTX through both back-ends, ptxas, the IR), interpreted against numpy
# there, and run on the GPU by tests/gpu/test_launch_misc.py.
import tessera
import tessera.language as tl


@tessera.jit
def compare(x, y):  # Triton's test_map_elementwise: a data-dependent if/elif/else with returns
    if x < y:
        return -1
    elif x == y:
        return 0
    else:
        return 1


@tessera.jit
def compare_kernel(X, Y, Z, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    y = tl.load(Y + tl.arange(0, BLOCK))
    z = tl.map_elementwise(compare, x, y)
    tl.store(Z + tl.arange(0, BLOCK), z)


@tessera.jit
def divmod_(a, b):
    return a // b, a % b


@tessera.jit
def divmod_kernel(A, B, C, D, BLOCK: tl.constexpr):
    a = tl.load(A + tl.arange(0, BLOCK))
    b = tl.load(B + tl.arange(0, BLOCK))
    c, d = tl.map_elementwise(divmod_, a, b)
    tl.store(C + tl.arange(0, BLOCK), c)
    tl.store(D + tl.arange(0, BLOCK), d)


@tessera.jit
def divmod_pair(a0, a1, b0, b1):
    return a0 // b0, a1 // b1, a0 % b0, a1 % b1


@tessera.jit
def divmod_pack_kernel(A, B, C, D, BLOCK: tl.constexpr):
    a = tl.load(A + tl.arange(0, BLOCK))
    b = tl.load(B + tl.arange(0, BLOCK))
    c, d = tl.map_elementwise(divmod_pair, a, b, pack=2)
    tl.store(C + tl.arange(0, BLOCK), c)
    tl.store(D + tl.arange(0, BLOCK), d)


@tessera.jit
def pair_sum(a0, a1):  # which elements share a call shows: both get the pair's sum
    s = a0 + a1
    return s, s


@tessera.jit
def pair_sum_kernel(A, C, BLOCK: tl.constexpr):
    a = tl.load(A + tl.arange(0, BLOCK))
    tl.store(C + tl.arange(0, BLOCK), tl.map_elementwise(pair_sum, a, pack=2)[0])  # a tuple, as in Triton


@tessera.jit
def safe_log(x, floor):  # only the taken side runs: log of a negative number is never computed
    if x > 0.0:
        r = tl.log(x)
    else:
        r = floor
    return r


@tessera.jit
def safe_log_kernel(X, Z, FLOOR: tl.constexpr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)[:, None]
    cols = tl.arange(0, N)[None, :]
    x = tl.load(X + rows * N + cols)
    z = tl.map_elementwise(safe_log, x, FLOOR)  # a scalar broadcast to the block
    tl.store(Z + rows * N + cols, z)


@tessera.jit
def collatz_steps(n):  # a data-dependent loop per element
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


@tessera.jit
def collatz_kernel(X, Z, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    tl.store(Z + tl.arange(0, BLOCK), tl.map_elementwise(collatz_steps, x))


@tessera.jit
def smid_kernel(Out):
    tl.store(Out + tl.program_id(0), tl.extra.cuda.smid())


@tessera.jit
def gdc_kernel(X, Out, n, BLOCK: tl.constexpr):  # Triton's tutorial 11 (programmatic dependent launch)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.extra.cuda.gdc_wait()
    x = tl.load(X + offs, mask=offs < n)
    tl.extra.cuda.gdc_launch_dependents()
    tl.store(Out + offs, x + 1, mask=offs < n)


@tessera.jit
def two_smids_kernel(Out):  # pure, as in Triton: one read serves both
    a = tl.extra.cuda.smid()
    b = tl.extra.cuda.smid()
    tl.store(Out + tl.program_id(0), a + b)


@tessera.jit
def globaltimer_kernel(Out1, Out2, func: tl.constexpr):  # Triton's test_globaltimer
    start = func()
    off = tl.arange(0, 128)
    for i in range(10000):
        tl.store(Out1 + off, tl.load(Out1 + off) + 1)
    end = func()
    tl.store(Out2, start)
    tl.store(Out2 + 1, end)


@tessera.jit
def two_timers_kernel(Out):  # two reads with nothing between: neither merged nor dropped
    a = tl.extra.cuda.globaltimer()
    b = tl.extra.cuda.globaltimer()
    unused = tl.extra.cuda.globaltimer()
    tl.store(Out, a)
    tl.store(Out + 1, b)


@tessera.jit
def unused_map_kernel(X, Z, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    unused = tl.map_elementwise(compare, x, x)
    tl.store(Z + tl.arange(0, BLOCK), x)


@tessera.jit
def lookup_twice(table, i):  # a load per element, where its index says
    if i >= 0:
        return tl.load(table + i) * 2
    return 0


@tessera.jit
def lookup_kernel(T, I, Z, BLOCK: tl.constexpr):
    i = tl.load(I + tl.arange(0, BLOCK))
    tl.store(Z + tl.arange(0, BLOCK), tl.map_elementwise(lookup_twice, T, i))
