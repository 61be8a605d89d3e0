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

The process-wide mode (install(process_wide=True), TESSERA_AS_TRITON=all) is for torch.compile:
a finder first on sys.meta_path and sys.modules entries make `triton` tessera for every importer,
torch included, and the stand-in package in _process_wide/ (first on sys.path) carries the mode
into the Python processes started with that path (Inductor's compile workers). docs/torch-compile.md.
torch.library.wrap_triton takes tessera's kernels too (_torch_library.py).
"""
import builtins
import importlib
import importlib.abc
import importlib.machinery
import os
import sys
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
    "triton.language.target_info": "tessera.language.target_info",
    "triton.language.extra": "tessera.language.extra",
    "triton.language.extra.libdevice": "tessera.language.math",
    "triton.language.extra.cuda": "tessera.language.extra.cuda",
    "triton.language.extra.cuda.libdevice": "tessera.language.math",
    "triton.testing": "tessera.testing",
    "triton.runtime.driver": "tessera.runtime.driver",
}

FACADE = "tessera.compat.triton"

_lock = threading.Lock()
_state = {"on": False, "hook": None, "previous_import": None, "keep_real": KEEP_REAL_TRITON, "finder": None,
          "torch_library_done": False}

# The folder holding the stand-in `triton` package (_process_wide/triton/__init__.py) that the
# process-wide mode puts first on sys.path, for the Python processes this one starts.
PROCESS_WIDE_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_process_wide")


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


class _AliasLoader(importlib.abc.Loader):
    """Loads a Triton module name as the tessera module that stands for it (the module object
    itself: `sys.modules["triton.language"] is tessera.language`)."""

    def __init__(self, module):
        self.module = module

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        pass


class _TritonFinder(importlib.abc.MetaPathFinder):
    """sys.meta_path's first finder in the process-wide mode: `triton` and `triton.*` are tessera's
    modules for every importer (import statements, importlib, find_spec); a name with none is
    ModuleNotFoundError, never an installed Triton's module."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "triton" and not fullname.startswith("triton."):
            return None
        module = facade_module(fullname)
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(module),
                                              is_package=hasattr(module, "__path__"))


def _real_triton_imported():
    module = sys.modules.get("triton")
    if module is None or module is facade_module("triton"):
        return False
    return not (getattr(module, "__file__", None) or "").startswith(PROCESS_WIDE_PATH + os.sep)  # the stand-in


def _install_process_wide():
    if _real_triton_imported():
        raise RuntimeError("tessera.compat.install(process_wide=True): the installed Triton is imported already "
                           f"({sys.modules['triton'].__file__}); turn the mode on before anything imports triton "
                           "(torch imports it at the first torch.compile, not at `import torch`)")
    # Every name Triton modules are imported by, registered now: the import system then never sets a
    # submodule over an attribute of the same name (triton.runtime.driver is Triton's DriverConfig object).
    for name in ("triton", *ALIASES):
        sys.modules[name] = facade_module(name)
    if _state["finder"] is None:
        _state["finder"] = _TritonFinder()
    if _state["finder"] not in sys.meta_path:
        sys.meta_path.insert(0, _state["finder"])
    if PROCESS_WIDE_PATH not in sys.path:
        sys.path.insert(0, PROCESS_WIDE_PATH)  # torch gives its compile workers sys.path as PYTHONPATH
    os.environ["TESSERA_AS_TRITON"] = "all"  # and its other children the environment (the wheel's .pth reads it)


def _uninstall_process_wide():
    if _state["finder"] in sys.meta_path:
        sys.meta_path.remove(_state["finder"])
    while PROCESS_WIDE_PATH in sys.path:
        sys.path.remove(PROCESS_WIDE_PATH)
    for name in [n for n in sys.modules if n == "triton" or n.startswith("triton.")]:
        del sys.modules[name]
    if os.environ.get("TESSERA_AS_TRITON") == "all":
        del os.environ["TESSERA_AS_TRITON"]


def install(keep_real=KEEP_REAL_TRITON, process_wide=False):
    """Turns the compatibility mode on (again: no effect). `keep_real`: the top-level packages
    whose own `import triton` statements keep the installed Triton (default: torch, functorch;
    an installed Triton's own modules always keep it).

    process_wide=True: `triton` is tessera for every importer of this process, torch included
    (`import triton`, importlib.import_module, find_spec and sys.modules all give tessera's modules:
    what torch.compile needs, docs/torch-compile.md), and for the Python processes it starts with
    its sys.path or environment (Inductor's compile workers). `keep_real` does not apply. It must
    be turned on before anything imports the installed Triton (RuntimeError otherwise)."""
    with _lock:
        if process_wide:
            facade_module("triton")  # a broken install fails here, changing nothing
            _install_process_wide()
            _state["process_wide"] = True
            _state["on"] = True
            return
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
        if _state.get("process_wide"):
            _uninstall_process_wide()
            _state["process_wide"] = False
        _state["on"] = False  # a hook that another one wraps by now stays, passing everything on
        _torch_library.unpatch()
        _state["torch_library_done"] = False
        if _state["hook"] is not None and builtins.__import__ is _state["hook"]:
            builtins.__import__ = _state["previous_import"]
            _state["hook"] = _state["previous_import"] = None


def installed():
    """True while the compatibility mode is on."""
    return _state["on"]


def process_wide_finder():
    """The process-wide mode's sys.meta_path finder (None before the mode was first turned on)."""
    return _state["finder"]


def process_wide():
    """True while the process-wide mode (install(process_wide=True)) is on."""
    return bool(_state.get("process_wide"))


__all__ = ["install", "uninstall", "installed", "process_wide", "facade_module", "tessera_module_name", "ALIASES",
           "KEEP_REAL_TRITON"]
