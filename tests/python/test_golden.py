"""Golden tests: printed IR of a kernel after a stage or pass.

Each file tests/golden/<stage-or-pass>/<case>.ir (or .cu: the CUDA C++ of the
NVRTC back-end, tests/golden/cuda/) starts with a line
`// RUN: <tessera arguments>`; the rest is the expected output. Set
TESSERA_UPDATE_GOLDEN=1 to rewrite them (then read the diff before committing).
"""
import os
import shlex

import pytest

from conftest import ROOT, run_cli

GOLDEN = ROOT / "tests" / "golden"
CASES = sorted(GOLDEN.glob("*/*.ir")) + sorted(GOLDEN.glob("*/*.cu"))


def test_there_are_golden_cases():
    assert len(CASES) >= 3


@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_golden(path):
    first, _, expected = path.read_text().partition("\n")
    assert first.startswith("// RUN: "), f"{path} must start with '// RUN: <args>'"
    proc = run_cli(shlex.split(first[len("// RUN: "):]), check=True)
    if os.environ.get("TESSERA_UPDATE_GOLDEN"):
        path.write_text(first + "\n" + proc.stdout)
        return
    assert proc.stdout == expected
