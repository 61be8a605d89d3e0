import os
import pathlib
import shlex
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("TESSERA_BUILD_DIR", ROOT / "build"))
CLI = BUILD / "bin" / "tessera"
PTXAS = pathlib.Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin" / "ptxas"

sys.path.insert(0, str(ROOT / "python"))


def load_bench_module(file_name, module_name):
    """bench/<file_name> imported as module_name (once; bench/ is not a package)."""
    import importlib.util
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, ROOT / "bench" / file_name)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def run_cli(args, check=False):
    """Runs the tessera CLI from the repository root (paths in messages stay relative)."""
    if isinstance(args, str):
        args = shlex.split(args)
    proc = subprocess.run([str(CLI)] + list(args), cwd=ROOT, capture_output=True, text=True, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"tessera {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


@pytest.fixture(scope="session", autouse=True)
def require_cli():
    if not CLI.exists():
        pytest.fail(f"{CLI} does not exist: build first (bash scripts/setup.sh)")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh disk-cache directory for the test (the C++ side reads the environment on each use);
    test_autotune_persistence.py has its own."""
    d = tmp_path / "cache"
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(d))
    for v in ("TESSERA_CACHE", "TESSERA_CACHE_MAX_BYTES", "TESSERA_KEEP_STAGES", "TESSERA_DUMP_IR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(v, raising=False)
    return d
