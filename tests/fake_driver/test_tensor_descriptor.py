"""tessera.TensorDescriptor arguments through the fake CUDA driver: the signature
token they specialise to, the arguments cuTensorMapEncodeTiled gets (dimensions
innermost first, strides in bytes, the innermost box clamped to 128 bytes and
the swizzle that goes with it), the 128 encoded bytes reaching cuLaunchKernel
at a 64-byte-aligned place in the parameter block, one encoding per
descriptor, and each rule's error.

The kernels launched here take their PTX from a disk-cache entry these tests
write (plant(): the launch path's own key, hand-written PTX with the parameter
declarations the descriptor ABI asks for), so no compiler is involved."""
import os
import struct

import pytest
import torch

import tessera
import tessera.language as tl
import kernels as K
from fake_cuda import TENSOR_MAP_MAGIC, unpack_tensor_map

P = 0x7F0000001000  # a 16-byte aligned "device pointer" (never dereferenced)

# CUtensorMapDataType / CUtensorMapSwizzle / CUtensorMapL2promotion values (cuda.h)
UINT8, INT32, FLOAT16, FLOAT32, BFLOAT16 = 0, 3, 6, 7, 9
SWIZZLE_NONE, SWIZZLE_32B, SWIZZLE_64B, SWIZZLE_128B = 0, 1, 2, 3
L2_PROMOTION_128B = 2
CUDA_ERROR_INVALID_VALUE = 1

DESC = ".align 64 .b8 {}[128]"  # the descriptor ABI: one 128-byte parameter, 64-byte aligned
I32 = ".u32 {}"


def desc(ptr=P, dtype=torch.bfloat16, shape=(512, 256), strides=(256, 1), block=(128, 64), device="cuda"):
    return tessera.TensorDescriptor(torch.Tensor(ptr, dtype, device=device), list(shape), list(strides), list(block))


def fresh(kernel):
    """A new handle of the kernel: its in-memory caches start empty."""
    return tessera.jit(kernel.fn)


def plant(kernel, args, decls):
    """Writes the disk-cache entry that kernel[grid](*args) looks up: PTX whose .entry declares `decls`."""
    key = kernel._get_handle()._cache_key(tuple(args), {}, "sm_90a")
    assert key is not None, "the disk cache is off"
    name = kernel.__name__
    params = ",\n".join("\t.param " + d.format(f"{name}_param_{i}") for i, d in enumerate(decls))
    ptx = (f".version 8.0\n.target sm_90a\n.address_size 64\n\n.visible .entry {name}(\n{params}\n)\n"
           ".maxntid 128, 1, 1\n{\n\tret;\n}\n")
    entry = {"key": key["text"], "kernel": name, "arch": "sm_90a", "signature": "", "num_warps": 4,
             "num_stages": 3, "shared": 0, "ptx": ptx}
    os.makedirs(os.path.dirname(key["path"]), exist_ok=True)
    assert tessera._C.write_file_atomically(key["path"], tessera._C.cache_encode(entry))


def launch_planted(kernel, args, decls, grid=(1,)):
    """Plants the entry, launches, and checks that the launch took it (no compile)."""
    plant(kernel, args, decls)
    hits = tessera._C.cache_stats()["hits"]
    kernel[grid](*args)
    assert tessera._C.cache_stats()["hits"] == hits + 1


@pytest.fixture(autouse=True)
def default_stream():
    torch._C.current_stream = 0
    yield
    torch._C.current_stream = 0


# ---- the signature token ------------------------------------------------------------------------------

def test_signature_token():
    d = desc()
    assert K.desc_kernel.specialization(d, 7, d)[0] == "tensordesc<bf16[128,64]>,i32,tensordesc<bf16[128,64]>"
    cases = [(torch.float16, (64, 64), "tensordesc<fp16[64,64]>"),
             (torch.float32, (32, 32), "tensordesc<fp32[32,32]>"),
             (torch.float8_e4m3fn, (128, 128), "tensordesc<fp8e4nv[128,128]>"),
             (torch.float8_e5m2, (64, 128), "tensordesc<fp8e5[64,128]>"),
             (torch.int8, (16, 256), "tensordesc<i8[16,256]>"),
             (torch.int32, (8, 4), "tensordesc<i32[8,4]>")]
    for dtype, block, token in cases:
        e = desc(dtype=dtype, block=block)
        assert K.int_then_desc.specialization(16, e)[0] == "i32:16," + token
    one = tessera.TensorDescriptor(torch.Tensor(P, torch.float16), [4096], [1], [256])
    three = tessera.TensorDescriptor(torch.Tensor(P, torch.bfloat16), [4, 64, 128], [8192, 128, 1], [2, 64, 64])
    assert K.int_then_desc.specialization(1, one)[0] == "i32:1,tensordesc<fp16[256]>"
    assert K.int_then_desc.specialization(1, three)[0] == "i32:1,tensordesc<bf16[2,64,64]>"


def test_descriptors_are_not_specialised_by_value():
    # A misaligned base, other shapes and strides: the same token (they are runtime values in the map).
    tokens = {K.int_then_desc.specialization(3, d)[0]
              for d in (desc(), desc(ptr=P + 2), desc(shape=(100, 300), strides=(304, 1)))}
    assert tokens == {"i32,tensordesc<bf16[128,64]>"}
    assert K.int_then_desc.specialization(3, desc(block=(64, 64)))[0] == "i32,tensordesc<bf16[64,64]>"


def test_fast_and_full_keys_agree(fake):
    h = fresh(K.desc_kernel)._get_handle()
    a, b = desc(), desc(block=(64, 64))
    fast, full = h._launch_keys((a, 7, b))
    assert fast == full
    # The block shape is in the key, the shape and strides are not.
    assert h._launch_keys((a, 7, desc(block=(128, 32))))[0] != fast
    assert h._launch_keys((a, 7, desc(shape=(64, 64), strides=(64, 1), block=(64, 64))))[0] == fast


# ---- the Python object -------------------------------------------------------------------------------

def test_from_tensor_and_read_only_attributes():
    t = torch.Tensor(P, torch.float16, shape=(256, 512))
    d = tessera.TensorDescriptor.from_tensor(t, [64, 64])
    assert isinstance(d, tessera.TensorDescriptor)
    assert d.base is t and d.dtype is torch.float16
    assert d.shape == (256, 512) and d.strides == (512, 1) and d.block_shape == (64, 64)
    assert d.tensor_map is None  # encoded by the first launch
    for name in ("base", "shape", "strides", "tensor_map"):
        with pytest.raises(AttributeError):
            setattr(d, name, (1,))
    with pytest.raises(AttributeError):
        d.other = 1  # no instance dict
    assert repr(d) == "TensorDescriptor(dtype=torch.float16, shape=[256, 512], strides=[512, 1], block_shape=[64, 64])"
    with pytest.raises(TypeError, match=r"TensorDescriptor: base must be a tensor \(with .data_ptr\(\) and .dtype\)"):
        tessera.TensorDescriptor(12, [1], [1], [1])
    with pytest.raises(TypeError, match=r"TensorDescriptor: block_shape\[1\] must be an int, got str"):
        tessera.TensorDescriptor(t, [256, 512], [512, 1], [64, "64"])


# ---- the encoding ---------------------------------------------------------------------------------------

def encode_args(fake, d):
    """Launches int_then_desc(3, d) and returns what cuTensorMapEncodeTiled was called with."""
    k = fresh(K.int_then_desc)
    before = fake.tensor_map_count
    launch_planted(k, (3, d), [I32, DESC])
    assert fake.tensor_map_count == before + 1
    t = fake.last_tensor_map()
    assert t["result"] == 0 and t["map"] == d.tensor_map
    assert t["interleave"] == 0 and t["l2_promotion"] == L2_PROMOTION_128B and t["oob_fill"] == 0
    assert t["element_strides"] == (1,) * t["rank"]
    return t


def test_encode_arguments_reversed_and_in_bytes(fake):
    t = encode_args(fake, desc())  # bf16 [512, 256], strides [256, 1], blocks of 128 x 64
    assert t["data_type"] == BFLOAT16 and t["rank"] == 2 and t["address"] == P
    assert t["global_dim"] == (256, 512)   # innermost first
    assert t["global_strides"] == (512,)   # bytes, the innermost (1 element) not passed
    assert t["box_dim"] == (64, 128)
    assert t["swizzle"] == SWIZZLE_128B     # 64 bf16 = 128 bytes

    d = tessera.TensorDescriptor(torch.Tensor(P + 256, torch.float16), [4, 64, 200], [64 * 208, 208, 1], [2, 32, 64])
    t = encode_args(fake, d)
    assert t["data_type"] == FLOAT16 and t["rank"] == 3 and t["address"] == P + 256
    assert t["global_dim"] == (200, 64, 4)
    assert t["global_strides"] == (416, 64 * 208 * 2)
    assert t["box_dim"] == (64, 32, 2) and t["swizzle"] == SWIZZLE_128B

    one = tessera.TensorDescriptor(torch.Tensor(P, torch.int32), [1000], [1], [16])
    t = encode_args(fake, one)
    assert t["data_type"] == INT32 and t["global_dim"] == (1000,) and t["global_strides"] == ()
    assert t["box_dim"] == (16,) and t["swizzle"] == SWIZZLE_64B


@pytest.mark.parametrize("dtype,inner,box,swizzle,data_type", [
    (torch.bfloat16, 128, 64, SWIZZLE_128B, BFLOAT16),  # 256 bytes: clamped to 128 bytes (two copies per row)
    (torch.float16, 256, 64, SWIZZLE_128B, FLOAT16),
    (torch.float32, 64, 32, SWIZZLE_128B, FLOAT32),
    (torch.float32, 32, 32, SWIZZLE_128B, FLOAT32),
    (torch.float16, 32, 32, SWIZZLE_64B, FLOAT16),
    (torch.float16, 16, 16, SWIZZLE_32B, FLOAT16),
    (torch.float16, 8, 8, SWIZZLE_NONE, FLOAT16),        # 16 bytes: no swizzle
    (torch.float8_e4m3fn, 256, 128, SWIZZLE_128B, UINT8),
    (torch.float8_e4m3fn, 32, 32, SWIZZLE_32B, UINT8),
    (torch.uint8, 16, 16, SWIZZLE_NONE, UINT8),
])
def test_innermost_box_is_clamped_to_128_bytes_and_picks_the_swizzle(fake, dtype, inner, box, swizzle, data_type):
    t = encode_args(fake, desc(dtype=dtype, shape=(256, 1024), strides=(1024, 1), block=(64, inner)))
    assert t["box_dim"] == (box, 64)
    assert t["swizzle"] == swizzle and t["data_type"] == data_type


# ---- the launch: the bytes and where they go ------------------------------------------------------------

def test_descriptor_parameters_are_the_encoded_bytes_at_64_byte_aligned_offsets(fake):
    k = fresh(K.desc_kernel)
    a, b = desc(), desc(ptr=P + 0x10000, shape=(1024, 128), strides=(128, 1), block=(128, 64))
    launch_planted(k, (a, 7, b), [DESC, I32, DESC], grid=(4, 2))
    last = fake.last()
    assert last["kernel"] == "desc_kernel" and last["grid"] == (4, 2, 1)
    assert [size for size, _ in last["params"]] == [128, 4, 128]
    layout, block = fake.last_layout()
    assert [(offset, size, align) for offset, size, align, _ in layout] == [(0, 128, 64), (128, 4, 4), (192, 128, 64)]
    assert block[0:128] == a.tensor_map and block[192:320] == b.tensor_map
    assert block[128:132] == (7).to_bytes(4, "little")
    for offset, size, align, address in layout:
        if size == 128:
            assert address % 64 == 0  # the launcher points at a 64-byte-aligned copy
    # The bytes are the fake's packing of what the encoding asked for.
    ua, ub = unpack_tensor_map(a.tensor_map), unpack_tensor_map(b.tensor_map)
    assert ua["magic"] == TENSOR_MAP_MAGIC and ua["address"] == P and ua["global_dim"] == (256, 512)
    assert ub["address"] == P + 0x10000 and ub["global_dim"] == (128, 1024) and ub["global_strides"] == (256,)
    assert ua["serial"] != ub["serial"]


def test_a_descriptor_after_an_int_goes_to_the_next_64_byte_boundary(fake):
    k = fresh(K.int_then_desc)
    d = desc(dtype=torch.float16, block=(64, 64))
    launch_planted(k, (3, d), [I32, DESC])
    layout, block = fake.last_layout()
    assert [(offset, size) for offset, size, _, _ in layout] == [(0, 4), (64, 128)]
    assert block[64:192] == d.tensor_map


def test_the_same_descriptor_is_the_same_object_in_two_parameters(fake):
    k = fresh(K.desc_kernel)
    d = desc()
    before = fake.tensor_map_count
    launch_planted(k, (d, 7, d), [DESC, I32, DESC])
    assert fake.tensor_map_count == before + 1
    layout, block = fake.last_layout()
    assert block[0:128] == block[192:320] == d.tensor_map


def test_a_second_launch_does_not_encode_again(fake):
    k = fresh(K.int_then_desc)
    d = desc()
    launch_planted(k, (3, d), [I32, DESC])
    encodes, launches, encoded = fake.tensor_map_count, fake.count, d.tensor_map
    for _ in range(5):
        k[(1,)](3, d)
    assert fake.count == launches + 5
    assert fake.tensor_map_count == encodes  # the cached bytes, not a new encoding
    assert d.tensor_map == encoded and fake.last_layout()[1][64:192] == encoded
    # Another descriptor with the same block shape: encoded once, the same compiled kernel.
    e = desc(ptr=P + 4096, shape=(64, 512), strides=(512, 1))
    k[(1,)](3, e)
    k[(1,)](3, e)
    assert fake.tensor_map_count == encodes + 1
    assert k.cache_info()["compiled"] == 1
    assert fake.last_layout()[1][64:192] == e.tensor_map != encoded


def test_descriptors_launch_on_torchs_current_stream(fake):
    k = fresh(K.int_then_desc)
    d = desc()
    torch._C.current_stream = 0x7000
    launch_planted(k, (3, d), [I32, DESC])
    assert fake.last()["stream"] == 0x7000


def test_compiled_kernel_launch_checks_the_descriptor_type(fake):
    k = fresh(K.desc_kernel)
    a = desc()
    plant(k, (a, 7, a), [DESC, I32, DESC])
    ck = k.warmup(a, 7, a)
    assert ck.signature == "tensordesc<bf16[128,64]>,i32,tensordesc<bf16[128,64]>"
    b = desc(ptr=P + 8192)
    ck[(2,)](a, 7, b)
    layout, block = fake.last_layout()
    assert fake.last()["grid"] == (2, 1, 1)
    assert block[0:128] == a.tensor_map and block[192:320] == b.tensor_map
    with pytest.raises(TypeError, match=r"argument 'b_desc' is a tensordesc<bf16\[64,64\]> but the kernel was compiled "
                                        r"for tensordesc<bf16\[128,64\]>"):
        ck[(1,)](a, 7, desc(block=(64, 64)))
    with pytest.raises(TypeError, match=r"argument 'a_desc' is a torch.Tensor but the kernel was compiled for "
                                        r"tensordesc<bf16\[128,64\]> \(pass a tessera.TensorDescriptor\)"):
        ck[(1,)](torch.Tensor(P, torch.bfloat16), 7, a)
    with pytest.raises(ValueError, match=r"desc_kernel\(\): tensor descriptor argument 'b_desc' \(parameter 3 of 3\): "
                                         r"the base address 0x7f0000001008 is not 16-byte aligned"):
        ck[(1,)](a, 7, desc(ptr=P + 8))


# ---- errors ---------------------------------------------------------------------------------------------

LABEL = r"desc_kernel\(\): tensor descriptor argument 'b_desc' \(parameter 3 of 3\): "

BAD = [
    ("misaligned base", dict(ptr=P + 8), ValueError, r"the base address 0x7f0000001008 is not 16-byte aligned"),
    ("stride bytes", dict(strides=(100, 1)), ValueError,
     r"strides\[0\] = 100 elements is 200 bytes, not a multiple of 16 bytes as TMA needs"),
    ("innermost stride", dict(strides=(512, 2)), ValueError,
     r"the innermost stride \(strides\[1\]\) is 2, not 1: TMA needs the innermost dimension contiguous"),
    ("block over 256, misaligned", dict(block=(512, 64), ptr=P + 8), ValueError,
     r"the base address 0x7f0000001008 is not 16-byte aligned"),
    ("block over 256, not a power of two", dict(block=(768, 64)), ValueError,
     r"block_shape\[0\] = 768 is out of range: TMA blocks have 1 to 256 elements per dimension"),
    ("block not a power of two", dict(block=(96, 64)), ValueError, r"block_shape\[0\] = 96 is not a power of two"),
    ("row under 16 bytes", dict(dtype=torch.float32, block=(64, 2)), ValueError,
     r"the innermost block dimension \(block_shape\[1\] = 2\) spans 8 bytes; TMA copies at least 16 bytes per row"),
    ("rank mismatch", dict(block=(64,)), ValueError,
     r"rank mismatch: shape has 2 dimensions, strides 2 and block_shape 1; all three need one entry per dimension"),
    ("rank 6", dict(shape=(2,) * 6, strides=(32, 16, 8, 4, 2, 1), block=(2,) * 5 + (8,)), ValueError,
     r"rank 6 is not supported: TMA descriptors have 1 to 5 dimensions"),
    ("empty shape", dict(shape=(0, 256)), ValueError, r"shape\[0\] = 0 is out of range \(1 to 2\*\*32\)"),
    ("bool", dict(dtype=torch.bool), TypeError,
     r"dtype torch.bool is not supported \(TMA copies fp16, bf16, fp32, fp64, fp8 and integers of 8 to 64 bits\)"),
    ("complex", dict(dtype=torch.complex64), TypeError, r"dtype torch.complex64 is not supported"),
    ("CPU tensor", dict(device="cpu"), TypeError, r"its base is a CPU tensor; tessera kernels need CUDA tensors"),
]


@pytest.mark.parametrize("what,changes,error,message", BAD, ids=[b[0] for b in BAD])
def test_each_rule_is_checked_before_the_driver(fake, what, changes, error, message):
    k = fresh(K.desc_kernel)
    good, bad = desc(), desc(**changes)
    encodes, launches = fake.tensor_map_count, fake.count
    with pytest.raises(error, match="^" + LABEL + message):
        k[(1,)](good, 7, bad)
    assert fake.count == launches
    assert fake.tensor_map_count == encodes + 1  # `good` only: `bad` never reached the driver
    assert bad.tensor_map is None
    assert k.cache_info()["compiled"] == 0  # nothing was compiled for it either


def test_driver_errors_name_the_argument_and_the_cuda_error(fake):
    k = fresh(K.int_then_desc)
    d = desc()
    fake.fail_next_tensor_map(CUDA_ERROR_INVALID_VALUE)
    with pytest.raises(tessera.DriverError) as info:
        k[(1,)](3, d)
    assert str(info.value).startswith("int_then_desc(): tensor descriptor argument 'desc' (parameter 2 of 2): "
                                      "cuTensorMapEncodeTiled failed: CUDA_ERROR_INVALID_VALUE (invalid argument)")
    assert info.value.code == CUDA_ERROR_INVALID_VALUE
    assert d.tensor_map is None
    launch_planted(k, (3, d), [I32, DESC])  # the next launch encodes it again, successfully
    assert d.tensor_map is not None


def test_interpret_mode_refuses_descriptors_of_device_memory():
    k = fresh(K.int_then_desc)
    k.interpret = True
    with pytest.raises(TypeError, match=r"int_then_desc\(\): argument 'desc.base' is a cuda tensor; interpret mode "
                                        r"runs on the host and needs CPU tensors or numpy arrays"):
        k[(1,)](3, desc())


def test_compiled_desc_load_kernel_gets_its_descriptor(fake):
    """The compiler's own desc.load code (not planted PTX) launched with a TensorDescriptor:
    its PTX declares the 128-byte parameter and issues the bulk tensor copies, and the
    encoded bytes reach the launch at offset 0 with the box the kernel was compiled for."""
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python", "lang_kernels"))
    from tensor_descriptors import desc_copy
    d = desc(shape=(256, 512), strides=(512, 1), block=(64, 128))
    out = torch.Tensor(P + (1 << 20), torch.bfloat16, device="cuda")
    compiled = desc_copy.warmup(d, out, 512, BLOCK_M=64, BLOCK_N=128)
    ptx = compiled.asm["ptx"]
    assert "cp.async.bulk.tensor.2d" in ptx
    assert ".param .align 64 .b8 desc_copy_param_0[128]" in ptx
    desc_copy[(4, 4)](d, out, 512, BLOCK_M=64, BLOCK_N=128)
    layout, block = fake.last_layout()
    assert layout[0][:3] == (0, 128, 64) and block[0:128] == d.tensor_map
    t = fake.last_tensor_map()
    assert t["box_dim"] == (64, 64) and t["swizzle"] == SWIZZLE_128B


def test_assigning_block_shape_re_encodes(fake):
    """An autotuner's pre_hook sets block_shape per config (Triton's pattern): a new block
    changes the signature token and is encoded by the next launch; the same block is not."""
    d = desc(shape=(512, 256), strides=(256, 1), block=(128, 64))
    d.block_shape = [64, 64]
    assert d.block_shape == (64, 64) and d.tensor_map is None
    k = fresh(K.int_then_desc)
    launch_planted(k, (3, d), [I32, DESC])
    assert fake.last_tensor_map()["box_dim"] == (64, 64)
    encoded = fake.tensor_map_count
    d.block_shape = (64, 64)  # unchanged: the map stays
    assert d.tensor_map is not None
    d.block_shape = [32, 64]
    assert d.tensor_map is None
    launch_planted(k, (3, d), [I32, DESC])
    assert fake.tensor_map_count == encoded + 1 and fake.last_tensor_map()["box_dim"] == (64, 32)
    with pytest.raises(TypeError, match=r"block_shape\[0\] must be an int"):
        d.block_shape = ["x", 64]
    assert d.block_shape == (32, 64)
    with pytest.raises(AttributeError):
        del d.block_shape


def test_compiled_desc_store_kernel_gets_both_descriptors(fake):
    """desc.store (the compiler's own code): a kernel reading through one descriptor and
    writing through another gets both encoded maps, at offsets 0 and 128, and a scalar after;
    then each descriptor's hidden parameters (base, shape i32s, leading strides i64, padding i32)."""
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python", "lang_kernels"))
    from tensor_descriptors import desc_store_scaled
    src = desc(shape=(256, 512), strides=(512, 1), block=(64, 128))
    dst = desc(ptr=P + (1 << 20), shape=(256, 512), strides=(512, 1), block=(64, 128))
    ptx = desc_store_scaled.warmup(src, dst, 2.0, BLOCK_M=64, BLOCK_N=128).asm["ptx"]
    assert ptx.count("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group") == 2
    desc_store_scaled[(4, 4)](src, dst, 2.0, BLOCK_M=64, BLOCK_N=128)
    layout, block = fake.last_layout()
    hidden = [(264, 8, 8), (272, 4, 4), (276, 4, 4), (280, 8, 8), (288, 4, 4)]
    hidden += [(o + 32, size, align) for o, size, align in hidden]
    assert [entry[:3] for entry in layout] == [(0, 128, 64), (128, 128, 64), (256, 4, 4)] + hidden
    assert block[0:128] == src.tensor_map and block[128:256] == dst.tensor_map
    assert struct.unpack_from("<f", block, 256)[0] == 2.0
    assert struct.unpack_from("<QiiqI", block, 264) == (P, 256, 512, 512, 0)
    assert struct.unpack_from("<QiiqI", block, 296) == (P + (1 << 20), 256, 512, 512, 0)


# ---- Triton's descriptors, padding, hidden parameters ----------------------------------------------------

import dataclasses  # noqa: E402
from typing import Any, List  # noqa: E402


@dataclasses.dataclass
class TritonDescriptor:
    """Triton's triton.tools.tensor_descriptor.TensorDescriptor, field for field."""
    base: Any
    shape: List[int]
    strides: List[int]
    block_shape: List[int]
    padding: str = "zero"


TritonDescriptor.__name__ = "TensorDescriptor"


def host_kernels():
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python", "lang_kernels"))
    import host_descriptors
    return host_descriptors


def test_a_triton_descriptor_is_encoded_and_packed_with_its_hidden_parameters(fake):
    """Triton's dataclass (the conformance harness passes the real one): encoded once from its
    fields, the map at offset 0, then the kernel's own parameters, then base, shape (i32),
    the leading stride (i64) and padding (i32); padding='nan' asks the TMA unit for NaN fill."""
    k = host_kernels().host_desc_tile_copy
    src = torch.Tensor(P, torch.float32, shape=(48, 48))
    out = torch.Tensor(P + (1 << 20), torch.float32, shape=(64, 64))
    d = TritonDescriptor(src, [48, 48], [48, 1], [32, 32], padding="nan")
    encodes = fake.tensor_map_count
    k[(2, 2)](d, out, 64, M_BLOCK=32, N_BLOCK=32)
    assert fake.tensor_map_count == encodes + 1
    t = fake.last_tensor_map()
    assert t["oob_fill"] == 1 and t["box_dim"] == (32, 32)  # CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
    layout, block = fake.last_layout()
    assert [entry[:2] for entry in layout] == [(0, 128), (128, 8), (136, 4), (144, 8), (152, 4), (156, 4),
                                               (160, 8), (168, 4)]
    assert block[0:128] == t["map"]
    assert struct.unpack_from("<Qi", block, 128) == (P + (1 << 20), 64)
    assert struct.unpack_from("<QiiqI", block, 144) == (P, 48, 48, 48, 1)
    k[(2, 2)](d, out, 64, M_BLOCK=32, N_BLOCK=32)
    assert fake.tensor_map_count == encodes + 1  # the adopted descriptor is kept on the dataclass
    d.padding = "zero"  # a field changed: made and encoded again
    k[(2, 2)](d, out, 64, M_BLOCK=32, N_BLOCK=32)
    assert fake.tensor_map_count == encodes + 2 and fake.last_tensor_map()["oob_fill"] == 0
    assert struct.unpack_from("<I", fake.last_layout()[1], 168) == (0,)


def test_a_block_over_256_rows_is_not_encoded(fake):
    """Triton takes any power-of-two block; one over TMA's 256 per dimension is read through
    pointers in the kernel, so the launch passes a zero map and the hidden parameters."""
    k = host_kernels().host_desc_tile_copy
    src = torch.Tensor(P, torch.float32, shape=(1024, 32))
    out = torch.Tensor(P + (1 << 20), torch.float32, shape=(1024, 32))
    d = tessera.TensorDescriptor(src, [1024, 32], [32, 1], [512, 32])
    encodes = fake.tensor_map_count
    k[(2, 1)](d, out, 32, M_BLOCK=512, N_BLOCK=32)
    assert fake.tensor_map_count == encodes
    layout, block = fake.last_layout()
    assert block[0:128] == bytes(128) and d.tensor_map == bytes(128)
    assert struct.unpack_from("<QiiqI", block, 144) == (P, 1024, 32, 32, 0)
    with pytest.raises(ValueError, match=r"host_desc_tile_copy\(\): tensor descriptor argument 'in_desc' "
                                         r"\(parameter 1 of 5\): strides\[0\] = 34 elements is 136 bytes"):
        k[(2, 1)](tessera.TensorDescriptor(src, [1024, 32], [34, 1], [512, 32]), out, 32, M_BLOCK=512, N_BLOCK=32)


def test_nan_padding_needs_a_float_tensor():
    with pytest.raises(ValueError, match=r"Padding option `nan` is only supported for floating point tensors"):
        tessera.TensorDescriptor(torch.Tensor(P, torch.int32), [64, 64], [64, 1], [16, 16], padding="nan")


@tessera.jit
def _first_of_pair(pair, out):
    v = pair[0].load([0, 0])
    tl.store(out + tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :], v)


def test_a_descriptor_inside_a_tuple_argument_is_a_located_error(fake):
    """A descriptor's fields are hidden parameters after the kernel's own: inside a tuple argument
    it is refused where the parameter is declared (pass it as an argument of its own)."""
    x = torch.Tensor(P, torch.float16, shape=(64, 64))
    out = torch.Tensor(P + (1 << 20), torch.float16, shape=(16, 16))
    desc = tessera.TensorDescriptor.from_tensor(x, block_shape=[16, 16])
    with pytest.raises(tessera.CompilationError, match=r"test_tensor_descriptor\.py:\d+:\d+: error: argument "
                       r"'pair_0': a tensor descriptor inside a tuple argument is not supported"):
        _first_of_pair[(1,)]((desc, 3), out)


@tessera.jit
def _desc_none_tuple(d, bias, pair, n):
    v = d.load([0, 0])
    if bias is not None:
        v += tl.load(bias)
    tl.store(pair[0] + tl.arange(0, 16)[:, None] * pair[1] + tl.arange(0, 16)[None, :], v, mask=n > 0)


def test_hidden_fields_follow_the_slots_taken(fake):
    """The descriptor's hidden parameters (base, shape, the strides but the last, padding) come right
    after the slots the arguments took: a None argument takes none, a tuple one per leaf."""
    x = torch.Tensor(P, torch.float16, shape=(64, 48))
    out = torch.Tensor(P + (1 << 20), torch.float16, shape=(16, 16))
    desc = tessera.TensorDescriptor.from_tensor(x, block_shape=[16, 16])
    _desc_none_tuple[(1,)](desc, None, (out, 16), 5)
    params = fake.last()["params"]
    assert [size for size, _ in params] == [128, 8, 4, 4, 8, 4, 4, 8, 4]
    assert [value for _, value in params[1:]] == [P + (1 << 20), 16, 5, P, 64, 48, 48, 0]
