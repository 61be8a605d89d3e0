"""Expected diagnostics: each tests/errors/<case>.py is a bad kernel whose
first line is `# RUN: <tessera compile arguments after the file>`; the file
<case>.err holds the exact message the CLI must print (file:line:col, the
source line, a caret), and the CLI must exit with status 1."""
import shlex

import pytest

from conftest import ROOT, run_cli

ERRORS = ROOT / "tests" / "errors"
CASES = sorted(ERRORS.glob("*.py"))


def test_there_are_at_least_fifteen_cases():
    assert len(CASES) >= 15


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_error_message(path):
    first = path.read_bytes().split(b"\n")[0].decode()  # (a case may hold bytes that are not UTF-8 later)
    assert first.startswith("# RUN: "), f"{path} must start with '# RUN: <args>'"
    rel = path.relative_to(ROOT).as_posix()
    proc = run_cli(["compile", rel] + shlex.split(first[len("# RUN: "):]))
    expected = path.with_suffix(".err").read_text()
    assert proc.returncode == 1, proc.stdout
    assert proc.stdout == ""
    assert proc.stderr == expected
