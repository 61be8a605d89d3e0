"""Where tessera.kernels finds its kernels: the repository's kernels/ folder.

The kernels live in one place, kernels/*.py at the repository root, where the
CLI, `tessera aot kernels/manifest.txt`, the golden tests and CI compile them.
This package does not copy them: it loads those files by path, as modules
named tessera.kernels._files.<name>, so that @tessera.jit sees their real
file (diagnostics name kernels/softmax.py:LINE:COL).

The folder is, in order: $TESSERA_KERNELS_DIR if set; else the kernels/
folder of the checkout this package sits in (python/tessera/kernels/ ->
../../../kernels). A wheel does not carry kernels/: set TESSERA_KERNELS_DIR.
"""
import importlib.util
import os
import pathlib
import sys


def kernels_dir():
    env = os.environ.get("TESSERA_KERNELS_DIR")
    if env:
        return pathlib.Path(env)
    return pathlib.Path(__file__).resolve().parents[3] / "kernels"


def load(name):
    """The module kernels/<name>.py (loaded once)."""
    module_name = f"{__name__}.{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    path = kernels_dir() / f"{name}.py"
    if not path.is_file():
        raise ImportError(f"tessera.kernels needs {path} (the repository's kernels/ folder); "
                          "set TESSERA_KERNELS_DIR to the folder that holds it")
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
