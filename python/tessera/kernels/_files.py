"""Where tessera.kernels finds its kernels: the bundled kernels/ folder.

The kernels live in one place, kernels/*.py at the repository root, where the
CLI, `tessera aot kernels/manifest.txt`, the golden tests and CI compile them;
a wheel carries a copy with the manifest in tessera/kernels/src/
(python/CMakeLists.txt installs it). This package loads those files by path,
as modules named tessera.kernels._files.<name>, so that @tessera.jit sees
their real file (diagnostics name kernels/softmax.py:LINE:COL).

The folder is, in order: $TESSERA_KERNELS_DIR if set (an override); else
tessera/kernels/src/ when this package is installed from a wheel; else the
kernels/ folder of the checkout this package sits in (python/tessera/kernels/
-> ../../../kernels). The `tessera` CLI looks in the same places
(compiler/cli/Locations.h).
"""
import importlib.util
import os
import pathlib
import sys

_HERE = pathlib.Path(__file__).resolve().parent


def kernels_dir():
    env = os.environ.get("TESSERA_KERNELS_DIR")
    if env:
        return pathlib.Path(env)
    installed = _HERE / "src"
    if (installed / "manifest.txt").is_file():
        return installed
    return _HERE.parents[2] / "kernels"


def load(name):
    """The module kernels/<name>.py (loaded once)."""
    module_name = f"{__name__}.{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    path = kernels_dir() / f"{name}.py"
    if not path.is_file():
        raise ImportError(f"tessera.kernels needs {path} (the bundled kernels: tessera/kernels/src in a wheel, "
                          "kernels/ in a checkout); set TESSERA_KERNELS_DIR to the folder that holds it")
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module


_variants = {}


def with_backend(kernel, backend):
    """`kernel` itself when backend is None or "", else a copy of the @jit function whose PTX that
    back-end makes ("llvm" or "nvrtc": docs/nvrtc.md), with its own compiled-kernel caches (made once)."""
    if not backend:
        return kernel
    key = (id(kernel), backend)
    variant = _variants.get(key)
    if variant is None:
        from ..jit import JITFunction
        variant = _variants[key] = JITFunction(kernel.fn, **{**kernel.options, "backend": backend})
    return variant
