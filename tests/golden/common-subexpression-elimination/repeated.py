"""Golden input for common-subexpression-elimination: pure ops computed twice from the same
operands merge into one (the index math written twice, exp(x) twice); loads do not (a
store between two loads of one address may change what the second reads), nor do
atomics."""
import tessera
import tessera.language as tl


@tessera.jit
def repeated(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    again = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)  # merged with offs
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + again, x + 1.0, mask=again < n)
    reloaded = tl.load(x_ptr + offs, mask=mask)  # kept: after a store
    tl.atomic_add(out_ptr + offs, x, mask=mask)
    tl.atomic_add(out_ptr + offs, x, mask=mask)  # kept: writes memory
    tl.store(out_ptr + offs, tl.exp(x) + tl.exp(x) + reloaded, mask=mask)
