"""ctypes view of the fake CUDA driver's launch record (tests/tools/fake_libcuda.c).

The driver library tessera loaded (TESSERA_LIBCUDA) is opened again here by
the same path, which gives the same loaded object and so the same globals.
"""
import ctypes
import os

MAX_PARAMS = 128


class Launch(ctypes.Structure):
    _fields_ = [("count", ctypes.c_uint64), ("kernel", ctypes.c_char_p), ("grid", ctypes.c_uint * 3),
                ("block", ctypes.c_uint * 3), ("shared_bytes", ctypes.c_uint), ("stream", ctypes.c_uint64),
                ("device", ctypes.c_int), ("num_params", ctypes.c_int),
                ("param_sizes", ctypes.c_int * MAX_PARAMS), ("params", ctypes.c_uint64 * MAX_PARAMS)]


class FakeDriver:
    def __init__(self, path=None):
        self.path = path or os.environ["TESSERA_LIBCUDA"]
        self.lib = ctypes.CDLL(self.path)
        self.lib.tessera_fake_last_launch.restype = ctypes.POINTER(Launch)
        self.lib.tessera_fake_launch_count.restype = ctypes.c_uint64

    @property
    def count(self):
        """Launches so far."""
        return self.lib.tessera_fake_launch_count()

    def last(self):
        """The last launch: {kernel, grid, block, shared_bytes, stream, device, params: [(size, value)]}."""
        rec = self.lib.tessera_fake_last_launch().contents
        n = rec.num_params
        return {"count": rec.count, "kernel": rec.kernel.decode() if rec.kernel else None,
                "grid": tuple(rec.grid), "block": tuple(rec.block), "shared_bytes": rec.shared_bytes,
                "stream": rec.stream, "device": rec.device,
                "params": None if n < 0 else [(rec.param_sizes[i], rec.params[i]) for i in range(n)]}
