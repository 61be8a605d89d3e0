"""The conformance harness (../shared/conformance) with tessera's own compatibility mode.

run_compat.sh installs this file, in a copy of the harness, in place of harness/conformance_plugin.py
and keeps the original beside it as _conformance_harness.py. Everything the harness does
(sampling, budget, per-test records, classification) stays; only the name mapping differs:
instead of the harness's triton -> tessera facade, `tessera.compat.install()` answers test_core's
`import triton` / `import triton.language as tl`, exactly as it does for a user's program.

Three modules stay the installed Triton's, because they are Triton's test infrastructure and not
part of the language: triton._internal_testing (numpy_random, to_triton, dtype lists),
triton.runtime._allocation (conftest's allocator fixture) and triton.knobs (Triton's own settings,
whose tests are not applicable). The compatibility mode itself has no fallback to Triton.
"""
import builtins
import importlib
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TEST_INFRASTRUCTURE = ("triton._internal_testing", "triton.runtime._allocation", "triton.knobs")

# Load the harness without its own mapping (CONF_TARGET=triton installs none), then point it at tessera.
_target = os.environ.get("CONF_TARGET", "tessera")
os.environ["CONF_TARGET"] = "triton"
_spec = importlib.util.spec_from_file_location("_conformance_harness", os.path.join(HERE, "_conformance_harness.py"))
harness = importlib.util.module_from_spec(_spec)
sys.modules["_conformance_harness"] = harness
_spec.loader.exec_module(harness)
os.environ["CONF_TARGET"] = _target

if _target == "tessera":
    try:
        import torch  # noqa: F401  (torch first: it imports the installed triton for itself)
    except ImportError:
        pass
    _real = {}
    for _name in TEST_INFRASTRUCTURE:
        try:
            _real[_name] = importlib.import_module(_name)
        except Exception:  # noqa: BLE001  (no driver on a CPU machine: the module may still be fine)
            pass

    import tessera
    import tessera.compat

    tessera.compat.install()
    _compat_import = builtins.__import__

    def _import(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0 and fromlist and name in _real:
            return _real[name]
        return _compat_import(name, globals, locals, fromlist, level)

    builtins.__import__ = _import
    harness.TARGET = "tessera"
    harness.TESSERA_DIR = os.path.dirname(os.path.abspath(tessera.__file__))
    if getattr(tessera, "_C", None) is None and os.environ.get("CONF_ALLOW_NO_EXTENSION") != "1":
        raise ImportError("conformance: tessera._C did not load (" + str(getattr(tessera, "_C_error", "")) + ")")

# pytest finds the hooks on this module.
for _k, _v in vars(harness).items():
    if _k.startswith("pytest_"):
        globals()[_k] = _v
