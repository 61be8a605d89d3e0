"""scripts/check_layers.py: the build's check that every C++ layer includes only
the layers below it (docs/architecture.md, the floors)."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHECKER = ROOT / "scripts" / "check_layers.py"


def check(root):
    return subprocess.run([sys.executable, str(CHECKER), "--root", str(root)], capture_output=True, text=True)


def write(root, path, text):
    f = root / path
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(text)


def test_this_repository_keeps_its_floors():
    r = check(ROOT)
    assert r.returncode == 0, r.stderr


def test_an_upward_include_fails_with_its_place(tmp_path):
    write(tmp_path, "compiler/support/Diagnostics.h", "#pragma once\n")
    write(tmp_path, "compiler/ir/IR.h", '#pragma once\n#include "compiler/support/Diagnostics.h"\n')
    write(tmp_path, "dsl/AST.h", '#pragma once\n#include "compiler/ir/IR.h"\n')
    # The IR reaching up into the front-end, on line 3.
    write(tmp_path, "compiler/ir/Types.h", '#pragma once\n#include <string>\n#include "dsl/AST.h"\n')
    r = check(tmp_path)
    assert r.returncode == 1
    assert ('compiler/ir/Types.h:3: #include "dsl/AST.h": the ir layer (compiler/ir/) may not include '
            'the dsl layer (dsl/); ir may include: support') in r.stderr
    assert "1 include against the layering" in r.stderr
    assert "IR.h" not in r.stderr and "AST.h:" not in r.stderr  # downward includes are fine


def test_neighbours_on_one_floor_do_not_include_each_other(tmp_path):
    write(tmp_path, "compiler/passes/AccelerateDot.h", "#pragma once\n")
    write(tmp_path, "compiler/codegen/MmaDot.cpp", '#include "compiler/passes/AccelerateDot.h"\n')
    r = check(tmp_path)
    assert r.returncode == 1
    assert "compiler/codegen/MmaDot.cpp:1:" in r.stderr
    assert "the codegen layer (compiler/codegen/) may not include the passes layer" in r.stderr


def test_the_driver_may_not_reach_the_runtime_nor_the_bindings_the_cli(tmp_path):
    write(tmp_path, "runtime/Nvrtc.h", "#pragma once\n")
    write(tmp_path, "compiler/driver/Compiler.cpp", '#include "runtime/Nvrtc.h"\n')
    write(tmp_path, "compiler/cli/Main.cpp", "int main() {}\n")
    write(tmp_path, "python/bindings/Bindings.h", "#pragma once\n")
    write(tmp_path, "python/bindings/Module.cpp",
          '#include "Bindings.h"\n#include "runtime/Nvrtc.h"\n#include "compiler/cli/Main.cpp"\n')
    r = check(tmp_path)
    assert r.returncode == 1
    lines = r.stderr.splitlines()
    assert any(l.startswith("compiler/driver/Compiler.cpp:1:") and "may not include the runtime layer" in l
               for l in lines)
    assert any(l.startswith("python/bindings/Module.cpp:3:") and "may not include the cli layer" in l
               for l in lines)
    assert not any("Module.cpp:1:" in l or "Module.cpp:2:" in l for l in lines)  # its own folder; below it


def test_the_build_runs_the_check():
    cmake = (ROOT / "CMakeLists.txt").read_text()
    assert "scripts/check_layers.py" in cmake
    assert "add_dependencies(tessera tessera_check_layers)" in cmake
