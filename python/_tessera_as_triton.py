"""Run Triton programs on tessera without editing them: `TESSERA_AS_TRITON=1 python app.py`.

tessera's wheel puts tessera_as_triton.pth beside this module; Python runs its one
line (`import _tessera_as_triton`) at every start. Without TESSERA_AS_TRITON (or
with 0/false/no/off) this module does nothing. With it, the first `import triton`
statement loads tessera and turns on its compatibility mode (tessera.compat.install(),
docs/compatibility.md). Importing tessera waits until then: a program that never
imports triton never loads the compiler. Nothing here raises: a failure is one
line on stderr, and `import triton` then behaves as without tessera.

TESSERA_AS_TRITON=all asks for the process-wide mode instead (torch.compile on tessera,
docs/torch-compile.md): the first lookup of `triton` by anyone, torch included, turns it on.
"""
import os

ENVIRONMENT_VARIABLE = "TESSERA_AS_TRITON"


def requested():
    """True when TESSERA_AS_TRITON asks for the compatibility mode."""
    return os.environ.get(ENVIRONMENT_VARIABLE, "").strip().lower() not in ("", "0", "false", "no", "off")


# Importers whose `import triton` keeps the installed Triton (tessera.compat.KEEP_REAL_TRITON):
# their imports (torch importing triton while torch itself is being imported) start nothing.
KEEP_REAL_TRITON = ("torch", "functorch", "triton")


def _keeps_real_triton(importer_globals):
    return bool(importer_globals) and (importer_globals.get("__name__") or "").partition(".")[0] in KEEP_REAL_TRITON


def _hand_over_on_first_triton_import():
    import builtins
    import sys

    original = builtins.__import__

    def first_triton_import(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0 and name.partition(".")[0] == "triton" and builtins.__import__ is first_triton_import \
                and not _keeps_real_triton(globals):
            builtins.__import__ = original  # tessera.compat.install() puts its own hook here
            try:
                import tessera.compat
                tessera.compat.install()
            except Exception as e:  # noqa: BLE001  (never break the program: plain imports instead)
                print(f"tessera: {ENVIRONMENT_VARIABLE} is set but tessera's Triton compatibility mode "
                      f"could not start ({type(e).__name__}: {e}); `import triton` imports Triton",
                      file=sys.stderr)
            return builtins.__import__(name, globals, locals, fromlist, level)
        return original(name, globals, locals, fromlist, level)

    builtins.__import__ = first_triton_import


class _ProcessWideOnFirstLookup:
    """TESSERA_AS_TRITON=all: the first lookup of `triton` (an import statement, importlib, find_spec:
    torch's too) turns on tessera's process-wide mode (tessera.compat.install(process_wide=True),
    docs/torch-compile.md) and answers with its module."""

    def find_spec(self, fullname, path=None, target=None):
        import sys
        if fullname != "triton" and not fullname.startswith("triton."):
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        try:
            import tessera.compat
            tessera.compat.install(process_wide=True)
            return tessera.compat.process_wide_finder().find_spec(fullname, path, target)
        except Exception as e:  # noqa: BLE001  (never break the program: plain imports instead)
            print(f"tessera: {ENVIRONMENT_VARIABLE}=all is set but tessera's process-wide Triton compatibility "
                  f"mode could not start ({type(e).__name__}: {e}); `import triton` imports Triton", file=sys.stderr)
            return None


def process_wide_requested():
    """True when TESSERA_AS_TRITON=all asks for the process-wide mode (torch.compile on tessera)."""
    return os.environ.get(ENVIRONMENT_VARIABLE, "").strip().lower() == "all"


if process_wide_requested():
    try:
        import sys
        sys.meta_path.insert(0, _ProcessWideOnFirstLookup())
    except Exception:  # noqa: BLE001  (a .pth line must never stop the interpreter)
        pass
elif requested():
    try:
        _hand_over_on_first_triton_import()
    except Exception:  # noqa: BLE001  (a .pth line must never stop the interpreter)
        pass
