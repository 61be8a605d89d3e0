"""Tests that launch kernels through the fake CUDA driver (tests/tools/fake_libcuda.c)
and the stand-in torch (tests/tools/fake_torch). They need a process of their own
(the driver a process loads is fixed at its first launch, and `torch` is the fake):
tests/python/test_fake_driver.py runs them as

    TESSERA_LIBCUDA=build/lib/libtessera_fake_cuda.so TESSERA_CACHE_DIR=<tmp> \\
    PYTHONPATH=tests/tools/fake_torch:python python3 -m pytest tests/fake_driver
"""
import os
import pathlib
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "python"))


def pytest_configure(config):
    if "fake_libcuda" not in os.environ.get("TESSERA_LIBCUDA", "") and "fake_cuda" not in os.environ.get(
            "TESSERA_LIBCUDA", ""):
        raise pytest.UsageError("tests/fake_driver needs TESSERA_LIBCUDA=<build>/lib/libtessera_fake_cuda.so "
                                "(run them through tests/python/test_fake_driver.py)")
    import torch
    if getattr(torch, "__version__", "") != "0.0.fake":
        raise pytest.UsageError("tests/fake_driver needs tests/tools/fake_torch first on PYTHONPATH")


@pytest.fixture
def fake():
    from fake_cuda import FakeDriver
    return FakeDriver()
