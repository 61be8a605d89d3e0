// The NVRTC back-end's CUDA C++ printer on hand-written LLVM modules (the
// form KernelLowering builds), and NVRTC's error report. Each printed kernel
// is also compiled by NVRTC when the library loads (the Python tests require
// it; here a machine without it only skips that part).
#include "compiler/codegen/Codegen.h"
#include "compiler/codegen/Nvrtc.h"

#include <gtest/gtest.h>

#include <string>

using tessera::codegen::cudaFromLLVMAssembly;

namespace {

const char *kHeader = "target triple = \"nvptx64-nvidia-cuda\"\n"
                      "target datalayout = \"e-i64:64-i128:128-v16:16-v32:32-n16:32:64\"\n";

std::string print(const std::string &body, const std::string &kernel = "k") {
  return cudaFromLLVMAssembly(std::string(kHeader) + body, kernel);
}

// NVRTC accepts the source and the PTX has the kernel (skipped without NVRTC).
void expectCompiles(const std::string &cuda, const std::string &kernel = "k") {
  if (!tessera::codegen::nvrtcStatus().available) return;
  std::string ptx;
  ASSERT_NO_THROW(ptx = tessera::codegen::nvrtcCompileToPtx(cuda, kernel + ".cu", "sm_80")) << cuda;
  EXPECT_NE(ptx.find(".entry " + kernel), std::string::npos) << ptx;
}

bool contains(const std::string &text, const std::string &piece) { return text.find(piece) != std::string::npos; }

std::string errorOf(const std::string &body) {
  try {
    print(body);
  } catch (const std::runtime_error &e) {
    return e.what();
  }
  return "(no error)";
}

TEST(CudaEmitter, KernelSignatureLaunchBoundsAndAlignment) {
  std::string cuda = print(R"(
define ptx_kernel void @k(ptr addrspace(1) align 16 %x_ptr, i32 %n, i1 %flag, half %h) {
entry:
  ret void
}
!nvvm.annotations = !{!0, !1}
!0 = !{ptr @k, !"kernel", i32 1}
!1 = !{ptr @k, !"maxntidx", i32 256}
)");
  EXPECT_TRUE(contains(cuda, "extern \"C\" __global__ void __launch_bounds__(256) k(unsigned char *x_ptr, "
                             "unsigned int n, bool flag, tsr_f16 h)"))
      << cuda;
  EXPECT_TRUE(contains(cuda, "x_ptr = (unsigned char *)__builtin_assume_aligned(x_ptr, 16);")) << cuda;
  expectCompiles(cuda);
}

TEST(CudaEmitter, PhisSwappingOnABackEdgeReadTheOldValues) {
  std::string cuda = print(R"(
define ptx_kernel void @k(ptr addrspace(1) %out, i32 %n) {
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %i.next, %loop ]
  %a = phi float [ 1.0, %entry ], [ %b, %loop ]
  %b = phi float [ 2.0, %entry ], [ %a, %loop ]
  %i.next = add i32 %i, 1
  %done = icmp sge i32 %i.next, %n
  br i1 %done, label %exit, label %loop
exit:
  store float %a, ptr addrspace(1) %out, align 4
  ret void
}
)");
  // Each phi has an `_in` copy assigned on every edge and read at the block's start.
  EXPECT_TRUE(contains(cuda, "a_in = 1.0f;")) << cuda;
  EXPECT_TRUE(contains(cuda, "a_in = b;")) << cuda;
  EXPECT_TRUE(contains(cuda, "b_in = a;")) << cuda;
  EXPECT_TRUE(contains(cuda, "loop:\n  i = i_in;\n  a = a_in;\n  b = b_in;")) << cuda;
  EXPECT_TRUE(contains(cuda, "done = (int)i_next >= (int)n;")) << cuda;
  EXPECT_TRUE(contains(cuda, "*(unsigned int *)out = __float_as_uint(a);")) << cuda;
  expectCompiles(cuda);
}

TEST(CudaEmitter, IntegerSignednessAndNarrowTypes) {
  std::string cuda = print(R"(
define ptx_kernel void @k(ptr addrspace(1) %out, i32 %x, i32 %y, i8 %c, i16 %s) {
entry:
  %q = sdiv i32 %x, %y
  %r = udiv i32 %x, %y
  %sh = ashr i8 %c, 1
  %m = mul i16 %s, %s
  %w = sext i16 %m to i64
  %z = zext i8 %sh to i32
  %sum = add i32 %q, %r
  %sum2 = add i32 %sum, %z
  %t = trunc i64 %w to i32
  %sum3 = add i32 %sum2, %t
  %f = sitofp i32 %sum3 to float
  %g = uitofp i32 %sum3 to double
  %gf = fptrunc double %g to float
  %h = fadd float %f, %gf
  store float %h, ptr addrspace(1) %out, align 4
  ret void
}
)");
  EXPECT_TRUE(contains(cuda, "q = (unsigned int)((int)x / (int)y);")) << cuda;
  EXPECT_TRUE(contains(cuda, "r = x / y;")) << cuda;
  EXPECT_TRUE(contains(cuda, "sh = (unsigned char)((signed char)c >> (unsigned char)1);")) << cuda;
  EXPECT_TRUE(contains(cuda, "m = (unsigned short)((unsigned int)s * (unsigned int)s);")) << cuda;
  EXPECT_TRUE(contains(cuda, "w = (unsigned long long)(long long)(short)m;")) << cuda;
  EXPECT_TRUE(contains(cuda, "f = (float)(int)sum3;")) << cuda;
  expectCompiles(cuda);
}

TEST(CudaEmitter, HalfArithmeticRunsInF32AndRoundsOnce) {
  std::string cuda = print(R"(
define ptx_kernel void @k(ptr addrspace(1) %out, half %a, bfloat %b) {
entry:
  %s = fadd half %a, %a
  %n = fneg half %s
  %c = fcmp olt half %n, %a
  %e = fpext bfloat %b to float
  %t = fptrunc float %e to bfloat
  %sel = select i1 %c, half %s, half %n
  store half %sel, ptr addrspace(1) %out, align 2
  %p = getelementptr i8, ptr addrspace(1) %out, i64 2
  store bfloat %t, ptr addrspace(1) %p, align 2
  ret void
}
)");
  EXPECT_TRUE(contains(cuda, "s = tsr_f32_to_f16(tsr_f16_to_f32(a) + tsr_f16_to_f32(a));")) << cuda;
  EXPECT_TRUE(contains(cuda, "n = (tsr_f16)(s ^ 0x8000);")) << cuda;
  EXPECT_TRUE(contains(cuda, "c = tsr_f16_to_f32(n) < tsr_f16_to_f32(a);")) << cuda;
  EXPECT_TRUE(contains(cuda, "e = tsr_bf16_to_f32(b);")) << cuda;
  EXPECT_TRUE(contains(cuda, "p = out + 2;")) << cuda;
  expectCompiles(cuda);
}

TEST(CudaEmitter, InlineAsmTiedOperandsPredicatesAndPercentSigns) {
  std::string cuda = print(R"(
define ptx_kernel void @k(ptr addrspace(1) %out, float %x, float %y, i1 %p) {
entry:
  %r = call { float, float } asm "add.f32 $0, $2, $3;\0A\09@$4 mov.f32 $1, 0f3F800000;\0A\09mov.u32 %tid.x, %tid.x;", "=f,=f,0,f,b"(float %x, float %y, i1 %p)
  %r0 = extractvalue { float, float } %r, 0
  %r1 = extractvalue { float, float } %r, 1
  %s = fadd float %r0, %r1
  call void asm sideeffect "st.global.f32 [$0], $1;", "l,f,~{memory}"(ptr addrspace(1) %out, float %s)
  ret void
}
)");
  // $2 is tied to output 0: that output becomes "+f" and starts as x; $3 is the first free input (%2).
  EXPECT_TRUE(contains(cuda, "r_0 = x;")) << cuda;
  EXPECT_TRUE(contains(cuda, "add.f32 %0, %0, %2;")) << cuda;
  EXPECT_TRUE(contains(cuda, "\"+f\"(r_0), \"=f\"(r_1) : \"f\"(y), \"r\"((unsigned int)p)")) << cuda;
  EXPECT_TRUE(contains(cuda, "setp.ne.b32 tsr_p0, %3, 0;")) << cuda;
  EXPECT_TRUE(contains(cuda, "@tsr_p0 mov.f32 %1")) << cuda;
  EXPECT_TRUE(contains(cuda, "%%tid.x")) << cuda;
  EXPECT_TRUE(contains(cuda, "s = r_0 + r_1;")) << cuda;
  EXPECT_TRUE(contains(cuda, "asm volatile(\"st.global.f32 [%0], %1;\" :  : \"l\"((unsigned long long)out), "
                             "\"f\"(s) : \"memory\");"))
      << cuda;
  EXPECT_FALSE(contains(cuda, "asm volatile(\"add.f32")) << "pure asm may be moved: " << cuda;
}

TEST(CudaEmitter, SharedMemoryVectorsAndIntrinsics) {
  std::string cuda = print(R"(
@global_smem = external addrspace(3) global [0 x i8], align 16

define ptx_kernel void @k(ptr addrspace(1) align 16 %x) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %v = load <4 x i32>, ptr addrspace(1) %x, align 16
  %e = extractelement <4 x i32> %v, i64 2
  %w = insertelement <4 x i32> %v, i32 %tid, i64 0
  %fv = bitcast <4 x i32> %w to <4 x float>
  %f = extractelement <4 x float> %fv, i64 1
  %sh = call float @llvm.nvvm.shfl.sync.bfly.f32(i32 -1, float %f, i32 16, i32 31)
  %slot = getelementptr float, ptr addrspace(3) @global_smem, i32 %tid
  store float %sh, ptr addrspace(3) %slot, align 4
  call void @llvm.nvvm.barrier0()
  %addr = ptrtoint ptr addrspace(3) %slot to i64
  %m = call float @llvm.maxnum.f32(float %sh, float 0.0)
  %ex = call float @llvm.nvvm.ex2.approx.f(float %m)
  %ez = call float @llvm.nvvm.ex2.approx.ftz.f(float %m)
  %bp = call <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float %ez, float %ex)
  %hp = call <2 x half> @llvm.nvvm.ff2f16x2.rn(float %ez, float %ex)
  %bpo = getelementptr i8, ptr addrspace(3) @global_smem, i32 64
  store <2 x bfloat> %bp, ptr addrspace(3) %bpo, align 4
  %hpo = getelementptr i8, ptr addrspace(3) @global_smem, i32 68
  store <2 x half> %hp, ptr addrspace(3) %hpo, align 4
  %d = fpext float %ex to double
  %l = call double @__nv_log(double %d)
  %sv = call float @__nv_sinf(float %ex)
  %back = fptrunc double %l to float
  %sum = fadd float %back, %sv
  %wide = zext i32 %e to i64
  %a2 = add i64 %addr, %wide
  %a3 = trunc i64 %a2 to i32
  %fa = uitofp i32 %a3 to float
  %tot = fadd float %sum, %fa
  %o = getelementptr float, ptr addrspace(1) %x, i32 %tid
  store float %tot, ptr addrspace(1) %o, align 4
  ret void
}
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare float @llvm.nvvm.shfl.sync.bfly.f32(i32, float, i32, i32)
declare void @llvm.nvvm.barrier0()
declare float @llvm.maxnum.f32(float, float)
declare float @llvm.nvvm.ex2.approx.f(float)
declare float @llvm.nvvm.ex2.approx.ftz.f(float)
declare <2 x bfloat> @llvm.nvvm.ff2bf16x2.rn(float, float)
declare <2 x half> @llvm.nvvm.ff2f16x2.rn(float, float)
declare double @__nv_log(double)
declare float @__nv_sinf(float)
)");
  EXPECT_TRUE(contains(cuda, "extern __shared__ __align__(16) unsigned char global_smem[];")) << cuda;
  EXPECT_TRUE(contains(cuda, "tid = threadIdx.x;")) << cuda;
  EXPECT_TRUE(contains(cuda, "v = *(const tsr_vec<unsigned int, 4> *)x;")) << cuda;
  EXPECT_TRUE(contains(cuda, "e = v.e[2];")) << cuda;
  EXPECT_TRUE(contains(cuda, "w.e[0] = tid;")) << cuda;
  EXPECT_TRUE(contains(cuda, "sh = __shfl_xor_sync(0xffffffffu, f, 16u, 32);")) << cuda;
  EXPECT_TRUE(contains(cuda, "slot = (unsigned char *)global_smem + (long long)(int)tid * 4;")) << cuda;
  EXPECT_TRUE(contains(cuda, "__syncthreads();")) << cuda;
  EXPECT_TRUE(contains(cuda, "addr = (unsigned long long)__cvta_generic_to_shared(slot);")) << cuda;
  EXPECT_TRUE(contains(cuda, "m = fmaxf(sh, 0.0f);")) << cuda;
  EXPECT_TRUE(contains(cuda, "ex = tsr_ex2_approx(m);")) << cuda;
  EXPECT_TRUE(contains(cuda, "ez = tsr_ex2_approx_ftz(m);")) << cuda;
  EXPECT_TRUE(contains(cuda, "bp = tsr_f32x2_to_bf16x2(ez, ex);")) << cuda;
  EXPECT_TRUE(contains(cuda, "hp = tsr_f32x2_to_f16x2(ez, ex);")) << cuda;
  EXPECT_TRUE(contains(cuda, "l = log(d);")) << cuda;
  EXPECT_TRUE(contains(cuda, "sv = sinf(ex);")) << cuda;
  expectCompiles(cuda);
}

TEST(CudaEmitter, UnsupportedConstructsAreOneClearError) {
  std::string fence = errorOf(R"(
define ptx_kernel void @k() {
entry:
  fence seq_cst
  ret void
}
)");
  EXPECT_TRUE(contains(fence, "NVRTC back-end: unsupported LLVM instruction 'fence'")) << fence;
  EXPECT_TRUE(contains(fence, "in kernel 'k'")) << fence;

  std::string laneid = errorOf(R"(
define ptx_kernel void @k(ptr addrspace(1) %out) {
entry:
  %l = call i32 @llvm.nvvm.read.ptx.sreg.laneid()
  store i32 %l, ptr addrspace(1) %out, align 4
  ret void
}
declare i32 @llvm.nvvm.read.ptx.sreg.laneid()
)");
  EXPECT_TRUE(contains(laneid, "NVRTC back-end: unsupported LLVM intrinsic 'llvm.nvvm.read.ptx.sreg.laneid' in "
                               "kernel 'k'"))
      << laneid;

  std::string call = errorOf(R"(
define ptx_kernel void @k() {
entry:
  call void @helper()
  ret void
}
declare void @helper()
)");
  EXPECT_TRUE(contains(call, "unsupported call to 'helper' in kernel 'k'")) << call;

  std::string vec = errorOf(R"(
define ptx_kernel void @k(ptr addrspace(1) %out, <2 x float> %a) {
entry:
  %s = fadd <2 x float> %a, %a
  store <2 x float> %s, ptr addrspace(1) %out, align 8
  ret void
}
)");
  EXPECT_TRUE(contains(vec, "unsupported LLVM instruction 'fadd'")) << vec;
}

TEST(CudaEmitter, SignedCompareOfBooleans) {
  std::string cuda = print(R"(
define ptx_kernel void @k(ptr addrspace(1) %out, i1 %a, i1 %b) {
entry:
  %c = icmp slt i1 %a, %b
  %z = zext i1 %c to i8
  store i8 %z, ptr addrspace(1) %out, align 1
  ret void
}
)");
  EXPECT_TRUE(contains(cuda, "c = -(int)a < -(int)b;")) << cuda; // true is -1 as a signed i1
  expectCompiles(cuda);
}

TEST(CudaEmitter, KernelNamesThatCannotBeCudaFunctionsAreAnError) {
  for (const char *name : {"float", "sinf", "threadIdx"}) {
    std::string module = std::string("define ptx_kernel void @") + name + "() {\nentry:\n  ret void\n}\n";
    try {
      print(module, name);
      ADD_FAILURE() << name;
    } catch (const std::runtime_error &e) {
      EXPECT_TRUE(contains(e.what(), "NVRTC back-end: unsupported kernel name")) << e.what();
    }
  }
}

TEST(CudaEmitter, NamesThatWouldClashAreRenamed) {
  std::string cuda = print(R"(
define ptx_kernel void @k(ptr addrspace(1) %float, i32 %threadIdx, i32 %k, float %expf) {
entry:
  %e = call float @__nv_expf(float %expf)
  %x = uitofp i32 %threadIdx to float
  %s = fadd float %e, %x
  store float %s, ptr addrspace(1) %float, align 4
  ret void
}
declare float @__nv_expf(float)
)");
  EXPECT_TRUE(contains(cuda, "k(unsigned char *v_float, unsigned int v_threadIdx, unsigned int v_k, float v_expf)"))
      << cuda;
  EXPECT_TRUE(contains(cuda, "e = expf(v_expf);")) << cuda;
  expectCompiles(cuda);
}

TEST(Nvrtc, CompileErrorsQuoteTheGeneratedLine) {
  if (!tessera::codegen::nvrtcStatus().available) GTEST_SKIP() << tessera::codegen::nvrtcStatus().error;
  const std::string source = "extern \"C\" __global__ void broken(int *out) {\n"
                             "  out[0] = not_declared_anywhere;\n"
                             "}\n";
  try {
    tessera::codegen::nvrtcCompileToPtx(source, "broken.cu", "sm_90a");
    FAIL() << "expected an NVRTC error";
  } catch (const tessera::codegen::NvrtcError &e) {
    std::string what = e.what();
    EXPECT_TRUE(contains(what, "NVRTC back-end: NVRTC")) << what;
    EXPECT_TRUE(contains(what, "broken.cu(2)")) << what;
    EXPECT_TRUE(contains(what, "not_declared_anywhere")) << what;
    EXPECT_TRUE(contains(what, "out[0] = not_declared_anywhere;")) << what; // the source line itself
  }
}

} // namespace
