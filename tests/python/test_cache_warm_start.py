"""A warm start: a new process whose kernel is in the disk cache parses nothing and imports
little. Its kernel's source entry (tessera/_source_cache.py) is named by everything that
decides what it holds, so an edited kernel misses; `import tessera` leaves what only a cold
start or other features need to their first use; the launch path's steps are timed
(tessera._C.step_times) for bench/compile_time.py."""
import importlib
import importlib.util
import os
import subprocess
import sys

import pytest

from conftest import ROOT

import tessera  # noqa: E402
from tessera import _source_cache  # noqa: E402

KERNELS = """import tessera
import tessera.language as tl


@tessera.jit
def first(x_ptr, n, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    tl.store(x_ptr + o, tl.load(x_ptr + o, mask=o < n) + 1, mask=o < n)


@tessera.jit
def second(x_ptr, n, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    tl.store(x_ptr + o, tl.load(x_ptr + o, mask=o < n) * 2, mask=o < n)
"""


def load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def entry_path(fn):
    return _source_cache.lookup(tessera._C, fn.fn).path


def test_the_source_entry_is_named_by_every_input_that_decides_it(cache, tmp_path, monkeypatch):
    path = tmp_path / "kernels_a.py"
    path.write_text(KERNELS)
    m = load_module(path, "kernels_a")
    base = entry_path(m.first)
    assert base and base.startswith(str(cache / "kernels")) and base.endswith(".src")
    assert entry_path(m.first) == base  # the same inputs: the same entry
    assert entry_path(m.second) != base  # another kernel of the file
    path.write_text(KERNELS.replace("+ 1", "+ 2"))  # the file's text, as it is now (not as imported)
    edited = entry_path(m.first)
    assert edited != base
    path.write_text(KERNELS)
    assert entry_path(m.first) == base
    rule = _source_cache._rules()[-1]  # another reduction: a rule file with another mtime
    stat = os.stat(rule)
    try:
        os.utime(rule, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))
        assert entry_path(m.first) not in (base, edited)
    finally:
        os.utime(rule, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert entry_path(m.first) == base
    monkeypatch.setattr(_source_cache, "_rule_files", _source_cache._rules()[:-1])  # other rules
    assert entry_path(m.first) not in (base, edited)
    monkeypatch.setattr(tessera._C, "BUILD_ID", "another build")
    assert entry_path(m.first) not in (base, edited)  # another parameter parser
    monkeypatch.undo()
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert entry_path(m.first).startswith(str(tmp_path / "elsewhere"))
    monkeypatch.setenv("TESSERA_CACHE", "off")
    assert entry_path(m.first) is None


def run(code, **env):
    prelude = f"import sys\nsys.path[:0] = [{str(ROOT / 'python')!r}]\n"
    proc = subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True, timeout=120,
                          env={**__import__("os").environ, **env})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_an_edited_kernel_misses_in_a_new_process(cache, tmp_path):
    """The entry is looked up by the file's bytes, not parsed: an edit (here a new parameter and
    another body) is a new entry, and the new process reduces the new text."""
    path = tmp_path / "kern.py"
    path.write_text(KERNELS)
    code = f"""
sys.path.insert(0, {str(tmp_path)!r})
from kern import first
h = first._get_handle()
print([p[0] for p in h.params])
print("+ 7" in h.source, "tessera._source" in sys.modules)
"""
    assert run(code) == ["['x_ptr', 'n', 'BLOCK']", "False True"]  # cold: reduced
    assert run(code) == ["['x_ptr', 'n', 'BLOCK']", "False False"]  # warm: remembered
    path.write_text(KERNELS.replace("def first(x_ptr, n, BLOCK", "def first(x_ptr, n, SCALE, BLOCK")
                    .replace("+ 1, mask", "+ 7, mask", 1))
    assert run(code) == ["['x_ptr', 'n', 'SCALE', 'BLOCK']", "True True"]  # edited: reduced again
    assert run(code) == ["['x_ptr', 'n', 'SCALE', 'BLOCK']", "True False"]


COMPOSED = {
    "helpers.py": """import os
import tessera
import tessera.language as tl
SCALE = float(os.environ.get("SCALE", "2.0"))


@tessera.jit
def times(x):
    return x * SCALE
""",
    "cfg.py": """import os
OFFSET = int(os.environ.get("OFFSET", "1"))
""",
    "composed.py": """import tessera
import tessera.language as tl
import helpers
from cfg import OFFSET


@tessera.jit
def scaled(x_ptr, n, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + o, mask=o < n)
    tl.store(x_ptr + o, helpers.times(x) + OFFSET, mask=o < n)
""",
}


def test_a_kernel_composed_with_other_modules_is_remembered_while_they_give_the_same(cache, tmp_path):
    """A kernel that calls @jit functions of another module and uses its constants (as every kernel
    of torch's Inductor calls triton_helpers) is remembered with what composing it read there: a new
    process reduces nothing while those globals and files are the same, and again when one changed
    (a constant computed at import, a helper module's global, the helper's file)."""
    for name, text in COMPOSED.items():
        (tmp_path / name).write_text(text)
    code = f"""
sys.path.insert(0, {str(tmp_path)!r})
from composed import scaled
h = scaled._get_handle()
print([line for line in h.source.splitlines() if line.startswith(("SCALE =", "OFFSET =", "    return"))])
print("tessera._source" in sys.modules)
"""
    base = ["['OFFSET = 1', 'SCALE = 2.0', '    return x * SCALE']"]
    assert run(code) == base + ["True"]  # cold: reduced
    assert run(code) == base + ["False"]  # warm: remembered
    assert run(code, OFFSET="5") == ["['OFFSET = 5', 'SCALE = 2.0', '    return x * SCALE']", "True"]
    assert run(code, SCALE="3.0") == ["['OFFSET = 1', 'SCALE = 3.0', '    return x * SCALE']", "True"]
    assert run(code) == base + ["True"]  # one entry a kernel: the last miss rewrote it
    assert run(code) == base + ["False"]
    (tmp_path / "helpers.py").write_text(COMPOSED["helpers.py"].replace("x * SCALE", "x * SCALE * SCALE"))
    assert run(code) == ["['OFFSET = 1', 'SCALE = 2.0', '    return x * SCALE * SCALE']", "True"]
    assert run(code) == ["['OFFSET = 1', 'SCALE = 2.0', '    return x * SCALE * SCALE']", "False"]


def test_a_corrupt_source_entry_is_worked_out_again(cache, tmp_path):
    path = tmp_path / "kern2.py"
    path.write_text(KERNELS)
    code = f"""
sys.path.insert(0, {str(tmp_path)!r})
from kern2 import second
print([p[0] for p in second._get_handle().params])
"""
    want = ["['x_ptr', 'n', 'BLOCK']"]
    assert run(code) == want
    (entry,) = (cache / "kernels").rglob("*.src")
    for garbage in (b"tessera-source-4\n{not json\n", b"tessera-source-4\n", entry.read_bytes()[:40], b""):
        entry.write_bytes(garbage)
        assert run(code) == want


# What `import tessera` must not import (each costs milliseconds in a new process): what reads
# a kernel's source, and the modules of features a plain launch does not use.
NOT_AT_IMPORT = ("ast", "inspect", "tokenize", "textwrap", "json", "tempfile", "hashlib", "concurrent.futures",
                 "statistics", "csv", "tessera._source", "tessera._compose", "tessera.testing", "tessera.fusion",
                 "tessera.compiler", "tessera.language")


def test_import_tessera_leaves_other_features_to_their_first_use():
    out = run("before = set(sys.modules)\nimport tessera\n"
              "print(sorted(set(sys.modules) - before))\n"
              "print(all(getattr(tessera, name) is not None for name in tessera.__all__))\n"
              "print(tessera.autotune.__module__, tessera.language.float32, tessera.compile.__module__)\n")
    imported = eval(out[0])  # noqa: S307 (our own output)
    assert "tessera._C" in imported
    assert not [m for m in NOT_AT_IMPORT if m in imported]
    assert out[1:] == ["True", "tessera.autotune fp32 tessera.compiler"]


def test_every_public_name_resolves_and_unknown_ones_raise():
    for name in tessera.__all__:
        assert getattr(tessera, name) is not None, name
    importlib.import_module("tessera.autotune")  # the submodule: the package's name stays the decorator
    assert callable(tessera.autotune) and tessera.autotune.__module__ == "tessera.autotune"
    assert set(tessera.__all__) <= set(dir(tessera))
    with pytest.raises(AttributeError, match="no attribute 'no_such_thing'"):
        tessera.no_such_thing  # noqa: B018


SIG = "*fp32:16,*fp32:16,*fp32:16,i32"


def test_step_times_show_a_cold_and_a_warm_compile(cache):
    sys.path.insert(0, str(ROOT))
    from kernels.vector_add import add_kernel
    C = tessera._C
    C.step_times(reset=True)
    tessera.compile(add_kernel, signature=SIG, constexprs={"BLOCK_SIZE": 128}, target="sm_90a")
    cold = C.step_times(reset=True)
    assert set(cold) == {"driver_init", "specialize", "target_arch", "cache_key", "entry_read", "entry_decode",
                         "jit_plan", "module_load", "compile", "assemble", "result_object", "first_launch",
                         "torch_fastpath"}
    assert cold["compile"] > 0 and cold["cache_key"] > 0
    tessera.compile(add_kernel, signature=SIG, constexprs={"BLOCK_SIZE": 128}, target="sm_90a")
    warm = C.step_times()
    assert warm["compile"] == 0 and warm["entry_read"] > 0 and warm["entry_decode"] > 0 and warm["cache_key"] > 0


WARM_LAUNCH = """import sys, json
sys.path[:0] = [{root!r}]
import torch, tessera
from kernels.softmax import softmax_kernel as k
C = tessera._C
digests, events = [], []
real_digest = C.digest_hex
C.digest_hex = lambda data: digests.append(len(data)) or real_digest(data)
WATCHED = ("open", "import", "os.stat", "subprocess.Popen", "os.posix_spawn")
sys.addaudithook(lambda event, args: events.append((event, str(args[0])[:200])) if event in WATCHED else None)
C.step_times(reset=True)
x, y = torch.empty((64, 128)), torch.empty((64, 128))
k[(64,)](y, x, 128, 128, 64, 128, BLOCK_SIZE=128)
steps = C.step_times()
sys.addaudithook(lambda *a: None)
print(json.dumps({{"events": events, "digests": digests, "hits": C.cache_stats()["hits"],
                  "compile": steps["compile"], "params": [p[0] for p in k._get_handle().params]}}))
"""


def test_a_warm_start_reads_the_kernel_once_in_cpp_and_runs_no_python_io(tmp_path):
    """A new process whose kernel is in the disk cache (the fake driver: no GPU needed) finds the source
    entry with one call into the extension (the rule files' stat, the kernel's file, its digest and the
    entry, tessera._C.source_entry_read): on the way to the first launch Python opens no file, hashes
    nothing, imports nothing and spawns nothing, and the compiler does not run."""
    from conftest import BUILD
    fake = BUILD / "lib" / "libtessera_fake_cuda.so"
    env = {**os.environ, "TESSERA_LIBCUDA": str(fake), "TESSERA_CACHE_DIR": str(tmp_path / "cache"),
           "TESSERA_JIT": "link", "PYTHONPATH": os.pathsep.join([str(ROOT / "tests" / "tools" / "fake_torch"),
                                                                 str(ROOT / "python")])}
    env.pop("TESSERA_INTERPRET", None)
    code = WARM_LAUNCH.format(root=str(ROOT))
    runs = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env,
                              cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        runs.append(__import__("json").loads(proc.stdout.splitlines()[-1]))
    cold, warm = runs
    assert cold["hits"] == 0 and cold["compile"] > 0
    assert warm["hits"] == 1 and warm["compile"] == 0
    assert warm["params"] == cold["params"] and "PROLOGUE" in warm["params"]
    assert warm["digests"] == [], warm["digests"]
    assert [e for e in warm["events"] if e[0] != "import" or e[1] not in ("json",)] == [], warm["events"]
