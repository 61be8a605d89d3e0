"""Tuple kernel arguments, as Triton 3.3+ flattens them (its launcher and code generator): a tuple's
tensors, ints, floats and bools are runtime arguments of their own (specialised as any argument: pointer
alignment, ints equal to 1 or divisible by 16), its None and tl.constexpr leaves are constexprs, tuples nest,
and a NamedTuple keeps its field names (and may hold @jit functions). Inside the kernel the argument is a
tuple: indexed with constexprs, len(), unpacked, passed to and returned from @jit helpers, carried by loops.
Each kernel runs in the interpreter against numpy, and its specialisation is compiled to PTX for ptxas."""
from typing import NamedTuple

import numpy as np
import pytest

import tessera
import tessera.language as tl
from lang_support import assemble

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")


def ptx_of(handle, tmp_path):
    """The launch's specialisation compiled for sm_90a, checked by ptxas."""
    ptx = handle.asm["ptx"]
    assemble(ptx, "sm_90a", tmp_path)
    return ptx


@tessera.jit
def _plus_one(values):
    return tl.tuple([v + 1 for v in values])


@tessera.jit
def _store_each(ptrs, values):
    for i in tl.static_range(len(values)):
        tl.store(ptrs[i], values[i])


@tessera.jit(interpret=True)
def index_kernel(_0, ptrs, _1: tl.constexpr, values, _2):
    _store_each(ptrs, _plus_one(values))


@pytest.mark.parametrize("size", [0, 1, 3, 5])
def test_tuples_of_pointers_and_ints_indexed_in_a_static_range(size, tmp_path):
    values = tuple(range(1, size + 1))
    outs = tuple(np.zeros(1, np.float32) for _ in values)
    handle = index_kernel[(1,)](0, outs, 0, values, 0)
    assert [o[0] for o in outs] == [v + 1 for v in values]
    ptx = ptx_of(handle, tmp_path)
    # the kernel's parameters: _0, the pointers, the ints, _2 (each int an argument, not folded; one equal
    # to 1 keeps its slot, as an int argument equal to 1 does, and is the constant 1 in the kernel)
    assert ptx.count(".param .u64") == size
    assert ptx.count(".param .u32") == 2 + size


class Tensor(NamedTuple):
    ptr: any
    shape: tuple
    stride: tuple


class Function(NamedTuple):
    fn: tl.constexpr
    captured: tuple


@tessera.jit
def _make_tensor(shape, ptr, stride):
    return Tensor(shape=shape, ptr=ptr, stride=stride)


@tessera.jit
def _mask_of(t, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    return (tl.arange(0, BLOCK_M)[:, None] < t.shape[0]) & (tl.arange(0, BLOCK_N)[None, :] < t.shape[1])


@tessera.jit
def _scaled(x, scale_ptr):
    return x * tl.load(scale_ptr)


@tessera.jit(interpret=True)
def namedtuple_kernel(closure, X, Y, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    X = _make_tensor(X.shape, X.ptr, X.stride)
    offs_m = tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    x = tl.load(X.ptr + offs_m[:, None] * X.stride[0] + offs_n[None, :] * X.stride[1], mask=_mask_of(X, BLOCK_M, BLOCK_N))
    y = closure.fn(x, *closure.captured)
    tl.store(Y.ptr + offs_m[:, None] * Y.stride[0] + offs_n[None, :] * Y.stride[1], y, mask=_mask_of(Y, BLOCK_M, BLOCK_N))


def test_namedtuples_with_fields_built_in_the_kernel_and_a_jit_function_field(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((12, 10)).astype(np.float32)
    y = np.zeros((6, 7), np.float32)
    a = np.array([5.25], np.float32)
    stride = lambda t: tuple(s // t.itemsize for s in t.strides)
    handle = namedtuple_kernel[(1,)](Function(_scaled, (a,)), Tensor(x, x.shape, stride(x)),
                                     Tensor(y, y.shape, stride(y)), 16, 16)
    np.testing.assert_allclose(y, (x[:6, :7].astype(np.float64) * 5.25), rtol=1e-6)
    ptx_of(handle, tmp_path)


@tessera.jit
def _sum_and_product(a, b):
    return a + b, a * b


@tessera.jit(interpret=True)
def nested_kernel(out_ptr, n, pair, nested, flags):
    tl.static_assert(nested[1][1] is None)
    tl.static_assert(nested[1][2] == 4)  # tl.constexpr(4): a constexpr leaf
    p, q = pair  # unpacking
    s, m = _sum_and_product(p, q)
    tl.store(out_ptr + 0, s)
    tl.store(out_ptr + 1, m)
    tl.store(out_ptr + 2, tl.load(nested[0]) + nested[1][0] * nested[1][2])
    # a tuple carried by a loop whose bound is a tuple leaf
    acc = (tl.load(nested[0]), 1.0)
    for i in range(0, n[0]):
        acc = (acc[0] + pair[0], acc[1] * pair[1])
    tl.store(out_ptr + 3, acc[0])
    tl.store(out_ptr + 4, acc[1])
    if flags[0]:
        tl.store(out_ptr + 5, flags[1])
    tl.store(out_ptr + 6, len(nested) + len(nested[1]) * 10)


def test_nested_tuples_unpacking_helpers_loops_floats_and_bools(tmp_path):
    out = np.zeros(7, np.float32)
    base = np.array([2.5], np.float32)
    handle = nested_kernel[(1,)](out, (3,), (1.5, 2.0), (base, (7, None, tl.constexpr(4))), (True, 0.25))
    want = [3.5, 3.0, 2.5 + 7 * 4, 2.5 + 3 * 1.5, 2.0 ** 3, 0.25, 2 + 3 * 10]
    np.testing.assert_allclose(out, want, rtol=1e-6)
    out[:] = 0
    nested_kernel[(1,)](out, (2,), (0.5, 3.0), (base, (1, None, tl.constexpr(4))), (False, 0.25))
    np.testing.assert_allclose(out, [3.5, 1.5, 2.5 + 4, 2.5 + 1.0, 9.0, 0.0, 32], rtol=1e-6)
    ptx_of(handle, tmp_path)


@tessera.jit
def strided_tuple_kernel(X, OUT, strides, shape, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < shape[1]
    x = tl.load(X + tl.program_id(0) * strides[0] + offs * strides[1], mask=m)
    tl.store(OUT + tl.program_id(0) * shape[1] + offs, x, mask=m)


class FakeArray:
    def __init__(self, address=4096):
        self.__cuda_array_interface__ = {"data": (address, False), "typestr": "<f4", "shape": (16,), "version": 2}


def test_int_leaves_are_specialised_as_int_arguments_not_by_value():
    x = FakeArray()
    signature, constexprs, _, _ = strided_tuple_kernel.specialization(x, x, (64, 1), (3, 6), BLOCK=8)
    assert signature == "*fp32:16,*fp32:16,i32:16,i32:1,i32,i32"
    assert constexprs == {"strides": (..., ...), "shape": (..., ...), "BLOCK": 8}  # ...: passed at run time
    first = strided_tuple_kernel.warmup(x, x, (64, 1), (3, 6), BLOCK=8, grid=(1,))
    # other values with the same hints: the same compiled kernel
    assert strided_tuple_kernel.warmup(x, x, (4096, 1), (5, 7), BLOCK=8, grid=(1,)) is first
    assert strided_tuple_kernel.warmup(x, x, (64, 2), (3, 6), BLOCK=8, grid=(1,)) is not first
    assert strided_tuple_kernel.specialization(x, x, (2 ** 40, 1), (3, 6), BLOCK=8)[0] == \
        "*fp32:16,*fp32:16,i64:16,i32:1,i32,i32"


@tessera.jit
def constexpr_tuple_kernel(X, strides: tl.constexpr, BLOCK: tl.constexpr):
    tl.store(X + tl.arange(0, BLOCK) * strides[1], 1.0)


def test_a_tuple_for_a_constexpr_parameter_is_still_a_constexpr_tuple():
    x = FakeArray()
    signature, constexprs, _, _ = constexpr_tuple_kernel.specialization(x, (64, 1), 8)
    assert signature == "*fp32:16" and constexprs == {"strides": (64, 1), "BLOCK": 8}


def test_a_tuple_leaf_of_an_unsupported_type_names_the_argument_and_its_position():
    out = np.zeros(4, np.float32)
    base = np.zeros(1, np.float32)
    with pytest.raises(TypeError, match=r"nested_kernel\(\): argument 'nested\[1\]\[0\]' has unsupported type 'dict'"):
        nested_kernel[(1,)](out, (3,), (1.5, 2.0), (base, ({}, None, tl.constexpr(4))), (True, 0.25))
    x = FakeArray()
    with pytest.raises(TypeError, match=r"argument 'strides\[0\]' has unsupported type 'object'"):
        strided_tuple_kernel.specialization(x, x, (object(), 1), (3, 6), BLOCK=8)


def test_a_compiled_kernel_takes_its_tuple_arguments_again():
    # a launch of a CompiledKernel checks the tuple's shape against what it was compiled for
    x = FakeArray()
    compiled = strided_tuple_kernel.warmup(x, x, (64, 1), (3, 6), BLOCK=8, grid=(1,))
    with pytest.raises(TypeError, match=r"argument 'strides' must be a tuple of 2 values: the kernel was compiled "
                                        r"for \(<runtime>, <runtime>\)"):
        compiled[(1,)](x, x, (64,), (3, 6), 8)


@tessera.jit
def method_calls_kernel(X, stride, n):
    x = tl.load(X + stride.to(tl.int64) * tl.arange(0, 16))
    tl.store(X + tl.arange(0, 16), x.sum(0) + n)


def test_only_calls_of_a_tuple_field_take_the_launch_path_that_composes_functions():
    # closure.fn(...) may be a @jit function in a tuple argument: launches compose it (a Python step);
    # methods of tensors (stride.to, x.sum) are not, and keep the launch path without Python
    assert namedtuple_kernel._function_params() == {"closure"}
    assert not method_calls_kernel._function_params()


def test_a_builtin_function_defined_beside_the_kernel_and_tuple_arguments_to_a_tensor_descriptor(tmp_path):
    # Triton's test_passing_tuple_to_make_tensor_descriptor: a @builtin helper (compiled as a @jit helper)
    # sees that the stride equal to 1 is a constexpr, before and after make_tensor_descriptor reads it
    builtin = tl.core.builtin

    @builtin
    def is_constexpr(v, _semantic=None):
        return isinstance(v, tl.constexpr)

    @tessera.jit(interpret=True)
    def m_to_the_n(X_base, shape, strides, m_n, BLOCK_DIM: tl.constexpr):
        tl.static_assert(is_constexpr(strides[1]))
        tl.static_assert(not is_constexpr(strides[0]))
        X = tl.make_tensor_descriptor(X_base, shape=shape, strides=strides, block_shape=[BLOCK_DIM, BLOCK_DIM])
        tl.static_assert(is_constexpr(strides[1]))
        data = X.load([0, 0])
        for i in tl.range(0, m_n[1]):
            data = m_n[0] * data
        X.store([0, 0], data)

    x = np.arange(16, dtype=np.int64).reshape(4, 4)
    want = x * 8
    handle = m_to_the_n[(1,)](x, x.shape, (4, 1), (2, 3), 4)
    np.testing.assert_array_equal(x, want)
    ptx_of(handle, tmp_path)


@tessera.jit
def signature_kernel(ptrs, n, pair):
    a, b, four = pair
    tl.static_assert(ptrs[1][1] is None and four == 4)
    tl.store(ptrs[0], n + a)
    tl.store(ptrs[1][0], b)


def test_a_tuple_signature_entry_is_spelled_as_triton_spells_it(tmp_path):
    # tessera.compile and the CLI: "(T, ...)" entries, a type a runtime leaf, other text a constexpr
    k = tessera.compile(signature_kernel, signature="(*fp32:16,(*i32,None)),i32,(fp32,i32:16,4)", target="sm_90a")
    assemble(k.asm["ptx"], "sm_90a", tmp_path)
    assert k.signature == "*fp32:16,*i32,i32,fp32,i32:16"  # the kernel's parameters: the runtime leaves
    assert k.asm["ptx"].count(".param .u64") == 2 and k.asm["ptx"].count(".param .u32") == 2
    assert k.asm["ptx"].count(".param .f32") == 1


def test_the_cli_compiles_a_tuple_signature(tmp_path):
    from conftest import run_cli
    src = tmp_path / "k.py"
    src.write_text("import tessera\nimport tessera.language as tl\n\n"
                   "@tessera.jit\ndef k(ptrs, n):\n    tl.store(ptrs[1][0], n + tl.load(ptrs[0]))\n")
    proc = run_cli(["compile", str(src), "--kernel", "k", "--signature", "(*i32:16,(*i32,None)),i32"])
    assert proc.returncode == 0, proc.stderr
    assemble(proc.stdout, "sm_90a", tmp_path)
    proc = run_cli(["compile", str(src), "--kernel", "k", "--signature", "(*i32,(*i32,None)),i32,(i32,)"])
    assert proc.returncode != 0
    assert "signature entry 3 is a tuple, but kernel 'k' has 2 non-constexpr parameters" in proc.stderr
