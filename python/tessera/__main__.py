"""`python -m tessera ARGS`, and the `tessera` command a wheel puts on PATH: the C++ CLI
(compiler/cli/Main.cpp; docs/cli.md), the same program as build/bin/tessera, run in this process's
place (os.execv: its output, its exit status).

The binary is the first that exists of: the one the wheel carries (tessera/bin/tessera,
python/CMakeLists.txt), then <build>/bin/tessera for the build whose extension this package
loaded (<build>/python/tessera/_C*.so), then for the build directories _loader.py searches.
"""
import os
import pathlib
import sys

from . import _ext, _loader

_PACKAGE = pathlib.Path(__file__).resolve().parent


def cli_candidates():
    candidates = [_PACKAGE / "bin" / "tessera"]
    ext_dirs = []
    if _ext.C is not None and getattr(_ext.C, "__file__", None):
        ext_dirs.append(pathlib.Path(_ext.C.__file__).resolve().parent)
    ext_dirs += [pathlib.Path(d) for d in _loader.search_path()]
    for d in ext_dirs:  # <build>/python/tessera -> <build>/bin/tessera
        cli = d.parent.parent / "bin" / "tessera"
        if cli not in candidates:
            candidates.append(cli)
    return candidates


def cli_path():
    """The tessera executable, or None."""
    for cli in cli_candidates():
        if cli.is_file() and os.access(cli, os.X_OK):
            return cli
    return None


def main(argv=None):
    args = sys.argv[1:] if argv is None else list(argv)
    cli = cli_path()
    if cli is None:
        print("tessera: error: the tessera executable was not found (looked for "
              + ", ".join(str(c) for c in cli_candidates())
              + "); build it (cmake --build build) or reinstall the wheel", file=sys.stderr)
        return 127
    # `tessera tune` runs `$TESSERA_PYTHON -m tessera.tune`: this interpreter, which imports this package.
    os.environ.setdefault("TESSERA_PYTHON", sys.executable)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(str(cli), [str(cli)] + args)


if __name__ == "__main__":
    sys.exit(main())
