# RUN: --kernel k --signature "*u8,*u8"
import tessera
import tessera.language as tl

@tessera.jit
def k(X, Y):
    x = tl.load(X + tl.arange(0, 512))
    y = tl.inline_asm_elementwise("shl.b32 $0, $1, 3;", "=r,r,r", [x], dtype=tl.int8, is_pure=True, pack=4)
    tl.store(Y + tl.arange(0, 512), y)
