# RUN: --kernel k --signature "*fp32,*fp32,i32" --constexpr BLOCK=256
import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    acc = 0
    for start in range(0, n, BLOCK):
        acc += tl.sum(tl.load(x_ptr + start + tl.arange(0, BLOCK)), axis=0)
    tl.store(out_ptr, acc)
