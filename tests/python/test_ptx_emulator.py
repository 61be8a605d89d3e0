"""The PTX tessera emits, run on the CPU by tests/python/ptx_emulator.py and compared bit for bit with numpy.

First the emulator itself on answers known by hand (vector add, packing / bit-field / shift / shuffle / shared
memory / divergent-branch PTX written here), then two int4 dequantisation kernels shaped as GPTQ's act-order
dequant (flat index, g_idx gather, 1 warp, 1024 elements a program) and AWQ's (triple tl.interleave, shifts
by reshape / broadcast, all in registers): on 2026-11-28 the GPU check reported the
library versions of both different from Triton's, while their PTX, run here over the whole 4096 x 4096
problem through the library's own host function (fake driver), gives the exact fp16 results."""
import re

import numpy as np
import pytest

from conftest import run_cli
from lang_support import compile_kernel
from ptx_emulator import GlobalMemory, run_kernel

SHARED_WINDOW = 48 * 1024  # shared bytes a CTA may use without opting in


def compile_ptx(path, kernel, signature, constexprs, num_warps):
    args = ["compile", path, "--kernel", kernel, "--signature", signature, "--num-warps", str(num_warps)]
    for k, v in constexprs.items():
        args += ["--constexpr", f"{k}={v}"]
    proc = run_cli(args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


# ------------------------------------------------------------------------------------------- the emulator

def test_vector_add_is_exact_and_the_masked_tail_untouched():
    ptx = compile_ptx("kernels/vector_add.py", "add_kernel", "*fp32:16,*fp32:16,*fp32:16,i32", {"BLOCK_SIZE": 1024}, 4)
    n = 3000  # the last program's tail is masked: a store past n would leave the allocation (an error)
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    mem = GlobalMemory()
    ax, ay, ao = mem.alloc(x), mem.alloc(y), mem.alloc(np.zeros(n, np.float32))
    run_kernel(ptx, grid=(3,), block=(128,), args=[ax, ay, ao, n], memory=mem)
    np.testing.assert_array_equal(mem.read(ao, np.float32, n), x + y)


HAND_PTX = """
.version 8.0
.target sm_90a
.address_size 64
.extern .shared .align 16 .b8 global_smem[];
.visible .entry hand(.param .u64 hand_param_0, .param .u32 hand_param_1)
.maxntid 64, 1, 1
{
    .reg .pred %p<4>;
    .reg .b16 %rs<4>;
    .reg .b32 %r<40>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [hand_param_0];
    ld.param.u32 %r1, [hand_param_1];
    mov.u32 %r2, %tid.x;
    cvt.rn.f32.s32 %f1, %r2;
    add.f32 %f2, %f1, 0f3F000000;
    cvt.rn.f16x2.f32 %r3, %f1, %f2;
    mov.b32 {%rs1, %rs2}, %r3;
    cvt.u32.u16 %r4, %rs1;
    cvt.u32.u16 %r5, %rs2;
    mul.lo.s32 %r6, %r2, -7;
    bfe.s32 %r7, %r6, 4, 5;
    bfe.u32 %r8, %r6, 28, 8;
    shr.s32 %r9, %r6, %r1;
    shl.b32 %r10, %r2, %r1;
    shfl.sync.bfly.b32 %r11, %r2, 5, 31, -1;
    shl.b32 %r12, %r2, 2;
    cvt.u64.u32 %rd2, %r12;
    mov.u64 %rd3, global_smem;
    add.s64 %rd4, %rd3, %rd2;
    st.shared.u32 [%rd4], %r2;
    bar.sync 0;
    mov.u32 %r13, 63;
    sub.s32 %r14, %r13, %r2;
    shl.b32 %r15, %r14, 2;
    cvt.u64.u32 %rd5, %r15;
    add.s64 %rd6, %rd3, %rd5;
    ld.shared.u32 %r16, [%rd6];
    and.b32 %r17, %r2, 1;
    setp.eq.s32 %p1, %r17, 0;
    mov.u32 %r18, 100;
    @%p1 bra $L_even;
    add.s32 %r18, %r18, 1;
    bra $L_join;
$L_even:
    add.s32 %r18, %r18, 2;
$L_join:
    mul.wide.u32 %rd7, %r2, 32;
    add.s64 %rd7, %rd1, %rd7;
    st.global.v4.b32 [%rd7], {%r4, %r5, %r7, %r8};
    st.global.v4.b32 [%rd7+16], {%r9, %r10, %r11, %r16};
    @%p1 st.global.b32 [%rd7+28], %r18;
    ret;
}
"""


def test_hand_written_ptx_has_the_isa_meaning():
    mem = GlobalMemory()
    out = mem.alloc(np.full((64, 8), -1, np.int32))
    run_kernel(HAND_PTX, grid=(1,), block=(64,), args=[out, 40], memory=mem, shared_bytes=256)
    got = mem.read(out, np.int32, 64 * 8).reshape(64, 8)
    t = np.arange(64)
    f16 = lambda v: np.float16(v).view(np.uint16)
    # cvt.rn.f16x2.f32 d, a, b puts a in the upper half; mov.b32 {lo, hi} unpacks low first
    np.testing.assert_array_equal(got[:, 0], [f16(v + 0.5) for v in t])
    np.testing.assert_array_equal(got[:, 1], [f16(v) for v in t])
    prod = (t * -7).astype(np.int64)
    field = (prod >> 4) & 31
    np.testing.assert_array_equal(got[:, 2], np.where(field >= 16, field - 32, field))  # sign-extended 5 bits
    np.testing.assert_array_equal(got[:, 3], (prod & 0xFFFFFFFF) >> 28)  # only 4 bits exist past bit 28
    np.testing.assert_array_equal(got[:, 4], np.where(prod < 0, -1, 0))  # shr.s32 by 40: sign fill
    np.testing.assert_array_equal(got[:, 5], 0)  # shl.b32 by 40: zero
    np.testing.assert_array_equal(got[:, 6], t ^ 5)  # butterfly inside each warp
    np.testing.assert_array_equal(got[:, 7], np.where(t % 2 == 0, 102, 63 - t))  # shared reversal; the branch


def test_an_unknown_instruction_is_refused_not_skipped():
    ptx = HAND_PTX.replace("bar.sync 0;", "brev.b32 %r30, %r2;")
    mem = GlobalMemory()
    out = mem.alloc(np.zeros((64, 8), np.int32))
    with pytest.raises(NotImplementedError, match="brev"):
        run_kernel(ptx, grid=(1,), block=(64,), args=[out, 40], memory=mem, shared_bytes=256)


# ------------------------------------------------------------------------------------------- int4 dequant

def to_int32(words):
    return np.where(words < 2**31, words, words - 2**32).astype(np.int32)


@pytest.mark.parametrize("K,N,group", [(256, 256, 64), (24, 200, 8)])
def test_act_order_dequant_is_exact(K, N, group):
    ng = K // group
    constexprs = {"N": N, "NUM_GROUPS": ng, "BLOCK": 1024}
    sig = "*i32:16,*fp16:16,*i32:16,*i32:16,*fp16:16,i32:16"
    ptx = compile_kernel("int4_dequant.py", "dequant_act_order", sig, constexprs, extra=["--num-warps", "1"])
    rng = np.random.default_rng(K)
    q, z = rng.integers(0, 16, (K, N)), rng.integers(0, 16, (ng, N))
    scales = (rng.random((ng, N)) * 0.02 + 0.005).astype(np.float16)
    g_idx = (np.arange(K) // group).astype(np.int32)[rng.permutation(K)]
    g_idx[::5] -= ng  # negative group indices wrap
    qw = sum(q[i::8] << (4 * i) for i in range(8))
    qz = sum(z[:, i::8] << (4 * i) for i in range(8))
    mem = GlobalMemory()
    args = [mem.alloc(g_idx), mem.alloc(scales), mem.alloc(to_int32(qw)), mem.alloc(to_int32(qz))]
    out = mem.alloc(np.full((K, N), np.nan, np.float16))
    numels = K * N
    run_kernel(ptx, grid=(-(-numels // 1024),), block=(32,), args=args + [out, numels], memory=mem)
    g = g_idx % ng
    want = ((q - z[g]).astype(np.float32) * scales[g].astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(mem.read(out, np.float16, numels).reshape(K, N).view(np.uint16),
                                  want.view(np.uint16))


@pytest.mark.parametrize("rows,cols,group", [(64, 32, 32), (96, 40, 32)])
def test_interleaved_dequant_in_registers_is_exact(rows, cols, group):
    # (one zero / scale row a program, as AWQ: group_size a multiple of BLOCK_Y)
    constexprs = {"BLOCK_X": 32, "BLOCK_Y": 32}
    sig = "*i32:16,*fp16:16,*i32:16,i32,*fp16:16,i32,i32"
    ptx = compile_kernel("int4_dequant.py", "dequant_interleaved", sig, constexprs, extra=["--num-warps", "4"])
    # the interleaving, the zero row's copies and the shifts (a [4, 2] block reshaped, broadcast and
    # reshaped again) stay in registers, as Triton keeps them: shift amounts are constants (bfe)
    assert "ld.shared" not in ptx and "bar.sync" not in ptx
    assert re.search(r"bfe\.u32\s+%r\d+, %r\d+, \d+, 4;", ptx)
    N, ng = cols * 8, rows // group
    order = [0, 4, 1, 5, 2, 6, 3, 7]
    rng = np.random.default_rng(rows)
    q, z = rng.integers(0, 16, (rows, N)), rng.integers(0, 16, (ng, N))
    scales = (rng.random((ng, N)) * 0.02 + 0.005).astype(np.float16)
    pack = lambda t: sum(t[:, j::8] << (4 * order[j]) for j in range(8))
    mem = GlobalMemory()
    args = [mem.alloc(to_int32(pack(q))), mem.alloc(scales), mem.alloc(to_int32(pack(z))), group]
    out = mem.alloc(np.full((rows, N), np.nan, np.float16))
    grid = (-(-cols // 32), -(-rows // 32))
    run_kernel(ptx, grid=grid, block=(128,), args=args + [out, cols, rows], memory=mem, shared_bytes=SHARED_WINDOW)
    diff = (q - np.repeat(z, group, 0)).astype(np.float16).astype(np.float64)  # int32 -> fp16, as Triton
    want = (diff * np.repeat(scales, group, 0).astype(np.float64)).astype(np.float16)  # one fp16 rounding
    np.testing.assert_array_equal(mem.read(out, np.float16, rows * N).reshape(rows, N).view(np.uint16),
                                  want.view(np.uint16))


def test_lanes_that_return_early_stop_there():
    ptx = """
.version 8.0
.target sm_90a
.address_size 64
.visible .entry early(.param .u64 early_param_0)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [early_param_0];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    setp.lt.u32 %p1, %r1, 5;
    @%p1 ret;
    st.global.u32 [%rd3], %r1;
    ret;
}
"""
    mem = GlobalMemory()
    out = mem.alloc(np.full(32, -1, np.int32))
    run_kernel(ptx, grid=(1,), block=(32,), args=[out], memory=mem)
    np.testing.assert_array_equal(mem.read(out, np.int32, 32), np.where(np.arange(32) < 5, -1, np.arange(32)))


FP8_CAST_KERNEL = '''
import tessera
import tessera.language as tl


@tessera.jit
def to_fp8_kernel(X, Y, E5: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    if E5:
        tl.store(Y + offs, x.to(tl.float8e5))
    else:
        tl.store(Y + offs, x.to(tl.float8e4nv))
'''


@pytest.mark.parametrize("kind", ["e4m3", "e5m2"])
def test_f32_to_fp8_pairs_keep_each_element_in_its_byte(tmp_path, kind):
    """sm_90 converts two registers per cvt.rn.satfinite.{e4m3,e5m2}x2.f32 (the first source
    lands in the high byte): every value lands in its own element, rounded to nearest even and
    saturated, as ml_dtypes rounds it (ties, subnormals, overflow, NaN, -0 included)."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    path = tmp_path / "to_fp8.py"
    path.write_text(FP8_CAST_KERNEL)
    ty = "fp8e4nv" if kind == "e4m3" else "fp8e5"
    proc = run_cli(["compile", str(path), "--kernel", "to_fp8_kernel", "--signature", f"*fp32:16,*{ty}:16",
                    "--arch", "sm_90a", "--num-warps", "4", "--constexpr", f"E5={int(kind == 'e5m2')}",
                    "--constexpr", "BLOCK=1024"])
    assert proc.returncode == 0, proc.stderr
    ptx = proc.stdout
    assert ptx.count(f"cvt.rn.satfinite.{kind}x2.f32") == 1024 // 128 // 2  # 8 elements a thread: 4 cvts
    dtype, limit = (ml_dtypes.float8_e4m3fn, 448.0) if kind == "e4m3" else (ml_dtypes.float8_e5m2, 57344.0)
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(2048) * np.exp2(rng.integers(-20, 20, 2048))).astype(np.float32)
    x[:8] = [0.0, -0.0, 1e9, -1e9, np.nan, 1.0625, 1.1875, 2.0 ** -12]
    mem = GlobalMemory()
    ax, ay = mem.alloc(x), mem.alloc(np.zeros(2048, np.uint8))
    run_kernel(ptx, grid=(2,), block=(128,), args=[ax, ay], memory=mem)
    got = mem.read(ay, np.uint8, 2048)
    want = np.where(np.isnan(x), x, np.clip(x, -limit, limit)).astype(dtype).view(np.uint8)
    np.testing.assert_array_equal(got, want)
