"""Kernels with `tl.const` pointer parameters (Triton's read-only pointers):
copy_kernel reads through one; the others must not compile (test_lang_const.py)."""
import tessera
import tessera.language as tl


@tessera.jit
def choose(a, b, choose_b):
    if choose_b:
        return b
    else:
        return a


@tessera.jit
def copy_kernel(in_ptr: tl.const, out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(in_ptr + offs, mask=mask), mask=mask)


@tessera.jit
def store_kernel(in_ptr: tl.const, out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(in_ptr + offs, tl.load(out + offs))


@tessera.jit
def atomic_kernel(in_ptr: tl.const, out, n, BLOCK: tl.constexpr):
    tl.atomic_add(in_ptr, 1.0)


@tessera.jit
def constexpr_choice_kernel(in_ptr: tl.const, out, c_out: tl.const, CHOOSE_CONST: tl.constexpr):
    final_out = c_out if CHOOSE_CONST else out
    tl.store(final_out, tl.load(in_ptr))


@tessera.jit
def ternary_kernel(in_ptr: tl.const, out, c_out: tl.const, choose_const):
    final_out = c_out if choose_const else out
    tl.store(final_out, tl.load(in_ptr))


@tessera.jit
def if_kernel(in_ptr: tl.const, out, c_out: tl.const, choose_const):
    if choose_const:
        final_out = c_out
    else:
        final_out = out
    tl.store(final_out, tl.load(in_ptr))


@tessera.jit
def call_kernel(in_ptr: tl.const, out, c_out: tl.const, choose_const):
    final_out = choose(out, c_out, choose_const)
    tl.store(final_out, tl.load(in_ptr))
