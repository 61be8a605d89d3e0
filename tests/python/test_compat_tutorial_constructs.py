"""Constructs found by driving Triton 3.6's tutorials (06 fused attention, 07 extern functions) and other
libraries through the compatibility mode (their kernels are not copied here: each test is a small kernel
written in the style of the construct), interpreted against numpy and compiled to PTX."""
import re

import numpy as np
import pytest

import tessera
import tessera.language as tl

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")


# ------------------------------------------------------------------ isinstance(x, tl.tensor_descriptor)

@tessera.jit
def _as_descriptor(desc_or_ptr, shape, strides, block_shape):
    # the attention tutorial's helper: a descriptor passed in is used as it is, a pointer is wrapped
    if isinstance(desc_or_ptr, tl.tensor_descriptor):
        return desc_or_ptr
    return tl.make_tensor_descriptor(desc_or_ptr, shape, strides, block_shape)


@tessera.jit
def double_rows_compiled(src, dst, M, N: tl.constexpr, BM: tl.constexpr):
    s = _as_descriptor(src, [M, N], [N, 1], [BM, N])
    d = _as_descriptor(dst, [M, N], [N, 1], [BM, N])
    row = tl.program_id(0) * BM
    d.store([row, 0], s.load([row, 0]) * 2)


double_rows = tessera.jit(double_rows_compiled.fn, interpret=True)


def test_isinstance_tensor_descriptor_wraps_a_pointer():
    x = np.arange(40 * 16, dtype=np.float32).reshape(40, 16)
    out = np.zeros_like(x)
    double_rows[(5,)](x, out, 40, N=16, BM=8)
    np.testing.assert_array_equal(out, x * 2)


def test_isinstance_tensor_descriptor_takes_a_descriptor_as_it_is():
    k = tessera.compile(double_rows_compiled, signature="tensordesc<fp32[8,16]>,tensordesc<fp32[8,16]>,i32",
                        constexprs={"N": 16, "BM": 8}, target="sm_90a")
    assert ".visible .entry double_rows_compiled" in k.asm["ptx"]
    k = tessera.compile(double_rows_compiled, signature="*fp32,*fp32,i32", constexprs={"N": 16, "BM": 8},
                        target="sm_90a")
    assert ".visible .entry double_rows_compiled" in k.asm["ptx"]


@tessera.jit
def classify(out_ptr, x_ptr, desc, BLOCK: tl.constexpr):
    made = tl.make_tensor_descriptor(x_ptr, [BLOCK], [1], [BLOCK])
    bp = tl.make_block_ptr(x_ptr, (BLOCK,), (1,), (0,), (BLOCK,), (0,))
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    flags = (isinstance(desc, tl.tensor_descriptor) * 1 + isinstance(made, tl.tensor_descriptor) * 2
             + isinstance(made, tl.tensor_descriptor_base) * 4 + isinstance(x_ptr, tl.tensor_descriptor) * 8
             + isinstance(x, tl.tensor_descriptor) * 16 + isinstance(x, tl.tensor) * 32
             + isinstance(desc, tl.tensor) * 64 + isinstance(made, tl.tensor) * 128 + isinstance(bp, tl.tensor) * 256)
    tl.store(out_ptr, flags)


def test_isinstance_tells_descriptors_from_tensors_as_triton_does():
    # Triton: descriptors are tensor_descriptor(_base), not tensors; a block pointer is a tensor
    k = tessera.compile(classify, signature="*i32,*fp32,tensordesc<fp32[16]>", constexprs={"BLOCK": 16},
                        target="sm_90a")
    assert re.search(r"\b295;", k.asm["ptx"]), k.asm["ptx"]  # 1 + 2 + 4 + 32 + 256


def test_tensor_descriptor_classes_exist_on_the_host():
    assert issubclass(tl.tensor_descriptor, tl.tensor_descriptor_base)
    import tessera.compat
    tessera.compat.install()
    try:
        import triton.language as ttl
        assert ttl.tensor_descriptor is tl.tensor_descriptor
    finally:
        tessera.compat.uninstall()


# ------------------------------------------------------------------ extern_libs={"libdevice": path}

@tessera.jit(interpret=True)
def arcsin(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, tl.extra.cuda.libdevice.asin(x), mask=offs < n)


def test_extern_libs_naming_libdevice_is_accepted_interpreted():
    # tutorial 07 passes the path of libdevice.10.bc: tessera's libdevice functions are its own
    x = np.linspace(-0.9, 0.9, 50).astype(np.float32)
    y = np.zeros_like(x)
    arcsin[(1,)](x, y, 50, BLOCK=64, extern_libs={"libdevice": "/some/where/libdevice.10.bc"})
    np.testing.assert_allclose(y, np.arcsin(x.astype(np.float64)), rtol=1e-6, atol=1e-7)
    arcsin[(1,)](x, y, 50, BLOCK=64, extern_libs={})


def test_extern_libs_naming_another_library_is_refused_interpreted():
    x = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match="extern_libs: library 'ocml' is not supported"):
        arcsin[(1,)](x, x, 4, BLOCK=4, extern_libs={"libdevice": "/x.bc", "ocml": "/y.bc"})
    with pytest.raises(TypeError, match="extern_libs must be a dict"):
        arcsin[(1,)](x, x, 4, BLOCK=4, extern_libs="/x.bc")


# ------------------------------------------------------------------ torch.library.wrap_triton

WRAP_TRITON = '''
def wrap_triton(triton_kernel, /):
    # torch's check, against the installed Triton (torch's own imports keep it)
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction
    if not isinstance(triton_kernel, (JITFunction, Autotuner)):
        raise RuntimeError("wrap_triton only works on functions annotated with triton.jit or triton.autotune")
    return triton_kernel
'''

USER_LIBRARY = '''
import triton
import triton.language as tl
from torch.library import wrap_triton


@triton.jit
def add_one(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


@triton.autotune(configs=[triton.Config({"BLOCK": 16})], key=["n"])
@triton.jit
def add_two(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 2, mask=offs < n)


def run(x):
    wrap_triton(add_one)[(1,)](x, x.size, BLOCK=16)
    wrap_triton(add_two)[(1,)](x, x.size)
'''


def write_stand_in_torch(root):
    """A torch whose library.wrap_triton checks kernels against the installed Triton (a stand-in one)."""
    (root / "triton" / "runtime").mkdir(parents=True)
    (root / "triton" / "__init__.py").write_text("REAL = True\n")
    (root / "triton" / "runtime" / "__init__.py").write_text("")
    (root / "triton" / "runtime" / "autotuner.py").write_text("class Autotuner:\n    pass\n")
    (root / "triton" / "runtime" / "jit.py").write_text("class JITFunction:\n    pass\n")
    (root / "torch" / "_library").mkdir(parents=True)
    (root / "torch" / "__init__.py").write_text("from . import library\n")
    (root / "torch" / "_library" / "__init__.py").write_text("")
    (root / "torch" / "_library" / "triton.py").write_text(WRAP_TRITON)
    (root / "torch" / "library.py").write_text("from torch._library.triton import wrap_triton\n")
    (root / "userlib.py").write_text(USER_LIBRARY)


@pytest.mark.parametrize("torch_first", [False, True])
def test_wrap_triton_takes_tesseras_kernels(tmp_path, torch_first):
    import os
    import subprocess
    import sys
    import textwrap
    import pathlib
    write_stand_in_torch(tmp_path)
    python_dir = pathlib.Path(tessera.__file__).resolve().parent.parent
    code = textwrap.dedent(f"""
        import os
        os.environ["TESSERA_INTERPRET"] = "1"
        if {torch_first}:
            import torch            # before install(): install() puts the front on it
        import tessera.compat
        tessera.compat.install()
        import numpy as np
        import userlib
        x = np.arange(5, dtype=np.float32)
        userlib.run(x)
        assert (x == np.arange(5) + 3).all(), x
        import torch.library
        try:
            torch.library.wrap_triton(len)
        except RuntimeError as e:
            assert "wrap_triton only works" in str(e)
        else:
            raise AssertionError("wrap_triton took a plain function")
        tessera.compat.uninstall()
        try:
            torch.library.wrap_triton(userlib.add_one)
        except RuntimeError:
            pass
        else:
            raise AssertionError("uninstall() left the front on")
        print("ok")
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(python_dir), str(tmp_path)]))
    env.pop("TESSERA_AS_TRITON", None)
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr


# ------------------------------------------------------------------ a torch dtype as a constexpr

# A stand-in for torch.dtype (torch is not needed here): type name "dtype", no .name, str "torch.float32"
TorchDtype = type("dtype", (), {"__init__": lambda self, n: setattr(self, "n", n),
                                "__str__": lambda self: "torch." + self.n, "__module__": "torch"})


@tessera.jit(interpret=True)
def cast_out(x_ptr, y_ptr, out_dtype: tl.constexpr, BLOCK: tl.constexpr):
    # torchao passes out_dtype=torch.float32 to a constexpr its kernel does not read; here it is read too
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs).to(out_dtype).to(tl.float32) + 0.25)


def test_a_torch_dtype_constexpr_is_the_dtype_of_its_name():
    x = np.array([1.0 + 2.0 ** -12, 3.0, -2.5, 7.0], np.float32)
    y = np.zeros_like(x)
    cast_out[(1,)](x, y, TorchDtype("float32"), BLOCK=4)
    np.testing.assert_array_equal(y, x + 0.25)
    cast_out[(1,)](x, y, TorchDtype("bfloat16"), BLOCK=4)  # 1 + 2^-12 rounds to 1 in bfloat16
    np.testing.assert_array_equal(y, np.array([1.25, 3.25, -2.25, 7.25], np.float32))
    with pytest.raises(TypeError, match="has unsupported type"):
        cast_out[(1,)](x, y, TorchDtype("complex64"), BLOCK=4)
