"""Constructs found in the fourth real-world sweep (flash-attention's and Mamba's Triton ops, GPTQ/AWQ-style
quantised matmuls, gemlite), each in our own minimal kernel: interpreted against numpy in float64 and
compiled for sm_90a."""
import subprocess

import numpy as np
import pytest

from conftest import PTXAS

import tessera
import tessera.language as tl

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")


def _assemble(k, tmp_path):
    (tmp_path / "k.ptx").write_text(k.asm["ptx"])
    subprocess.run([str(PTXAS), "-arch=sm_90a", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")], check=True)


# flash-attention's rotary kernel: an early `return` under a runtime condition, after which a pointer
# parameter becomes a block of pointers. The returning path's names are dead, so they merge nothing.
@tessera.jit(interpret=True)
def early_return_then_block_pointer(X, OUT, n_rows, n_cols, stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    if pid * BLOCK_M >= n_rows:
        return
    rm = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    X = X + (rm[:, None] * stride + rn[None, :])
    OUT = OUT + (rm[:, None] * stride + rn[None, :])
    mask = (rm[:, None] < n_rows) & (rn[None, :] < n_cols)
    tl.store(OUT, tl.load(X, mask=mask, other=0.0) * 2.0, mask=mask)


@tessera.jit
def _helper_early_return(P, n, BLOCK: tl.constexpr):
    if n <= 0:
        return 0.0
    P = P + tl.arange(0, BLOCK)
    return tl.sum(tl.load(P, mask=tl.arange(0, BLOCK) < n, other=0.0))


@tessera.jit(interpret=True)
def helper_early_return_kernel(X, OUT, n, BLOCK: tl.constexpr):
    tl.store(OUT + tl.program_id(0), _helper_early_return(X, n - tl.program_id(0), BLOCK))


def test_early_return_before_a_pointer_becomes_a_block():
    x = np.arange(7 * 5, dtype=np.float32).reshape(7, 5)
    out = np.full_like(x, -1.0)
    # 4 programs of 2 rows cover 8 rows: the last one returns early (rows 8.. do not exist)
    early_return_then_block_pointer[(5,)](x, out, 7, 5, 5, BLOCK_M=2, BLOCK_N=8)
    np.testing.assert_array_equal(out, x.astype(np.float64) * 2)


def test_early_return_in_a_helper_whose_pointer_becomes_a_block():
    x = np.arange(1, 9, dtype=np.float32)
    out = np.zeros(10, np.float32)
    helper_early_return_kernel[(10,)](x, out, 8, BLOCK=8)
    want = [x[: 8 - p].astype(np.float64).sum() if p < 8 else 0.0 for p in range(10)]
    np.testing.assert_array_equal(out, want)


def test_early_return_before_a_pointer_becomes_a_block_compiles(tmp_path):
    k = tessera.compile(early_return_then_block_pointer, signature="*bf16,*bf16,i32,i32,i32",
                        constexprs={"BLOCK_M": 8, "BLOCK_N": 64}, target="sm_90a")
    _assemble(k, tmp_path)


# Mamba-3's kernels take tuples of strides (`q.stride()` passed as one argument, indexed `stride_q[0]`):
# a tuple argument is flattened into its leaves, each an int argument of its own, as Triton passes them.
@tessera.jit(interpret=True)
def tuple_strides_kernel(X, OUT, stride_x, stride_out, shape, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < shape[1]
    x = tl.load(X + pid * stride_x[0] + offs * stride_x[1], mask=m)
    tl.store(OUT + pid * stride_out[0] + offs * stride_out[1], x * shape[0], mask=m)


def test_a_tuple_argument_of_strides():
    x = np.arange(4 * 6, dtype=np.float32).reshape(4, 6)
    xt = x.T.copy().T  # column-major: strides (1, 4)
    out = np.zeros((4, 6), np.float32)
    st = lambda a: tuple(s // a.itemsize for s in a.strides)
    tuple_strides_kernel[(4,)](xt, out, st(xt), st(out), (3, 6), BLOCK=8)
    np.testing.assert_array_equal(out, x.astype(np.float64) * 3)
    out2 = np.zeros((4, 6), np.float32)
    tuple_strides_kernel[(4,)](x, out2, st(x), st(out2), (2, 6), BLOCK=8)  # other values, same kernel
    np.testing.assert_array_equal(out2, x.astype(np.float64) * 2)


def test_a_tuple_argument_holding_a_value_of_no_argument_type_is_refused_naming_its_position():
    x = np.zeros(8, np.float32)
    with pytest.raises(TypeError, match=r"argument 'stride_x\[1\]' has unsupported type 'dict'"):
        tuple_strides_kernel[(1,)](x, x, (1, {}), (8, 1), (1, 8), BLOCK=8)


def test_a_tuple_argument_compiles_as_a_constexpr(tmp_path):
    k = tessera.compile(tuple_strides_kernel, signature="*bf16,*bf16",
                        constexprs={"stride_x": (4096, 1), "stride_out": (64, 1), "shape": (2, 64), "BLOCK": 64},
                        target="sm_90a")
    _assemble(k, tmp_path)


# triton_kernels guards inline PTX with `if tl.target_info.is_cuda():` (Triton's constexpr functions on the
# compile target). Compiled for sm_90a it is True; the interpreter has no CUDA target (False, as Triton's
# target_info without a driver), so the portable branch runs there.
@tessera.jit(interpret=True)
def target_info_kernel(X, OUT, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    if tl.target_info.is_cuda():
        y = tl.inline_asm_elementwise("ex2.approx.ftz.f32 $0, $1;", "=r, r", [x], dtype=tl.float32, is_pure=True,
                                      pack=1)
    else:
        y = tl.exp2(x)
    if tl.target_info.cuda_capability_geq(9, 0):
        y = y + 1.0
    if tl.target_info.cuda_capability_geq(10):
        y = y + 100.0
    if tl.target_info.is_hip():
        y = y + 1000.0
    tl.store(OUT + offs, y)


def test_target_info_in_the_interpreter_is_no_cuda_target():
    x = np.linspace(-2, 2, 16).astype(np.float32)
    out = np.zeros_like(x)
    target_info_kernel[(1,)](x, out, BLOCK=16)
    np.testing.assert_allclose(out, np.exp2(x.astype(np.float64)), rtol=1e-6)


def test_target_info_compiled_for_sm_90a(tmp_path):
    k = tessera.compile(target_info_kernel, signature="*fp32,*fp32", constexprs={"BLOCK": 256}, target="sm_90a")
    ptx = k.asm["ptx"]
    assert "ex2.approx.ftz.f32" in ptx            # is_cuda(): the inline asm branch
    assert "1.0e+00" in ptx or "0f3F800000" in ptx  # cuda_capability_geq(9, 0): + 1.0
    assert "0f42C80000" not in ptx                 # not sm_100: no + 100.0
    assert "0f447A0000" not in ptx                 # not HIP: no + 1000.0
    _assemble(k, tmp_path)


def test_target_info_unknown_function_is_a_located_error():
    @tessera.jit(interpret=True)
    def k(X):
        if tl.target_info.is_hip_gfx12():
            tl.store(X, 1.0)
    with pytest.raises(tessera.CompilationError, match=r"tl.target_info.is_hip_gfx12 is not supported"):
        k[(1,)](np.zeros(1, np.float32))


def test_triton_language_target_info_module_on_the_host():
    from tessera.compat import tessera_module_name
    import tessera.language.target_info as ti
    assert tessera_module_name("triton.language.target_info") == "tessera.language.target_info"
    assert tl.target_info is ti
    assert ti.is_hip() is False and ti.is_hip_cdna3() is False
    # here the answer depends on the machine: a bool, and is_cuda() implies a CUDA target
    assert ti.is_cuda() in (True, False)
    assert ti.cuda_capability_geq(1) == ti.is_cuda()


# `from triton.language.target_info import is_cuda` in a kernel module, then is_cuda() in the kernel
TARGET_INFO_IMPORT = '''
import tessera
import tessera.language as tl
from tessera.language.target_info import is_cuda, cuda_capability_geq


@tessera.jit
def k(X, OUT, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    if is_cuda() and cuda_capability_geq(9):
        x = x * 2.0
    tl.store(OUT + offs, x)
'''


def test_target_info_functions_imported_by_name(tmp_path):
    path = tmp_path / "ti_kernel.py"
    path.write_text(TARGET_INFO_IMPORT)
    k = tessera.compile(str(path), kernel="k", signature="*fp32,*fp32", constexprs={"BLOCK": 128}, target="sm_90a")
    assert "mul.f32" in k.asm["ptx"] or "add.f32" in k.asm["ptx"]
    k80 = tessera.compile(str(path), kernel="k", signature="*fp32,*fp32", constexprs={"BLOCK": 128}, target="sm_80")
    assert "mul.f32" not in k80.asm["ptx"] and "add.f32" not in k80.asm["ptx"]


# triton_kernels' topk: f-strings of constexprs (`tl.dtype(f"uint{nbits}")`, Triton's visit_JoinedStr) and
# tl.topk / tl.bitonic_merge (Triton's standard.py bitonic algorithms).
@tessera.jit(interpret=True)
def fstring_kernel(X, OUT, BLOCK: tl.constexpr):
    nbits: tl.constexpr = X.dtype.element_ty.primitive_bitwidth
    utype: tl.constexpr = tl.dtype(f"uint{nbits}")
    name: tl.constexpr = f"{X.dtype.element_ty}-{BLOCK!r}-{{}}-{'s'}"
    tl.static_assert(name == "fp32-16-{}-s", "f-string formatting")
    x = tl.load(X + tl.arange(0, BLOCK))
    tl.store(OUT + tl.arange(0, BLOCK), x.to(utype, bitcast=True))


def test_fstring_of_constexprs():
    x = np.linspace(-3, 3, 16).astype(np.float32)
    out = np.zeros(16, np.uint32)
    fstring_kernel[(1,)](x, out, BLOCK=16)
    np.testing.assert_array_equal(out, x.view(np.uint32))


def test_fstring_of_a_runtime_value_is_a_located_error():
    @tessera.jit(interpret=True)
    def k(X, n):
        tl.static_print(f"n is {n}")
    with pytest.raises(tessera.CompilationError, match=r"Cannot evaluate f-string containing non-constexpr"):
        k[(1,)](np.zeros(1, np.float32), 5)


@tessera.jit(interpret=True)
def topk_kernel(X, V, M, K: tl.constexpr, N: tl.constexpr, ROWS: tl.constexpr):
    r = tl.arange(0, ROWS)
    x = tl.load(X + r[:, None] * N + tl.arange(0, N)[None, :])
    tl.store(V + r[:, None] * K + tl.arange(0, K)[None, :], tl.topk(x, K, dim=1))
    tl.store(M + r[:, None] * N + tl.arange(0, N)[None, :], tl.bitonic_merge(x))


def _bitonic_merge_reference(x):
    """Triton's merge network on the last axis (ascending): half-cleaners of size n, n/2, ..., 2."""
    x = x.copy()
    n = x.shape[-1]
    size = n
    while size >= 2:
        half = size // 2
        for start in range(0, n, size):
            a = x[..., start:start + half].copy()
            b = x[..., start + half:start + size].copy()
            x[..., start:start + half] = np.minimum(a, b)
            x[..., start + half:start + size] = np.maximum(a, b)
        size = half
    return x


def test_topk_and_bitonic_merge():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 32)).astype(np.float32)
    v = np.zeros((4, 8), np.float32)
    m = np.zeros((4, 32), np.float32)
    topk_kernel[(1,)](x, v, m, K=8, N=32, ROWS=4)
    np.testing.assert_array_equal(v, -np.sort(-x, axis=1)[:, :8])   # the k largest, descending
    np.testing.assert_array_equal(m, _bitonic_merge_reference(x))  # any input: Triton's network
    bitonic = np.concatenate([np.sort(x[:, :16], 1), -np.sort(-x[:, 16:], 1)], 1)
    topk_kernel[(1,)](bitonic, v, m, K=8, N=32, ROWS=4)
    np.testing.assert_array_equal(m, np.sort(bitonic, 1))          # a bitonic input comes out sorted


def test_topk_compiles(tmp_path):
    k = tessera.compile(topk_kernel, signature="*bf16,*bf16,*bf16", constexprs={"K": 4, "N": 128, "ROWS": 64},
                        target="sm_90a", num_warps=4)
    _assemble(k, tmp_path)
