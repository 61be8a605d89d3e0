"""On/off switches in the environment (TESSERA_INTERPRET=1, TESSERA_AUTOTUNE=off, ...).

Every switch the Python side reads goes through flag(), whose rule is the C++
side's (runtime/Cache.cpp's truthy(), which reads TESSERA_CACHE and
TESSERA_KEEP_STAGES), so that a spelling means the same on both sides:

    unset or empty                          the switch's default
    0, false, no, off (in any letter case)  off
    anything else                           on

The value is not stripped: " off" is on, as in C++.
"""
import os

OFF = ("0", "false", "no", "off")


def flag(name, default=False):
    """Whether the switch `name` is on (`default` when it is unset or empty)."""
    value = os.environ.get(name, "")
    if not value:
        return default
    return value.lower() not in OFF
