# A grab-bag of the syntax the front-end accepts.
from __future__ import annotations
from .. import helpers as h
from .mod import (a as b, c,)
import tessera.language as tl, math

SCALE = 0x10 + 0o17 - 0b1010 * 1_000 // 3 % 7 ** 2 ** -1
NAMES = ['a', "b", '''c''', r'\d', f"{x}" "\t\x41\u00e9"]
T = ()
U = (1,)
x = y = z = 2.5E+3 if not SCALE else .5
a, (b, c) = 1, (2, 3)


@h.decorate(key=True, other=None)
@tl.inline
def helper(p: tl.tensor, q, _ignored_=None, r=-1) -> tl.tensor: return p


def body(ptr, n: int = 4, flag: tl.constexpr = False) -> None:
    i = 0
    while i < n and flag is not None or i in (1, 2):
        i += 1; continue
    else:
        pass
    for j, k in zip(range(n), tl.static_range(0, n, 2)):
        if j == k: break
        elif j != k and j >= k > 0 <= n:
            v = ptr[j:k:2, None, ::-1, :]
            v[0] |= ~v[1] ^ v[2] & v[3] << 1 >> 2
        else:
            assert j not in [k], f"bad {j}"
    else:
        x.y.z = -(+x) @ y
    \
    return i, x if i else -x ** 2
