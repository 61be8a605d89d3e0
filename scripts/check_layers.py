#!/usr/bin/env python3
"""Checks that every layer of tessera's C++ includes only the layers below it.

The floors, bottom up (docs/architecture.md says why):

    5  cli | python            the command line; the extension's bindings
    4  runtime                 CUDA driver, kernel cache, launches
    3  driver                  source → PTX, wires the layers below together
    2  dsl | interp | passes | codegen
                               front-end, interpreter, optimiser, back-ends:
                               each stands on the IR, none knows the others
    1  ir                      block IR, types, layouts, shared analyses
    0  support                 diagnostics, environment switches

A file may include files of its own layer and of any floor below its own;
layers side by side on one floor do not include each other (codegen does not
include passes, cli does not include python). Prints one line per upward or
sideways include,

    compiler/ir/IR.h:11: #include "dsl/AST.h": the ir layer (compiler/ir/) may not include the dsl layer (dsl/); ir may include: support

and exits 1 when there is any. Run by the build (the CMake target
tessera_check_layers) and by tests/python/test_check_layers.py.
Usage: check_layers.py [--root REPO]
"""
import argparse
import os
import re
import sys

# (layer, floor, folders). A layer may include the layers of lower floors.
LAYERS = [
    ("support", 0, ["compiler/support/"]),
    ("ir", 1, ["compiler/ir/"]),
    ("dsl", 2, ["dsl/"]),
    ("interp", 2, ["compiler/interp/"]),
    ("passes", 2, ["compiler/passes/"]),
    ("codegen", 2, ["compiler/codegen/"]),
    ("driver", 3, ["compiler/driver/"]),
    ("runtime", 4, ["runtime/"]),
    ("cli", 5, ["compiler/cli/"]),
    ("python", 5, ["python/bindings/", "python/torch_fastpath/"]),
]

SOURCE_SUFFIXES = (".h", ".hpp", ".cpp", ".cc", ".def", ".inc")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def layer_of(path):
    """The (name, floor, folder) of a repository-relative path, or None."""
    for name, floor, folders in LAYERS:
        for folder in folders:
            if path.startswith(folder):
                return name, floor, folder
    return None


def folders_of(name):
    return next(folders for n, _, folders in LAYERS if n == name)


def allowed_below(name, floor):
    return [n for n, f, _ in LAYERS if f < floor]


def check_file(root, path):
    """The upward includes of one file (repository-relative path), as messages."""
    own = layer_of(path)
    if own is None:
        return []
    name, floor, _ = own
    problems = []
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = m.group(1)
            # "Bindings.h": a file next to this one.
            if "/" not in target or not layer_of(target):
                local = os.path.normpath(os.path.join(os.path.dirname(path), target))
                if os.path.exists(os.path.join(root, local)):
                    target = local
            other = layer_of(target)
            if other is None:  # LLVM, pybind11, ...: not ours
                continue
            other_name, other_floor, _ = other
            if other_name == name or other_floor < floor:
                continue
            below = allowed_below(name, floor)
            problems.append(
                f'{path}:{number}: #include "{m.group(1)}": the {name} layer '
                f'({", ".join(folders_of(name))}) may not include the {other_name} layer '
                f'({", ".join(folders_of(other_name))}); {name} may include: '
                f'{", ".join(below) if below else "nothing outside its folder"}')
    return problems


def layered_files(root):
    for _, _, folders in LAYERS:
        for folder in folders:
            top = os.path.join(root, folder)
            for dirpath, _, names in os.walk(top):
                for n in sorted(names):
                    if n.endswith(SOURCE_SUFFIXES):
                        yield os.path.relpath(os.path.join(dirpath, n), root).replace(os.sep, "/")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."),
                        help="the repository (default: this script's checkout)")
    args = parser.parse_args(argv)
    root = os.path.abspath(args.root)
    problems = []
    for path in sorted(layered_files(root)):
        problems += check_file(root, path)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"check_layers: {len(problems)} include{'s' if len(problems) > 1 else ''} "
              "against the layering (docs/architecture.md)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
