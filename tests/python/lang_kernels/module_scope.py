"""Module-level names as Triton libraries write them (test_lang_module_scope.py)."""
import math

import tessera
import tessera.language as tl

try:
    from tessera.language.extra.hip import libdevice as picked  # no such module: the handler runs
    PICKED = 1
except ImportError:
    from tessera.language.extra.cuda import libdevice as picked
    PICKED = 2
finally:
    FINALLY = 7

try:
    from tessera.language.extra import libdevice as first_choice  # exists: the handler does not run
except ImportError:
    first_choice = None

if PICKED == 2:  # the front-end folds this condition
    SCALE = 3.0
elif PICKED == 1:
    SCALE = 4.0
else:
    SCALE = 5.0

if math.cos(0.0) > 0:  # only Python can evaluate this one
    OFFSET = 10.0
else:
    OFFSET = 20.0

fast_tanh = picked.tanh
my_cast = tl.cast
from tessera.language import load as tload  # noqa: E402


@tessera.jit
def module_scope_kernel(x_ptr, out_ptr):
    offs = tl.arange(0, 16)
    x = tload(x_ptr + offs)
    y = my_cast(fast_tanh(x), tl.float32) * SCALE + OFFSET + PICKED + FINALLY + first_choice.tanh(0.0)
    tl.store(out_ptr + offs, y)


@tessera.jit
def folded_kernel(x_ptr, out_ptr):
    offs = tl.arange(0, 16)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * SCALE + PICKED + FINALLY)
