"""docs/language.md stays honest: every test file its tables name exists, the
interpreter test named for a builtin uses it, and a kernel named for the GPU
column is compiled by test_kernels_ptx.py (listed in kernels/manifest.txt)."""
import re

import pytest

from conftest import ROOT

DOC = ROOT / "docs" / "language.md"
FILE = re.compile(r"(?:python|gpu)/(?:lang_kernels/)?[\w]+\.py|kernels/[\w]+\.py")


def rows():
    out = []
    table = None
    for line in DOC.read_text().splitlines():
        if line.startswith("| builtin |"):
            table = "builtins"
        elif line.startswith("| syntax |"):
            table = "syntax"
        elif not line.startswith("|"):
            table = None
        elif table and not line.startswith("| ---"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            out.append(pytest.param(table, cells, id=cells[0][:40]))
    return out


def path_of(name):
    return ROOT / name if name.startswith("kernels/") else ROOT / "tests" / name


def names_in(cell):
    """`tl.sin` → ["sin"]; a list of `name`s → each name; `x.to(...)` → ["to"]."""
    names = []
    for code in re.findall(r"`([^`]+)`", cell):
        m = re.match(r"(?:tl\.(?:math\.)?|x\.)?([a-z_][a-z_0-9]*)", code)
        if m:
            names.append(m.group(1))
    return names


def test_the_doc_has_both_tables():
    tables = {r.values[0] for r in rows()}
    assert tables == {"builtins", "syntax"}
    assert len(rows()) > 100


@pytest.mark.parametrize("table,cells", rows())
def test_row(table, cells):
    assert len(cells) == 4, cells
    manifest = (ROOT / "kernels" / "manifest.txt").read_text()
    for column, cell in zip(("parsed", "interpreted", "compiled for GPU"), cells[1:]):
        files = FILE.findall(cell)
        if cell == "—" or not files:
            continue
        for f in files:
            assert path_of(f).exists(), f"{cells[0]}: {column} names {f}, which does not exist"
            if f.startswith("kernels/"):
                assert f.split("/")[1] in manifest, f"{f} is not in kernels/manifest.txt (test_kernels_ptx.py)"
        kernels = [f for f in files if "lang_kernels/" in f]
        if kernels:  # "python/test_lang_x.py (python/lang_kernels/y.py)": the test compiles that kernel
            tests = [f for f in files if f not in kernels]
            assert tests and all(k.split("/")[-1] in path_of(t).read_text() for k in kernels for t in tests), cell
            files = kernels
        if table != "builtins" or not re.match(r"`tl\.|`x\.|other `tl\.", cells[0]):
            continue  # syntax rows: the named files only have to exist
        text = "".join(path_of(f).read_text() for f in files)
        for name in names_in(cells[0]):
            used = re.search(r"\b(tl|math)\." + name + r"\b|\." + name + r"\(", text)
            assert used, f"{cells[0]}: {column} names {files}, which never use '{name}'"


def test_every_op_the_interpreter_runs_is_in_ops_def():
    ops = re.findall(r"^OP\((\w+),", (ROOT / "compiler" / "ir" / "Ops.def").read_text(), re.M)
    source = (ROOT / "compiler" / "interp" / "Interpreter.cpp").read_text()
    # desc_load/desc_store and the TMA pipeline's ops wait for a descriptor argument kind in the interpreter
    # (docs/tma.md, limits); consumer_group, like warp_specialize, exists only after the producer pass.
    tma = {"DescLoad", "DescStore", "MbarrierAlloc", "AsyncTmaCopy", "MbarrierWait", "MbarrierArrive", "WarpSpecialize",
           "ConsumerGroup"}
    ptx = {"InlineAsm"}  # tl.inline_asm_elementwise: PTX runs only on the GPU
    missing = [op for op in ops if f"OpCode::{op}:" not in source and op not in tma | ptx]
    assert not missing, f"interp::supports does not list {missing} (compiler/interp/Interpreter.cpp)"
