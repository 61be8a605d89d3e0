"""Triton compatibility mode: `import triton` gives tessera, with no change to the program.

    import tessera.compat
    tessera.compat.install()          # from here on, `import triton` statements get tessera
    import triton, triton.language as tl

or, for a program left as it is, `TESSERA_AS_TRITON=1 python app.py` (the wheel's
tessera_as_triton.pth and python/_tessera_as_triton.py call install() at the first
`import triton`). docs/compatibility.md lists what maps where.

How: install() replaces builtins.__import__ with a function that answers the import
statements naming `triton` or `triton.*`: each Triton module name maps to a tessera
module (ALIASES below, else the same path under tessera.compat.triton, the facade
package that holds Triton's spellings). Names with no tessera counterpart
(triton.compiler, triton.tools, ...) raise ModuleNotFoundError saying so; nothing
falls back to an installed Triton.

Who keeps the real Triton: imports made by torch's own modules (and by an installed
Triton's own modules) are left alone, so torch.compile's Inductor, which generates
Triton code and drives Triton's compiler, keeps the installed Triton (or finds none,
as without tessera). sys.modules is not touched: `sys.modules["triton"]`,
importlib.import_module("triton") and importlib.util.find_spec("triton") still mean
the installed Triton. A module that imported triton before install() keeps what it got.
torch.library.wrap_triton takes tessera's kernels too (_torch_library.py).
"""
import builtins
import importlib
import threading

from . import _torch_library

# Importers (top-level package names) whose `import triton` keeps the installed Triton
# (the same list as python/_tessera_as_triton.py's, which cannot import this one).
KEEP_REAL_TRITON = ("torch", "functorch", "triton")

# Triton modules that are tessera modules themselves (the rest live under tessera.compat.triton).
ALIASES = {
    "triton.language": "tessera.language",
    "triton.language.core": "tessera.language",
    "triton.language.standard": "tessera.language",
    "triton.language.math": "tessera.language.math",
    "triton.language.random": "tessera.language.random",
    "triton.language.extra": "tessera.language.extra",
    "triton.language.extra.libdevice": "tessera.language.math",
    "triton.language.extra.cuda": "tessera.language.extra.cuda",
    "triton.language.extra.cuda.libdevice": "tessera.language.math",
    "triton.testing": "tessera.testing",
    "triton.runtime.driver": "tessera.runtime.driver",
}

FACADE = "tessera.compat.triton"

_lock = threading.Lock()
_state = {"on": False, "hook": None, "previous_import": None, "keep_real": KEEP_REAL_TRITON,
          "torch_library_done": False}


def tessera_module_name(triton_name):
    """The tessera module that stands for the Triton module `triton_name` ('triton.language' ->
    'tessera.language', 'triton.runtime.jit' -> 'tessera.compat.triton.runtime.jit')."""
    if triton_name in ALIASES:
        return ALIASES[triton_name]
    if triton_name == "triton" or triton_name.startswith("triton."):
        return FACADE + triton_name[len("triton"):]
    raise ValueError(f"{triton_name!r} is not a Triton module name")


def facade_module(triton_name):
    """The tessera module imported for `import triton_name`; ModuleNotFoundError when the
    compatibility mode has none."""
    target = tessera_module_name(triton_name)
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as e:
        if e.name is None or not (target == e.name or target.startswith(e.name + ".")):
            raise  # a module the facade itself imports is missing: not this name's fault
        raise ModuleNotFoundError(
            f"No module named '{triton_name}': tessera's Triton compatibility mode has no counterpart "
            f"for it (see docs/compatibility.md)", name=triton_name) from None


def _wants_real_triton(importer_globals):
    if not importer_globals:
        return False
    importer = importer_globals.get("__name__") or ""
    return importer.partition(".")[0] in _state["keep_real"]


def _import_facade(name, fromlist):
    if not fromlist:
        facade_module(name)  # `import triton.x.y` binds `triton`; x.y must exist on it
        return facade_module("triton")
    module = facade_module(name)
    for item in fromlist:
        if item == "*" or hasattr(module, item):
            continue
        sub = f"{name}.{item}"
        try:
            facade_module(sub)
        except ModuleNotFoundError:
            # Never let `from triton import x` find an installed Triton's triton.x in sys.modules.
            raise ImportError(f"cannot import name '{item}' from '{name}' (tessera's Triton compatibility "
                              f"mode; see docs/compatibility.md)", name=name) from None
    return module


def _make_import(previous):
    def tessera_import(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0 and _state["on"] and name.partition(".")[0] == "triton" and not _wants_real_triton(globals):
            return _import_facade(name, fromlist)
        module = previous(name, globals, locals, fromlist, level)
        if _state["on"] and not _state["torch_library_done"] and name.startswith("torch"):
            _state["torch_library_done"] = _torch_library.patch_loaded()
        return module

    return tessera_import


def install(keep_real=KEEP_REAL_TRITON):
    """Turns the compatibility mode on (again: no effect). `keep_real`: the top-level packages
    whose own `import triton` statements keep the installed Triton (default: torch, functorch;
    an installed Triton's own modules always keep it)."""
    with _lock:
        _state["keep_real"] = tuple(keep_real) + ("triton",)
        facade_module("triton")  # loads the facade first: a broken install fails here, changing nothing
        if _state["hook"] is None or builtins.__import__ is not _state["hook"]:
            _state["previous_import"] = builtins.__import__
            _state["hook"] = builtins.__import__ = _make_import(builtins.__import__)
        _state["on"] = True
        _state["torch_library_done"] = _torch_library.patch_loaded()  # torch imported before install()


def uninstall():
    """Turns the compatibility mode off: later `import triton` statements import Triton again
    (modules that imported the facade keep it)."""
    with _lock:
        _state["on"] = False  # a hook that another one wraps by now stays, passing everything on
        _torch_library.unpatch()
        _state["torch_library_done"] = False
        if _state["hook"] is not None and builtins.__import__ is _state["hook"]:
            builtins.__import__ = _state["previous_import"]
            _state["hook"] = _state["previous_import"] = None


def installed():
    """True while the compatibility mode is on."""
    return _state["on"]


__all__ = ["install", "uninstall", "installed", "facade_module", "tessera_module_name", "ALIASES",
           "KEEP_REAL_TRITON"]
