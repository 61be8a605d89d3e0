"""On/off switches in the environment (TESSERA_INTERPRET=1, TESSERA_AUTOTUNE=off, ...).

Every switch the Python side reads goes through this module, by the C++
side's rules, so that a spelling means the same on both sides:

    flag(name, default)    unset or empty: `default`; 0, false, no, off (any case): off;
                           anything else: on. C++'s truthy(), the rule of the runtime's
                           switches (TESSERA_CACHE, TESSERA_KEEP_STAGES) and of the
                           switches only Python reads.
    on_unless_zero(name)   off only when exactly "0". C++'s onUnlessZero(), the rule of
                           the compiler's switches that are on by default (TESSERA_MMA,
                           TESSERA_WGMMA, TESSERA_FP_FUSION): TESSERA_WGMMA=off leaves
                           the compiler on wgmma, so the kernel tables read it this way too.

Values are not stripped (" off" is on), as in C++.
"""
import os

OFF = ("0", "false", "no", "off")


def flag(name, default=False):
    """Whether the switch `name` is on (`default` when it is unset or empty)."""
    value = os.environ.get(name, "")
    if not value:
        return default
    return value.lower() not in OFF


def on_unless_zero(name):
    """Whether the compiler switch `name` (on by default) is on: it is unless exactly "0"."""
    return os.environ.get(name) != "0"
