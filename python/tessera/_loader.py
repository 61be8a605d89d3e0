"""Finds and imports the C++ extension tessera._C.

Where it is looked for, in order (the first that imports wins):
  1. the tessera package directory itself (pip install, or a copy put there);
  2. $TESSERA_EXT_DIR (a directory holding _C.<abi>.so);
  3. <build>/python/tessera for <build> in $TESSERA_BUILD_DIR and the
     repository's build/, build-python/ and build-gpu-py/ directories.
The extension finds libtessera.so through its RPATH ($ORIGIN, $ORIGIN/../../lib).

Importing tessera never fails because the extension is missing: `_C` is then
None and the functions that need it raise ImportError saying how to build it.
"""
import importlib
import os
import pathlib

_PACKAGE = pathlib.Path(__file__).resolve().parent
_REPO = _PACKAGE.parent.parent


def search_path():
    dirs = []
    if os.environ.get("TESSERA_EXT_DIR"):
        dirs.append(pathlib.Path(os.environ["TESSERA_EXT_DIR"]))
    builds = []
    if os.environ.get("TESSERA_BUILD_DIR"):
        builds.append(pathlib.Path(os.environ["TESSERA_BUILD_DIR"]))
    builds += [_REPO / "build", _REPO / "build-python", _REPO / "build-gpu-py"]
    dirs += [b / "python" / "tessera" for b in builds]
    out = []
    for d in dirs:
        d = d.resolve()
        if d.is_dir() and d != _PACKAGE and str(d) not in out:
            out.append(str(d))
    return out


def load(package):
    """Returns (module or None, the ImportError or None)."""
    for d in search_path():
        if d not in package.__path__:
            package.__path__.append(d)
    try:
        return importlib.import_module(package.__name__ + "._C"), None
    except ImportError as e:
        return None, e


def missing_message(error):
    return ("tessera's C++ extension (tessera._C) could not be imported"
            + (f" ({error})" if error else "")
            + ". Build it with `cmake -S . -B build -G Ninja && ninja -C build` (or, against a prebuilt "
            "library, `cmake -S . -B build-gpu-py -DTESSERA_BUILD_COMPILER=OFF "
            "-DTESSERA_PREBUILT_LIB=$PWD/build/lib/libtessera.so && ninja -C build-gpu-py`), "
            "or point TESSERA_EXT_DIR at the directory holding _C*.so. Searched: "
            + ", ".join([str(_PACKAGE)] + search_path()))


def add_nvrtc_wheel_directories(C):
    """NVRTC (the nvrtc back-end's compiler, docs/nvrtc.md) from pip wheels: nvidia-cuda-nvrtc
    (CUDA 13: nvidia/cu13/lib) or nvidia-cuda-nvrtc-cu12 (nvidia/cuda_nvrtc/lib), searched after
    the CUDA toolkit's own copy."""
    import os
    import sys
    for base in sys.path:
        for sub in (("nvidia", "cu13", "lib"), ("nvidia", "cuda_nvrtc", "lib")):
            d = os.path.join(base or ".", *sub)
            if os.path.isdir(d):
                try:
                    C.add_nvrtc_search_directory(os.path.abspath(d))
                except Exception:  # noqa: BLE001  (an older extension without it)
                    return
