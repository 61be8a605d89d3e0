"""The GPU suite (pytest side): needs torch with a CUDA GPU and tessera's
extension. Without torch or a GPU every test is skipped with the reason;
a missing or broken extension is an error (the build is wrong).

Run it with tests/gpu/run.sh (builds the extension against the prebuilt
libtessera.so first), or `python3 -m pytest tests/gpu -q` with
TESSERA_EXT_DIR pointing at a built tessera._C.
"""
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
for p in (ROOT / "python", ROOT, pathlib.Path(__file__).resolve().parent):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import gpu_helpers  # noqa: E402


def pytest_report_header(config):
    # Every kernel compiles with the default back-end: TESSERA_BACKEND (llvm or nvrtc, docs/nvrtc.md).
    import os
    backend = os.environ.get("TESSERA_BACKEND") or "llvm"
    return f"tessera GPU suite: {gpu_helpers.describe()}; back-end {backend}"


def pytest_collection_modifyitems(config, items):
    reason = gpu_helpers.skip_reason()
    if reason:
        for item in items:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(autouse=True)
def _check_and_synchronize():
    """Each test starts with no pending GPU work and ends having waited for its own."""
    if gpu_helpers.skip_reason():
        yield
        return
    error = gpu_helpers.extension_error()
    if error:
        pytest.fail(error)
    import torch
    torch.cuda.synchronize()
    yield
    torch.cuda.synchronize()
