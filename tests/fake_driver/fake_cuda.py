"""ctypes view of the fake CUDA driver's records (tests/tools/fake_libcuda.c; the
layouts are tests/tools/fake_libcuda.h's).

The driver library tessera loaded (TESSERA_LIBCUDA) is opened again here by
the same path, which gives the same loaded object and so the same globals.
"""
import ctypes
import os
import struct

MAX_PARAMS = 128
PARAM_BLOCK_BYTES = 4096
TENSOR_MAP_BYTES = 128
TENSOR_MAP_MAGIC = 0x50414D54454B4146  # "FAKETMAP"


class Launch(ctypes.Structure):
    _fields_ = [("count", ctypes.c_uint64), ("kernel", ctypes.c_char_p), ("grid", ctypes.c_uint * 3),
                ("block", ctypes.c_uint * 3), ("shared_bytes", ctypes.c_uint), ("stream", ctypes.c_uint64),
                ("device", ctypes.c_int), ("num_params", ctypes.c_int),
                ("param_sizes", ctypes.c_int * MAX_PARAMS), ("params", ctypes.c_uint64 * MAX_PARAMS),
                ("param_offsets", ctypes.c_int * MAX_PARAMS), ("param_aligns", ctypes.c_int * MAX_PARAMS),
                ("param_addresses", ctypes.c_uint64 * MAX_PARAMS), ("param_block_bytes", ctypes.c_int),
                ("param_block", ctypes.c_ubyte * PARAM_BLOCK_BYTES), ("cooperative", ctypes.c_int),
                ("programmatic", ctypes.c_int)]


class TensorMap(ctypes.Structure):
    _fields_ = [("count", ctypes.c_uint64), ("result", ctypes.c_int), ("data_type", ctypes.c_int),
                ("rank", ctypes.c_uint), ("address", ctypes.c_uint64), ("global_dim", ctypes.c_uint64 * 5),
                ("global_strides", ctypes.c_uint64 * 4), ("box_dim", ctypes.c_uint * 5),
                ("element_strides", ctypes.c_uint * 5), ("interleave", ctypes.c_int), ("swizzle", ctypes.c_int),
                ("l2_promotion", ctypes.c_int), ("oob_fill", ctypes.c_int),
                ("map", ctypes.c_ubyte * TENSOR_MAP_BYTES)]


class FakeDriver:
    def __init__(self, path=None):
        self.path = path or os.environ["TESSERA_LIBCUDA"]
        self.lib = ctypes.CDLL(self.path)
        self.lib.tessera_fake_last_launch.restype = ctypes.POINTER(Launch)
        self.lib.tessera_fake_launch_count.restype = ctypes.c_uint64
        self.lib.tessera_fake_last_tensor_map.restype = ctypes.POINTER(TensorMap)
        self.lib.tessera_fake_tensor_map_count.restype = ctypes.c_uint64
        self.lib.tessera_fake_fail_next_tensor_map.argtypes = [ctypes.c_int]
        self.lib.tessera_fake_link_count.restype = ctypes.c_uint64
        self.lib.tessera_fake_pin_host_memory.argtypes = [ctypes.c_uint64, ctypes.c_uint64]

    def pin(self, address, size):
        """Declares [address, address + size) pinned host memory: cuPointerGetAttribute maps it."""
        self.lib.tessera_fake_pin_host_memory(address, size)

    @property
    def links(self):
        """cuLinkCreate calls so far (tessera's default JIT: PTX linked to a cubin)."""
        return self.lib.tessera_fake_link_count()

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
                "stream": rec.stream, "device": rec.device, "cooperative": bool(rec.cooperative),
                "programmatic": bool(rec.programmatic),
                "params": None if n < 0 else [(rec.param_sizes[i], rec.params[i]) for i in range(n)]}

    def last_layout(self):
        """The last launch's parameter block: [(offset, size, align, host address)] and its bytes."""
        rec = self.lib.tessera_fake_last_launch().contents
        layout = [(rec.param_offsets[i], rec.param_sizes[i], rec.param_aligns[i], rec.param_addresses[i])
                  for i in range(max(rec.num_params, 0))]
        return layout, bytes(rec.param_block[:rec.param_block_bytes])

    @property
    def tensor_map_count(self):
        """cuTensorMapEncodeTiled calls so far (refused ones too)."""
        return self.lib.tessera_fake_tensor_map_count()

    def last_tensor_map(self):
        """The last cuTensorMapEncodeTiled: its arguments, result and the 128 bytes it wrote."""
        t = self.lib.tessera_fake_last_tensor_map().contents
        r = t.rank
        return {"count": t.count, "result": t.result, "data_type": t.data_type, "rank": r, "address": t.address,
                "global_dim": tuple(t.global_dim[:r]), "global_strides": tuple(t.global_strides[:max(r - 1, 0)]),
                "box_dim": tuple(t.box_dim[:r]), "element_strides": tuple(t.element_strides[:r]),
                "interleave": t.interleave, "swizzle": t.swizzle, "l2_promotion": t.l2_promotion,
                "oob_fill": t.oob_fill, "map": bytes(t.map)}

    def fail_next_tensor_map(self, result):
        """The next cuTensorMapEncodeTiled returns this CUresult (after its own checks pass)."""
        self.lib.tessera_fake_fail_next_tensor_map(result)


def unpack_tensor_map(data):
    """The fake's 128 map bytes back as its arguments (the packing fake_libcuda.h describes)."""
    w = struct.unpack("<16Q", data)
    rank = w[13] >> 32
    box = [w[11] & 0xFFFFFFFF, w[11] >> 32, w[12] & 0xFFFFFFFF, w[12] >> 32, w[13] & 0xFFFFFFFF]
    return {"magic": w[0], "address": w[1], "rank": rank, "global_dim": tuple(w[2:2 + rank]),
            "global_strides": tuple(w[7:7 + max(rank - 1, 0)]), "box_dim": tuple(box[:rank]),
            "data_type": w[14] & 0xFF, "interleave": (w[14] >> 8) & 0xFF, "swizzle": (w[14] >> 16) & 0xFF,
            "l2_promotion": (w[14] >> 24) & 0xFF, "oob_fill": (w[14] >> 32) & 0xFF,
            "element_strides": tuple((w[14] >> (40 + 4 * i)) & 15 for i in range(rank)), "serial": w[15]}
