"""kernel[grid](...) end to end through the fake CUDA driver: what reaches
cuLaunchKernel (function, grid, block, stream, each parameter's bytes) for the
launch path's fast cases (torch tensors, ints, floats, bools) and its slow ones
(__cuda_array_interface__, callable grids, launch options), and the errors
that must stop a launch before the driver sees it."""
import copy
import struct
import sys

import numpy as np
import pytest
import torch

import tessera
import tessera.language as tl
import kernels as K

P = 0x7F0000001000  # 16-byte aligned "device pointers" (the fake driver never dereferences them)


def tensors(n, dtype=torch.float32, step=4096):
    return [torch.Tensor(P + step * i, dtype) for i in range(n)]


class CudaArray:
    """An object with __cuda_array_interface__ (the general argument path)."""

    def __init__(self, ptr, typestr="<f4"):
        self.__cuda_array_interface__ = {"data": (ptr, False), "typestr": typestr, "shape": (1024,), "version": 3}


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


@pytest.fixture(autouse=True)
def default_stream():
    torch._C.current_stream = 0
    yield
    torch._C.current_stream = 0


def test_the_driver_is_the_fake(fake):
    assert tessera.driver_available()
    assert tessera.device_count() == 1
    assert tessera._C.driver_version() == 99000


def test_four_tensors_two_ints(fake):
    t = tensors(4)
    torch._C.current_stream = 0x5000
    before = fake.count
    K.noop6[(3,)](*t, 1000, 2**40)
    assert fake.count == before + 1
    last = fake.last()
    assert last["kernel"] == "noop6"
    assert last["grid"] == (3, 1, 1)
    assert last["block"] == (128, 1, 1)  # num_warps=4
    assert last["stream"] == 0x5000       # torch's current stream (torch._C._cuda_getCurrentRawStream)
    assert last["device"] == 0
    assert last["params"] == [(8, P), (8, P + 4096), (8, P + 8192), (8, P + 12288), (4, 1000), (8, 2**40)]


def test_zero_and_sixteen_arguments(fake):
    K.noop0[(1,)]()
    assert fake.last()["kernel"] == "noop0" and fake.last()["params"] == []
    dtypes = [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8, torch.int32, torch.int64,
              torch.uint8]
    t = [torch.Tensor(P + 256 * i, d) for i, d in enumerate(dtypes)]
    ints = [0, 1, -5, 16, 2**31 - 1, -(2**31), 2**31, 2**64 - 1]
    K.noop16[(65536, 2, 3)](*t, *ints)
    last = fake.last()
    assert last["grid"] == (65536, 2, 3)
    assert last["params"][:8] == [(8, P + 256 * i) for i in range(8)]
    # i32 for what fits (two's complement in 4 bytes), i64 beyond, u64 above 2**63 - 1.
    assert last["params"][8:] == [(4, 0), (4, 1), (4, 2**32 - 5), (4, 16), (4, 2**31 - 1), (4, 2**31),
                                  (8, 2**31), (8, 2**64 - 1)]
    sig = K.noop16.specialization(*t, *ints)[0].split(",")
    assert sig[:8] == ["*fp16:16", "*bf16:16", "*fp32:16", "*fp64:16", "*i8:16", "*i32:16", "*i64:16", "*u8:16"]
    assert sig[8:] == ["i32:16", "i32:1", "i32", "i32:16", "i32", "i32:16", "i64:16", "u64"]


def test_ints_and_pointers_of_every_size(fake):
    # Exact ints are read from CPython's digits up to two of them (30 bits each); larger ones, and
    # pointers above 2**60, take the generic conversion. Both must give the same bytes and key.
    t = [torch.Tensor(p) for p in (0, 16, 2**30 - 16, 2**30, 2**60 - 16, 2**60, 2**62 + 16, 2**63 + 32)]
    ints = [2**30 - 1, -(2**30), 2**31, -(2**60) + 1, 2**60 - 16, 2**60, -(2**63), 2**63 - 1]
    K.noop16[(1,)](*t, *ints)
    last = fake.last()
    assert last["params"][:8] == [(8, p) for p in (0, 16, 2**30 - 16, 2**30, 2**60 - 16, 2**60, 2**62 + 16,
                                                   2**63 + 32)]
    assert last["params"][8:] == [(4, 2**30 - 1), (4, 2**32 - 2**30), (8, 2**31), (8, 2**64 - 2**60 + 1),
                                  (8, 2**60 - 16), (8, 2**60), (8, 2**63), (8, 2**63 - 1)]
    sig = K.noop16.specialization(*t, *ints)[0].split(",")
    assert sig[8:] == ["i32", "i32:16", "i64:16", "i64", "i64:16", "i64:16", "i64:16", "i64"]
    fast, full = K.noop16._get_handle()._launch_keys((*t, *ints))
    assert fast == full
    for v in (0, 1, -1, 16, -16, 2**30, -(2**30) - 16, 2**59 + 1, -(2**61), 2**63 + 5):
        fast, full = K.noop6._get_handle()._launch_keys((*t[:4], v, 2**64 - 1))
        assert fast == full, v


def test_more_than_32_parameters(fake):
    # Past the launch path's inline room (32 parameters): its arrays and the key go to the heap.
    t = tensors(30)
    args = (*t, 1, 16, -3, 2**40, 0.5, True)
    K.noop36[(1,)](*args, 7)  # all positionally
    want = [(8, P + 4096 * i) for i in range(30)] + [(4, 1), (4, 16), (4, 2**32 - 3), (8, 2**40),
                                                     (4, f32_bits(0.5)), (1, 1)]
    assert fake.last()["params"] == want
    K.noop36[(1,)](*args, C=7)
    assert fake.last()["params"] == want
    assert K.noop36.cache_info()["compiled"] == 1
    fast, full = K.noop36._get_handle()._launch_keys(args, {"C": 7})
    assert fast == full


def test_every_parameter_positionally(fake):
    # All parameters given positionally (constexprs too): nothing to bind, the same kernel as with keywords.
    k = tessera.jit(K.add_kernel.fn)
    x, y, out = tensors(3)
    k[(2,)](x, y, out, 100, 128)
    assert fake.last()["params"] == [(8, P), (8, P + 4096), (8, P + 8192), (4, 100)]
    assert fake.last()["block"] == (128, 1, 1)
    k[(2,)](x, y, out, 100, BLOCK_SIZE=128)
    assert k.cache_info()["compiled"] == 1
    k[(2,)](x, y, out, 100, 64)
    assert k.cache_info()["compiled"] == 2


def test_callable_grid_meta_dicts(fake):
    x, = tensors(1)
    seen = []

    def grid(meta):
        seen.append(meta)
        return [2]  # a list: the general grid conversion

    K.named_like_options[grid](x, num_warps=2)  # a parameter named like the option sets both
    assert fake.last()["grid"] == (2, 1, 1) and fake.last()["block"] == (64, 1, 1)
    K.named_like_options[grid](x, 8)  # positionally: the parameter only
    assert fake.last()["block"] == (128, 1, 1)
    assert seen[0] == {"x_ptr": x, "num_warps": 2, "BLOCK": 32, "num_stages": 3}
    assert list(seen[0]) == ["x_ptr", "num_warps", "BLOCK", "num_stages"]
    assert seen[1] == {"x_ptr": x, "num_warps": 8, "BLOCK": 32, "num_stages": 3}  # a dict of its own
    K.noop6[lambda meta: (meta["n"], meta["m"])](*tensors(4), 3, 5, num_stages=4)
    assert fake.last()["grid"] == (3, 5, 1)
    # A constexpr without a value (no Python default: the front-end's) is not in the dict.
    text, path, line = K.named_like_options._source()
    h = tessera._C.JitKernel(text, path, line, "named_like_options")
    tessera._C.launch(h, grid, (x,), {"num_warps": 4})
    assert list(seen[-1]) == ["x_ptr", "num_warps", "num_stages"] and seen[-1]["num_warps"] == 4
    tessera._C.launch(h, grid, (x, 2))
    assert list(seen[-1]) == ["x_ptr", "num_warps", "num_stages"] and seen[-1]["num_warps"] == 2


def test_launch_without_a_current_context(fake):
    # Kernels whose arguments name no device launch on the current context's; with none current
    # (a fresh thread, say) the runtime makes device 0's current, as for the first launch.
    import ctypes
    set_current = ctypes.c_void_p()
    assert fake.lib.cuGetProcAddress_v2(b"cuCtxSetCurrent", ctypes.byref(set_current), 4000, ctypes.c_uint64(0),
                                        None) == 0
    set_current = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)(set_current.value)
    for kernel, args in ((K.noop0, ()), (K.noop6, (1, 2, 3, 4, 5, 6))):
        kernel[(1,)](*args)
        assert set_current(None) == 0
        before = fake.count
        kernel[(2,)](*args)
        assert fake.count == before + 1 and fake.last()["grid"] == (2, 1, 1) and fake.last()["device"] == 0
        assert tessera._C.current_device() == 0


def test_scalars(fake):
    K.scalars[(1,)](1.5, True, 2**40, -7)
    assert fake.last()["params"] == [(4, f32_bits(1.5)), (1, 1), (8, 2**40), (4, 2**32 - 7)]
    K.scalars[(1,)](-0.25, False, -(2**40), 3)
    assert fake.last()["params"] == [(4, f32_bits(-0.25)), (1, 0), (8, 2**64 - 2**40), (4, 3)]


def test_grids(fake):
    k = K.noop6
    args = (*tensors(4), 16, 32)
    for grid in [(1,), (2, 3), (4, 5, 6), [7], 9, (1,), (2, 3)]:
        k[grid](*args)
        want = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)
        assert fake.last()["grid"] == want + (1,) * (3 - len(want))
    bound = k[(8, 1)]
    assert k[(8, 1)] is not None
    bound(*args)
    assert fake.last()["grid"] == (8, 1, 1)
    # A grid with an empty dimension launches nothing (as in Triton).
    before = fake.count
    k[(0,)](*args)
    k[(4, 0)](*args)
    k[lambda meta: (0,)](*args)
    assert fake.count == before


def test_the_same_grid_tuple_object_is_reused_safely(fake):
    k = K.noop6
    args = (*tensors(4), 16, 32)
    grid = (5,)
    b1, b2 = k[grid], k[grid]
    assert b1 is b2  # handed out again for the same tuple
    k[grid](*args)
    assert fake.last()["grid"] == (5, 1, 1)
    other = tuple([6])
    assert k[other] is not b1
    k[other](*args)
    assert fake.last()["grid"] == (6, 1, 1)
    b1(*args)  # an earlier BoundLaunch still launches its own grid
    assert fake.last()["grid"] == (5, 1, 1)
    # A new tuple per launch (kernel[(n,)]): the BoundLaunch nobody else holds takes the new grid;
    # one that is held keeps its own.
    for n in (7, 8, 9):
        k[tuple([n])](*args)
        assert fake.last()["grid"] == (n, 1, 1)
    held = k[tuple([10])]
    k[tuple([11])](*args)
    assert fake.last()["grid"] == (11, 1, 1)
    held(*args)
    assert fake.last()["grid"] == (10, 1, 1)
    k[tuple([12])](*args)
    held(*args)
    assert fake.last()["grid"] == (10, 1, 1)


def test_callable_grid_gets_the_meta_parameters(fake):
    x, y, out = tensors(3)
    seen = {}

    def grid(meta):
        seen.update(meta)
        return (tessera.cdiv(1000, meta["BLOCK_SIZE"]),)

    K.add_kernel[grid](x, y, out, 1000, BLOCK_SIZE=256, num_warps=2)
    last = fake.last()
    assert last["grid"] == (4, 1, 1)
    assert last["block"] == (64, 1, 1)
    assert seen["BLOCK_SIZE"] == 256 and seen["num_warps"] == 2 and seen["n_elements"] == 1000
    assert seen["num_stages"] == 3 and seen["x_ptr"] is x and len(seen) == 7
    assert last["params"] == [(8, P), (8, P + 4096), (8, P + 8192), (4, 1000)]


def test_specialisation_on_divisibility_alignment_and_one(fake):
    k = tessera.jit(K.add_kernel.fn)  # a fresh handle: its cache counts only these launches
    x, y, out = tensors(3)
    for n in (1024, 1000, 1, 2048, 1001):
        k[(1,)](x, y, out, n, BLOCK_SIZE=128)
        assert fake.last()["params"][3] == (4, n)
    assert k.cache_info()["compiled"] == 3  # i32:16, i32, i32:1
    misaligned = torch.Tensor(P + 4)
    k[(1,)](misaligned, y, out, 1024, BLOCK_SIZE=128)
    assert fake.last()["params"][0] == (8, P + 4)
    assert k.cache_info()["compiled"] == 4
    assert k.specialization(misaligned, y, out, 1024, BLOCK_SIZE=128)[0] == "*fp32,*fp32:16,*fp32:16,i32:16"
    k[(1,)](x, y, out, 1024, BLOCK_SIZE=64)  # another constexpr value: another kernel
    assert k.cache_info()["compiled"] == 5
    # do_not_specialize
    d = tessera.jit(K.add_kernel.fn, do_not_specialize=["n_elements"])
    d[(1,)](x, y, out, 1, BLOCK_SIZE=128)
    d[(1,)](x, y, out, 1024, BLOCK_SIZE=128)
    assert d.cache_info()["compiled"] == 1
    assert fake.last()["params"][3] == (4, 1024)


def test_keyword_arguments_and_options(fake):
    x, y, out = tensors(3)
    K.add_kernel[(2,)](x_ptr=x, y_ptr=y, out_ptr=out, n_elements=100, BLOCK_SIZE=128, num_warps=8, num_stages=2)
    last = fake.last()
    assert last["block"] == (256, 1, 1)
    assert last["params"] == [(8, P), (8, P + 4096), (8, P + 8192), (4, 100)]
    # Names that are not interned (built at run time) bind the same way.
    kw = {"".join(["n_", "elements"]): 77, "".join(["BLOCK", "_SIZE"]): 128, "".join(["num_", "warps"]): 1}
    K.add_kernel[(2,)](x, y, out, **kw)
    assert fake.last()["params"][3] == (4, 77) and fake.last()["block"] == (32, 1, 1)
    with pytest.raises(TypeError, match=r"add_kernel\(\) got multiple values for argument 'n_elements'"):
        K.add_kernel[(1,)](x, y, out, 5, n_elements=5, BLOCK_SIZE=128)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'n_elementz'"):
        K.add_kernel[(1,)](x, y, out, n_elementz=5, BLOCK_SIZE=128)
    with pytest.raises(TypeError, match=r"missing a value for constexpr parameter 'BLOCK_SIZE'"):
        K.add_kernel[(1,)](x, y, out, 5)
    with pytest.raises(TypeError, match=r"missing 'n_elements'"):
        K.add_kernel[(1,)](x, y, out, BLOCK_SIZE=128)


def test_streams(fake):
    x, y, out = tensors(3)
    torch._C.current_stream = 0x1111
    K.add_kernel[(1,)](x, y, out, 16, BLOCK_SIZE=128)
    assert fake.last()["stream"] == 0x1111
    K.add_kernel[(1,)](x, y, out, 16, BLOCK_SIZE=128, stream=0x2222)
    assert fake.last()["stream"] == 0x2222

    class Stream:
        cuda_stream = 0x7FFF00003333

    K.add_kernel[(1,)](x, y, out, 16, BLOCK_SIZE=128, stream=Stream())
    assert fake.last()["stream"] == 0x7FFF00003333
    # Without torch tensors: the legacy default stream (0) unless one is given.
    a, b, c = CudaArray(P), CudaArray(P + 64), CudaArray(P + 128)
    K.add_kernel[(1,)](a, b, c, 16, BLOCK_SIZE=128)
    assert fake.last()["stream"] == 0
    assert fake.last()["params"] == [(8, P), (8, P + 64), (8, P + 128), (4, 16)]
    with pytest.raises(TypeError, match="stream must be an int"):
        K.add_kernel[(1,)](x, y, out, 16, BLOCK_SIZE=128, stream="default")


def test_bad_arguments_are_refused_before_the_driver(fake):
    x, y, out = tensors(3)
    before = fake.count
    with pytest.raises(TypeError, match=r"add_kernel\(\): argument 'y_ptr' has dtype torch.complex64"):
        K.add_kernel[(1,)](x, torch.Tensor(P, torch.complex64), out, 16, BLOCK_SIZE=128)
    with pytest.raises(TypeError, match=r"add_kernel\(\): argument 'out_ptr' is a CPU tensor"):
        K.add_kernel[(1,)](x, y, torch.Tensor(P, device="cpu"), 16, BLOCK_SIZE=128)
    # None is the constexpr None, as in Triton: compiling the kernel's use of it fails.
    with pytest.raises(tessera.CompilationError, match=r"kernels.py:43:17: error: unsupported operand types for \+: None"):
        K.add_kernel[(1,)](None, y, out, 16, BLOCK_SIZE=128)
    with pytest.raises(TypeError, match=r"argument 'n_elements' has unsupported type 'str'"):
        K.add_kernel[(1,)](x, y, out, "16", BLOCK_SIZE=128)
    with pytest.raises(ValueError, match=r"argument 'n_elements' = 36893488147419103232 does not fit in 64 bits"):
        K.add_kernel[(1,)](x, y, out, 2**65, BLOCK_SIZE=128)
    with pytest.raises(TypeError, match=r"add_kernel\(\) takes 5 arguments .* but 6 were given"):
        K.add_kernel[(1,)](x, y, out, 1, 2, 3)
    with pytest.raises(ValueError, match="grid"):
        K.add_kernel[(1, 2, 3, 4)](x, y, out, 16, BLOCK_SIZE=128)
    with pytest.raises(ValueError, match=r"num_warps must be a positive int"):
        K.add_kernel[(1,)](x, y, out, 16, BLOCK_SIZE=128, num_warps=0)
    assert fake.count == before
    # The kernel still launches afterwards.
    K.add_kernel[(1,)](x, y, out, 16, BLOCK_SIZE=128)
    assert fake.count == before + 1


def test_interpret_can_be_switched_after_gpu_launches(fake):
    k = tessera.jit(K.add_kernel.fn)
    x, y, out = tensors(3)
    k[(1,)](x, y, out, 16, BLOCK_SIZE=128)
    count = fake.count
    k.interpret = True  # now kernel[grid] must run the interpreter, not the cached GPU launcher
    a, b, c = np.arange(16, dtype=np.float32), np.ones(16, dtype=np.float32), np.zeros(16, dtype=np.float32)
    k[(1,)](a, b, c, 16, BLOCK_SIZE=128)
    assert fake.count == count
    np.testing.assert_array_equal(c, a + b)
    k.interpret = False
    k[(1,)](x, y, out, 16, BLOCK_SIZE=128)
    assert fake.count == count + 1


def test_jit_function_as_constexpr(fake):
    x, out = tensors(2)
    K.apply_kernel[(2,)](x, out, 100, FN=K.double, BLOCK=64)
    last = fake.last()
    assert last["kernel"] == "apply_kernel"
    assert last["grid"] == (2, 1, 1)
    assert last["params"] == [(8, P), (8, P + 4096), (4, 100)]
    K.apply_kernel[(3,)](x, out, 100, FN=K.double, BLOCK=64)
    assert fake.last()["grid"] == (3, 1, 1)


def test_a_kernel_that_may_take_functions_launches_plain_arguments_without_python(fake, monkeypatch):
    """A kernel whose constexpr may receive a @jit function (FN) gets a guarded C++ launcher: with only
    plain arguments (tensors, ints, None, str) kernel[grid] and run() go straight to C++ after the first
    kernel[grid]; a function (or a tuple, or another object) among them goes to Python, which composes."""
    import gc
    import weakref
    jit_module = sys.modules["tessera.jit"]
    fresh = tessera.jit(K.maybe_apply.fn)
    calls, subscripts = [], []
    fallback, subscript = jit_module._launch_in_python, jit_module.JITFunction._subscript
    monkeypatch.setattr(jit_module, "_launch_in_python", lambda *a, **k: calls.append(a[1]) or fallback(*a, **k))
    monkeypatch.setattr(jit_module.JITFunction, "_subscript",
                        lambda self, g: self is fresh and subscripts.append(g) or subscript(self, g))
    x, out = tensors(2)
    for launch in (lambda n: fresh[(2,)](x, out, n, BLOCK=64), lambda n: fresh[(2,)](x, out, n, 64, None),
                   lambda n: fresh.run(x, out, n, grid=(2,), BLOCK=64, FN=None),
                   lambda n: fresh[(2,)](x, out, n, BLOCK=64, FN="double")):  # a name: plain
        for n in (100, 101):
            launch(n)
            assert fake.last()["kernel"] == "maybe_apply" and fake.last()["params"] == [(8, P), (8, P + 4096), (4, n)]
    assert calls == [] and subscripts == [(2,)]
    fresh[(3,)](x, out, 102, BLOCK=64, FN=K.double)  # a function: Python composes the kernel with it
    assert calls == [(3,)] and fake.last()["grid"] == (3, 1, 1) and fake.last()["params"][2] == (4, 102)
    fresh.run(x, out, 103, grid=(4,), BLOCK=64, FN=K.double)
    assert calls == [(3,), (4,)] and fake.last()["params"][2] == (4, 103)
    with pytest.raises(TypeError):
        fresh[(5,)](x, out, object(), BLOCK=64)  # not plain: Python's path, which refuses it as before
    assert calls[-1] == (5,) and subscripts == [(2,)]
    ref = weakref.ref(fresh)
    del fresh
    gc.collect()
    assert ref() is None  # the guarded launcher's fallback holds its kernel weakly


def test_autotuned_kernel_launches_the_winner(fake):
    x, y, out = tensors(3)
    K.tuned_add[lambda meta: (tessera.cdiv(1000, meta["BLOCK_SIZE"]),)](x, y, out, 1000)
    last = fake.last()
    best = K.tuned_add.best_config
    assert last["block"] == (32 * best.num_warps, 1, 1)
    assert last["grid"] == (tessera.cdiv(1000, best.kwargs["BLOCK_SIZE"]), 1, 1)
    assert last["params"] == [(8, P), (8, P + 4096), (8, P + 8192), (4, 1000)]


def test_compiled_kernel_launch(fake):
    x, y, out = tensors(3)
    ck = tessera.compile(K.add_kernel, signature="*fp32:16,*fp32:16,*fp32:16,i32", constexprs={"BLOCK_SIZE": 128})
    ck[(5,)](x, y, out, 77)
    last = fake.last()
    assert last["grid"] == (5, 1, 1)
    assert last["params"] == [(8, P), (8, P + 4096), (8, P + 8192), (4, 77)]
    with pytest.raises(ValueError, match="not 16-byte aligned"):
        ck[(5,)](torch.Tensor(P + 4), y, out, 77)


def test_many_launches_record_each(fake):
    k = K.noop6
    t = tensors(4)
    before = fake.count
    for i in range(1000):
        k[(i % 7 + 1,)](*t, i, 2 * i)
        if i % 97 == 0:
            last = fake.last()
            assert last["grid"] == (i % 7 + 1, 1, 1)
            assert last["params"][4:] == [(4, i), (4, 2 * i)]
    assert fake.count == before + 1000


def test_run_and_copies(fake):
    x, y, out = tensors(3)
    K.add_kernel.run(x, y, out, 33, grid=(6,), BLOCK_SIZE=128, num_warps=1)
    last = fake.last()
    assert last["grid"] == (6, 1, 1) and last["block"] == (32, 1, 1)
    assert last["params"] == [(8, P), (8, P + 4096), (8, P + 8192), (4, 33)]
    with pytest.raises(TypeError, match=r"add_kernel\(\) missing a value for constexpr parameter 'BLOCK_SIZE'"):
        K.add_kernel.run(x, y, out, 33, grid=(6,))
    fresh = tessera.jit(K.add_kernel.fn)
    for n in (40, 41):  # the first run() finds the launcher, the second goes straight to it
        fresh.run(x, y, out, n, grid=(3,), BLOCK_SIZE=128)
        assert fake.last()["params"][3] == (4, n) and fake.last()["grid"] == (3, 1, 1)
    fresh.interpret = True
    a, b, o = np.ones(8, dtype=np.float32), np.ones(8, dtype=np.float32), np.zeros(8, dtype=np.float32)
    count = fake.count
    fresh.run(a, b, o, 8, grid=(1,), BLOCK_SIZE=128)
    assert fake.count == count and (o == 2).all()
    c = copy.copy(K.add_kernel)
    assert c._direct is None and c.fn is K.add_kernel.fn
    c[(2,)](x, y, out, 34, BLOCK_SIZE=128)
    assert fake.last()["grid"] == (2, 1, 1) and fake.last()["params"][3] == (4, 34)
    c.interpret = True
    assert not K.add_kernel.interpret


def test_without_the_torch_fast_path_tensors_are_read_from_python():
    """The fake torch has no C++ side: _torch_fastpath.so is not built here, so the
    status says why and launches read the tensor attributes from Python."""
    x, y, out = tensors(3)
    K.add_kernel[(1,)](x, y, out, 1024, BLOCK_SIZE=128)
    status = tessera._C.torch_fastpath()
    assert status.startswith("off (") and "_torch_fastpath.so" in status, status
    assert tessera._C.torch_fastpath(True) == status  # nothing loaded: switching on changes nothing


def fake_ptxas(tmp_path, name, compile_step):
    """A ptxas stand-in: answers --version, records its arguments, then runs `compile_step`
    (shell) with $out set to the -o path."""
    script = tmp_path / name
    script.write_text("#!/bin/sh\n"
                      'if [ "$1" = "--version" ]; then echo "Cuda compilation tools, release 99.0, V99.0.1"; exit 0; fi\n'
                      f'echo "$@" > "{tmp_path}/{name}.args"\n'
                      'out=""; prev=""; for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done\n'
                      + compile_step + "\n")
    script.chmod(0o755)
    return script


def test_jit_mode(fake, monkeypatch, tmp_path, capfd):
    """How PTX becomes SASS (TESSERA_JIT): `ptxas` runs a ptxas (TESSERA_PTXAS here: a
    stand-in) and loads its cubin; `whole` loads the PTX itself (the driver compiles it as
    one program, as ptxas does); `link` links it first (cuLink*: relocatable code, as
    ptxas -c). Unset, a ptxas that fails falls back to `whole` with a warning; asked for by
    name, it is an error with ptxas's output. Each launch is a new specialisation
    (num_warps), so each loads."""
    (t,) = tensors(1)
    ok = fake_ptxas(tmp_path, "ptxas_ok", "printf '\\177ELF fake cubin' > \"$out\"")
    bad = fake_ptxas(tmp_path, "ptxas_bad", 'echo "ptxas fatal   : boom"; exit 3')
    links, count = fake.links, fake.count

    monkeypatch.setenv("TESSERA_JIT", "whole")
    K.jit_mode[(1,)](t, 1, num_warps=1)
    assert fake.count == count + 1 and fake.links == links
    monkeypatch.setenv("TESSERA_JIT", "link")
    K.jit_mode[(1,)](t, 1, num_warps=2)
    assert fake.count == count + 2 and fake.links == links + 1

    monkeypatch.setenv("TESSERA_JIT", "ptxas")
    monkeypatch.setenv("TESSERA_PTXAS", str(ok))
    K.jit_mode[(1,)](t, 1, num_warps=4)
    assert fake.count == count + 3 and fake.links == links + 1
    args = (tmp_path / "ptxas_ok.args").read_text().split()
    assert args[0] == "-arch=sm_90a" and args[1] == "-o" and args[3].endswith(".ptx"), args

    monkeypatch.delenv("TESSERA_JIT")
    monkeypatch.setenv("TESSERA_PTXAS", str(bad))
    capfd.readouterr()
    K.jit_mode[(1,)](t, 1, num_warps=8)  # the default: falls back to the driver
    assert fake.count == count + 4 and fake.links == links + 1
    err = capfd.readouterr().err
    assert "ptxas failed" in err and "boom" in err and "from its PTX instead" in err, err

    monkeypatch.setenv("TESSERA_JIT", "ptxas")
    with pytest.raises(RuntimeError, match=r"(?s)kernel 'jit_mode' for sm_90a failed with exit status 3:\nptxas fatal   : boom"):
        K.jit_mode[(1,)](t, 1, num_warps=16)
    monkeypatch.setenv("TESSERA_PTXAS", str(tmp_path / "no-such-ptxas"))
    with pytest.raises(RuntimeError, match="no-such-ptxas' is not a ptxas that runs"):
        K.jit_mode[(1,)](t, 1, num_warps=16)
    monkeypatch.setenv("TESSERA_JIT", "ptx")
    with pytest.raises(RuntimeError, match="TESSERA_JIT must be 'ptxas', 'whole' or 'link', got 'ptx'"):
        K.jit_mode[(1,)](t, 1, num_warps=16)
    assert fake.count == count + 4

@tessera.jit
def mul_add(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x * x + 1.5, mask=offs < n)


def test_tritons_launch_options_libraries_pass(fake):
    # enable_fp_fusion=False compiles without contraction (a kernel of its own); launch_pdl=True a
    # launch attribute, sanitize_overflow a hint, extern_libs=None (or libdevice's path) nothing,
    # launch_cooperative_grid=False the default.
    x, out = tensors(2)
    fused = mul_add.run(x, out, 100, grid=(1,), BLOCK=128)
    unfused = mul_add.run(x, out, 100, grid=(1,), BLOCK=128, enable_fp_fusion=False, launch_pdl=True,
                          sanitize_overflow=True, extern_libs=None, launch_cooperative_grid=False)
    assert "fma.rn.f32" in fused.asm["ptx"]
    assert "fma.rn.f32" not in unfused.asm["ptx"] and "mul.rn.f32" in unfused.asm["ptx"]
    assert mul_add.specialization(x, out, 100, BLOCK=128, enable_fp_fusion=False)[2]["enable_fp_fusion"] is False
    # Triton's tutorial 07 names libdevice's path: tessera's libdevice functions are its own
    mul_add[(1,)](x, out, 100, BLOCK=128, extern_libs={"libdevice": "/path/libdevice.10.bc"})
    with pytest.raises(ValueError, match="extern_libs: library 'ocml' is not supported"):
        mul_add[(1,)](x, out, 100, BLOCK=128, extern_libs={"ocml": "/path/ocml.bc"})


def test_cooperative_launch_goes_through_cuLaunchKernelEx(fake):
    x, out = tensors(2)
    mul_add[(2,)](x, out, 100, BLOCK=128, launch_cooperative_grid=True)
    last = fake.last()
    assert last["cooperative"] and last["grid"] == (2, 1, 1) and last["block"] == (128, 1, 1)
    assert last["params"] == [(8, P), (8, P + 4096), (4, 100)]
    loaded = mul_add.cache_info()["loaded"]
    mul_add[(2,)](x, out, 100, BLOCK=128, launch_cooperative_grid=False)
    assert not fake.last()["cooperative"]
    mul_add[(2,)](x, out, 100, BLOCK=128)  # the same kernel: cooperative is no compile option
    assert not fake.last()["cooperative"] and mul_add.cache_info()["loaded"] == loaded


def test_launch_pdl_sets_programmatic_stream_serialization(fake):
    # Triton's launch_pdl=True (tutorial 11): cuLaunchKernelEx with programmatic stream serialization,
    # alone or beside the cooperative attribute; the same compiled kernel either way.
    x, out = tensors(2)
    mul_add[(2,)](x, out, 100, BLOCK=128, launch_pdl=True)
    last = fake.last()
    assert last["programmatic"] and not last["cooperative"] and last["params"] == [(8, P), (8, P + 4096), (4, 100)]
    loaded = mul_add.cache_info()["loaded"]
    mul_add[(2,)](x, out, 100, BLOCK=128, launch_pdl=True, launch_cooperative_grid=True)
    assert fake.last()["programmatic"] and fake.last()["cooperative"]
    mul_add[(2,)](x, out, 100, BLOCK=128, launch_pdl=False)
    assert not fake.last()["programmatic"] and mul_add.cache_info()["loaded"] == loaded
    assert mul_add.specialization(x, out, 100, BLOCK=128, launch_pdl=True)[2]["launch_pdl"] is True


def test_a_cooperative_grid_that_cannot_be_resident_is_the_drivers_error(fake):
    # The fake device holds 132 SMs x 16 blocks of 128 threads at once.
    x, out = tensors(2)
    count = fake.count
    mul_add[(132 * 16,)](x, out, 100, BLOCK=128, launch_cooperative_grid=True)
    assert fake.count == count + 1
    with pytest.raises(tessera.DriverError, match=r"refused: the grid.s blocks cannot all be resident on the device at once"):
        mul_add[(132 * 16 + 1,)](x, out, 100, BLOCK=128, launch_cooperative_grid=True)
    assert fake.count == count + 1
    mul_add[(132 * 16 + 1,)](x, out, 100, BLOCK=128)  # not cooperative: any grid


def test_num_ctas_above_one_launches_one_cta_per_program(fake):
    # Triton's test_load_scope_sem_coop_grid_cta_not_one (sm_90: the fake's default).
    x, out = tensors(2)
    mul_add[(2,)](x, out, 100, BLOCK=128, num_ctas=4, launch_cooperative_grid=True)
    last = fake.last()
    assert last["grid"] == (2, 1, 1) and last["block"] == (128, 1, 1) and last["cooperative"]
    mul_add[(2,)](x, out, 100, BLOCK=128, num_ctas=4)
    assert fake.last()["grid"] == (2, 1, 1)
    assert mul_add.specialization(x, out, 100, BLOCK=128, num_ctas=2)[2]["num_ctas"] == 2
    with pytest.raises(ValueError, match="num_ctas must be a positive int, got 0"):
        mul_add[(2,)](x, out, 100, BLOCK=128, num_ctas=0)


def test_num_ctas_above_one_needs_sm90():
    # Triton's test_num_ctas_pre_sm90: warmup with Triton's arch spelling.
    x, out = tensors(2)
    with pytest.raises(ValueError, match=r"num_ctas > 1 requires NVIDIA SM90\+ \(Hopper\)"):
        mul_add.warmup(x, out, 100, BLOCK=128, grid=(1,), num_ctas=2, arch="sm80")
    assert mul_add.warmup(x, out, 100, BLOCK=128, grid=(1,), num_ctas=2, arch="sm90") is not None
    assert mul_add.warmup(x, out, 100, BLOCK=128, grid=(1,), num_ctas=1, arch="sm80") is not None


@tessera.jit
def noop(x):
    pass


def test_pointer_arguments(fake):
    # Triton's test_pointer_arguments: a CUDA tensor and pinned host memory launch; a CPU tensor
    # that is not pinned is a ValueError in Triton's words (also a TypeError, as before).
    noop[(1,)](torch.empty((1024,), device="cuda"))
    pinned = torch.empty((1024,), device="cpu", pin_memory=True)
    fake.pin(pinned.data_ptr(), 4096)
    noop[(1,)](pinned)
    assert fake.last()["params"] == [(8, pinned.data_ptr())]
    count = fake.count
    with pytest.raises(ValueError, match=r"Pointer argument \(at 0\) cannot be accessed from Triton \(cpu tensor\?\)"):
        noop[(1,)](torch.empty((1024,), device="cpu"))
    with pytest.raises(TypeError, match=r"noop\(\): argument 'x' is a CPU tensor; tessera kernels need CUDA tensors "
                                        r"or pinned host memory"):
        noop[(1,)](torch.empty((1024,), device="cpu"))
    # Marked pinned, but the driver does not know the memory: refused the same way.
    with pytest.raises(ValueError, match="cannot be accessed from Triton"):
        noop[(1,)](torch.empty((1024,), device="cpu", pin_memory=True))
    assert fake.count == count


def test_a_tuple_argument_takes_a_slot_per_int_leaf_specialised_as_an_int_argument(fake):
    x, out = tensors(2)
    before = fake.count
    K.strided_copy_tuple[(4,)](x, out, (64, 1), 50, BLOCK=64)
    assert fake.count == before + 1
    assert fake.last()["params"] == [(8, P), (8, P + 4096), (4, 64), (4, 1), (4, 50)]
    compiled = K.strided_copy_tuple.cache_info()["compiled"]
    K.strided_copy_tuple[(4,)](x, out, (32, 1), 50, BLOCK=64)  # same hints (:16, :1): no new compile
    assert K.strided_copy_tuple.cache_info()["compiled"] == compiled
    assert fake.last()["params"] == [(8, P), (8, P + 4096), (4, 32), (4, 1), (4, 50)]
    K.strided_copy_tuple[(4,)](x, out, (130, 2), 50, BLOCK=64)  # other hints: another specialisation
    assert K.strided_copy_tuple.cache_info()["compiled"] == compiled + 1
    assert fake.last()["params"] == [(8, P), (8, P + 4096), (4, 130), (4, 2), (4, 50)]
    assert fake.count == before + 3


def test_a_nested_tuple_of_tensors_none_and_constexprs_is_flattened(fake):
    x, out = tensors(2)
    K.tuple_of_pointers_copy[(1,)]((x, (out, None)), (0.5, tl.constexpr(2)), 50, BLOCK=64)
    assert fake.last()["params"] == [(8, P), (8, P + 4096), (4, f32_bits(0.5)), (4, 50)]
    K.tuple_of_pointers_copy[(1,)]((out, (x, None)), (1.5, tl.constexpr(2)), 7, BLOCK=64)
    assert fake.last()["params"] == [(8, P + 4096), (8, P), (4, f32_bits(1.5)), (4, 7)]
    # the launch's fast pass and its full pass (specialisation) write the same key
    fast, full = K.tuple_of_pointers_copy._get_handle()._launch_keys(
        ((x, (out, None)), (0.5, tl.constexpr(2)), 50), {"BLOCK": 64})
    assert fast == full


def test_many_tuple_leaves_grow_the_launch_slots(fake):
    # more slots than the launch keeps inline (32), after a slot already written (`first`)
    xs = tensors(41, dtype=torch.int32, step=256)
    K.store_to_each[(1,)](xs[0], tuple(xs[1:]), 7)
    assert fake.last()["params"] == [(8, P + 256 * i) for i in range(41)] + [(4, 7)]


def test_a_tuple_leaf_of_an_unsupported_type_is_refused_with_its_position(fake):
    x, out = tensors(2)
    with pytest.raises(TypeError, match=r"argument 'strides\[1\]' has unsupported type 'list'"):
        K.strided_copy_tuple[(4,)](x, out, (64, [1]), 50, BLOCK=64)


def test_a_compiled_kernel_launched_again_flattens_its_tuple_arguments(fake):
    x, out = tensors(2)
    pgm = K.tuple_of_pointers_copy[(1,)]((x, (out, None)), (0.5, tl.constexpr(2)), 50, BLOCK=64)
    pgm[(1,)]((out, (x, None)), (1.5, tl.constexpr(2)), 9, 64)  # all parameters, the constexpr too
    assert fake.last()["params"] == [(8, P + 4096), (8, P), (4, f32_bits(1.5)), (4, 9)]
    with pytest.raises(TypeError, match=r"argument 'ptrs\[1\]' must be a tuple of 2 values"):
        pgm[(1,)]((x, out), (1.5, tl.constexpr(2)), 9, 64)
