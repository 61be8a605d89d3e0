"""On/off environment switches: Python reads every one through tessera/_env.py,
by the C++ side's rules (truthy(), onUnlessZero()), so a spelling means the same
on both sides."""
import ast

import pytest

from conftest import ROOT

import tessera
import tessera.language as tl
from tessera import _env, _ext
from tessera.kernels._target import wgmma_target
from tessera.autotune import cache_dir  # tessera.autotune is the decorator

# Spellings of a switch, and whether the rule reads them as on (None: the default).
SPELLINGS = [(None, None), ("", None), ("0", False), ("false", False), ("FALSE", False), ("No", False),
             ("off", False), ("OFF", False), ("1", True), ("yes", True), ("on", True), ("true", True),
             ("2", True), ("disabled", True), (" off", True), ("0 ", True)]

# Environment variables that hold a value, not a switch.
NOT_SWITCHES = {"TESSERA_CACHE_DIR", "TESSERA_EXT_DIR", "TESSERA_BUILD_DIR", "TESSERA_KERNELS_DIR", "XDG_CACHE_HOME",
                "TESSERA_PTXAS", "CUDA_HOME", "CUDA_PATH",  # paths, not switches
                "TESSERA_AS_TRITON"}  # a mode (1 / all) that compat's process-wide mode sets for its children


def _set(monkeypatch, name, value):
    if value is None:
        monkeypatch.delenv(name, raising=False)
    else:
        monkeypatch.setenv(name, value)


@pytest.mark.parametrize("value,on", SPELLINGS, ids=repr)
def test_the_rule(monkeypatch, value, on):
    _set(monkeypatch, "TESSERA_TEST_SWITCH", value)
    assert _env.flag("TESSERA_TEST_SWITCH") is (False if on is None else on)
    assert _env.flag("TESSERA_TEST_SWITCH", default=True) is (True if on is None else on)
    assert _env.on_unless_zero("TESSERA_TEST_SWITCH") is (value != "0")


@pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")
@pytest.mark.parametrize("value", [v for v, _ in SPELLINGS], ids=repr)
def test_python_and_cpp_read_a_switch_alike(monkeypatch, tmp_path, value):
    """TESSERA_CACHE (on by default) and TESSERA_KEEP_STAGES (off by default) as C++ reads them
    (the extension reads the environment on every call) and as Python does; the tuning results
    (autotune.py) live in the cache exactly when C++ keeps the kernel cache."""
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    for name in ("TESSERA_CACHE", "TESSERA_KEEP_STAGES"):
        _set(monkeypatch, name, value)
    config = tessera._C.cache_config()
    assert config["enabled"] is _env.flag("TESSERA_CACHE", default=True)
    assert config["keep_stages"] is _env.flag("TESSERA_KEEP_STAGES")
    assert (cache_dir() is not None) is config["enabled"]


@tessera.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tile = offs[:, None] * BLOCK + offs[None, :]
    tl.store(c_ptr + tile, tl.dot(tl.load(a_ptr + tile), tl.load(b_ptr + tile)))


@pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")
@pytest.mark.parametrize("value", [None, "", "0", "off", "false", "no", "1", " 0"], ids=repr)
def test_python_and_the_compiler_read_wgmma_alike(monkeypatch, tmp_path, value):
    """The kernel tables (python/tessera/kernels/_target.py) take the wgmma configs exactly when the compiler's
    sm_90a dots are wgmma."""
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    _set(monkeypatch, "TESSERA_WGMMA", value)
    ptx = tessera.compile(dot_kernel, signature="*fp16:16,*fp16:16,*fp32:16", constexprs={"BLOCK": 64},
                          num_warps=4, target="sm_90a").asm["ptx"]
    wgmma = "wgmma.mma_async" in ptx
    assert wgmma is not ("mma.sync" in ptx)

    class Hopper:  # the extension on an sm_90a device
        driver_available = staticmethod(lambda: True)
        target_arch = staticmethod(lambda device: "sm_90a")
    monkeypatch.setattr(_ext, "C", Hopper)
    assert wgmma_target() is wgmma


def _environment_reads(tree):
    """(name, line) of os.environ.get(NAME), os.environ[NAME], os.getenv(NAME); name is None when
    NAME is not a string literal (a helper that reads a variable it is given)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            f = node.func
            if isinstance(f, ast.Attribute) and (
                    (f.attr == "get" and isinstance(f.value, ast.Attribute) and f.value.attr == "environ")
                    or f.attr == "getenv"):
                key = node.args[0]
            else:
                continue
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "environ":
            key = node.slice
        else:
            continue
        literal = isinstance(key, ast.Constant) and isinstance(key.value, str)
        yield (key.value if literal else None), node.lineno


def test_every_switch_is_read_through_env():
    package = ROOT / "python" / "tessera"
    direct = []
    for path in sorted(package.rglob("*.py")):
        if path.name == "_env.py":
            continue
        for name, line in _environment_reads(ast.parse(path.read_text(encoding="utf-8"))):
            if name is None or name not in NOT_SWITCHES:
                what = name or "a variable named by an expression (a rule of its own?)"
                direct.append(f"{path.relative_to(ROOT)}:{line}: {what}")
    assert not direct, "switches read without tessera._env.flag():\n" + "\n".join(direct)


def test_ptxas_is_found_under_cuda_home_and_on_path(tmp_path):
    """The JIT plan's ptxas search (runtime/Ptxas.cpp, plain stat/access on a warm start's first launch):
    CUDA_HOME/bin/ptxas first (trailing slashes or not: one path), else each PATH directory's."""
    import os
    import subprocess
    import sys
    from conftest import ROOT
    fake = tmp_path / "cuda" / "bin" / "ptxas"
    fake.parent.mkdir(parents=True)
    fake.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 12.8, V12.8.93'\n")
    fake.chmod(0o755)
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "ptxas").write_text(fake.read_text().replace("12.8.93", "12.9.41"))
    (other / "ptxas").chmod(0o755)
    not_executable = tmp_path / "plain"
    not_executable.mkdir()
    (not_executable / "ptxas").write_text("")
    code = f"import sys; sys.path.insert(0, {str(ROOT / 'python')!r}); import tessera; print(tessera._C.jit_mode())"
    base = {k: v for k, v in os.environ.items() if k not in ("CUDA_HOME", "CUDA_PATH", "TESSERA_PTXAS", "TESSERA_JIT")}
    base["TESSERA_CACHE_DIR"] = str(tmp_path / "cache")

    def mode(**env):
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                              env={**base, **env})
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()

    assert mode(CUDA_HOME=str(tmp_path / "cuda") + "//") == f"ptxas 12.8.93 ({fake})"
    assert mode(CUDA_PATH=str(tmp_path / "cuda")) == f"ptxas 12.8.93 ({fake})"
    if not os.path.exists("/usr/local/cuda/bin/ptxas"):  # else that one comes before PATH
        path = f"{not_executable}:{other}/:{base.get('PATH', '')}"
        assert mode(PATH=path) == f"ptxas 12.9.41 ({other / 'ptxas'})"
