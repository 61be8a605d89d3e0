"""Every file path of this repository that the docs (docs/*.md, README.md) and
the comments of the C++ and Python sources name, like compiler/passes/Coalesce.cpp,
exists: a moved or deleted file leaves no stale pointer behind."""
import ast
import functools
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# A path from the repository's root: a top-level folder, folders, a file with an extension.
TOP_FOLDERS = ("bench", "compiler", "docs", "dsl", "examples", "kernels", "python", "runtime", "scripts", "tests")
PATH = re.compile(r"(?<![\w./<>$-])((?:%s)/[\w./-]*?\.(?:cpp|h|def|py|md|txt|sh|toml|c|json|cfg))\b" %
                  "|".join(TOP_FOLDERS))
# Paths of other projects that look like ours (Triton's repository).
FOREIGN = re.compile(r"^python/(triton|test|src)/")
# docs/language.md's builtin table names test files from tests/ (tests/python/test_lang_math.py without "tests/");
# test_interpreter_doc.py reads that table. "x" and "y" there are placeholders.
FROM_TESTS = {"docs/language.md", "tests/python/test_interpreter_doc.py"}
PLACEHOLDERS = {"python/test_lang_x.py", "python/lang_kernels/y.py"}

CPP_FOLDERS = ("compiler", "dsl", "runtime", "python/bindings", "python/torch_fastpath", "tests/unit",
               "tests/fake_driver", "tests/gpu", "tests/fuzz", "tests/tools", "examples")
PY_FOLDERS = ("python/tessera", "scripts", "tests/python", "kernels", "bench", "examples")


def paths_in(text):
    return [p.rstrip(".") for p in PATH.findall(text) if not FOREIGN.match(p)]


def cpp_comments(text):
    """The text of // and /* */ comments (string literals left out)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(text[i:end])
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(text[i:end])
            i = end
        elif c == '"' or c == "'":
            if c == '"' and text[max(0, i - 1)] == "R":  # R"(...)": a raw string
                close = text.find('(', i)
                delim = ")" + text[i + 1:close] + '"'
                end = text.find(delim, close)
                i = n if end < 0 else end + len(delim)
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        else:
            i += 1
    return "\n".join(out)


def python_comments(text):
    """# comments and docstrings."""
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                out.append(tok.string)
        tree = ast.parse(text)
    except (tokenize.TokenError, SyntaxError):
        return "\n".join(out)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                out.append(doc)
    return "\n".join(out)


@functools.lru_cache(maxsize=None)
def named_paths():
    """(where, path) for every repository path named in docs and comments."""
    found = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for line_no, line in enumerate(doc.read_text().splitlines(), 1):
            found += [(f"{doc.relative_to(ROOT)}:{line_no}", p) for p in paths_in(line)]
    for folder in CPP_FOLDERS:
        for f in sorted((ROOT / folder).rglob("*")):
            if f.suffix in (".cpp", ".h", ".def", ".c") and f.is_file():
                found += [(str(f.relative_to(ROOT)), p) for p in paths_in(cpp_comments(f.read_text()))]
    for folder in PY_FOLDERS:
        for f in sorted((ROOT / folder).rglob("*.py")):
            found += [(str(f.relative_to(ROOT)), p) for p in paths_in(python_comments(f.read_text()))]
    return tuple(found)


def exists(where, path):
    if (ROOT / path).exists():
        return True
    if where.split(":")[0] in FROM_TESTS:
        return path in PLACEHOLDERS or (ROOT / "tests" / path).exists()
    return False


def test_named_paths_exist():
    missing = [f"{where}: {path}" for where, path in named_paths() if not exists(where, path)]
    assert not missing, "paths named in docs or comments that do not exist:\n" + "\n".join(missing)


def test_the_check_sees_paths():
    # The scan finds what it is meant to find (else the test above could not fail).
    assert ("README.md" in {w.split(":")[0] for w, _ in named_paths()})
    assert paths_in("see compiler/passes/Coalesce.cpp.") == ["compiler/passes/Coalesce.cpp"]
    assert paths_in("Triton's python/triton/language/semantic.py") == []
    assert "compiler/ir/Gone.h" in paths_in(cpp_comments('// moved to compiler/ir/Gone.h\nint x = 1;'))
    assert paths_in(cpp_comments('const char *s = "kernels/not_a_comment.py";')) == []
    source = '"""Reads kernels/doc.py."""\nx = "kernels/code.py"  # and tests/c.py\n'
    assert sorted(paths_in(python_comments(source))) == ["kernels/doc.py", "tests/c.py"]
    assert not exists("docs/codegen.md:1", "compiler/ir/Gone.h")


@pytest.mark.parametrize("moved", ["dsl/Diagnostics.h", "compiler/codegen/LayoutMath.h", "runtime/Nvrtc.h"])
def test_moved_files_are_not_named(moved):
    assert not (ROOT / moved).exists()
    assert all(path != moved for _, path in named_paths())
