// Calls in the NVRTC back-end's printer: NVVM and LLVM intrinsics as CUDA
// built-ins (or the tsr_ helpers wrapping one PTX instruction), libdevice
// functions by their CUDA math API name (else by their own, declared
// extern: NVRTC links libdevice), vprintf and __assertfail. Inline asm is
// CudaEmitterAsm.cpp.
#include "compiler/codegen/CudaEmitterInternal.h"

#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

namespace tessera::codegen::cuda {

using namespace llvm;

std::string Printer::callExpr(const CallInst &c) {
  const Function *callee = c.getCalledFunction();
  if (callee && callee->isIntrinsic()) return intrinsic(c, callee->getIntrinsicID());
  if (callee && callee->getName().starts_with("__nv_")) return libdevice(c, *callee);
  if (callee && callee->getName() == "vprintf") {
    need("vprintf");
    return "(unsigned int)vprintf((const char *)" + expr(c.getArgOperand(0)) + ", (const char *)" +
           expr(c.getArgOperand(1)) + ")";
  }
  fail("call to '" + (callee ? callee->getName().str() : std::string("an indirect function")) + "'");
}

std::string Printer::intrinsic(const CallInst &call, Intrinsic::ID id) {
  auto arg = [&](unsigned i) { return expr(call.getArgOperand(i)); };
  Type *t = call.getType();
  auto floatFn = [&](const char *name) -> std::string {
    // f32 name is `name` + 'f'; f16/bf16 compute in f32 and round (exact for these functions).
    if (t->isDoubleTy()) {
      std::string out = std::string(name) + "(";
      for (unsigned i = 0; i < call.arg_size(); ++i) out += (i ? ", " : "") + arg(i);
      return out + ")";
    }
    if (!t->isFloatTy() && !isHalfLike(t)) fail("LLVM intrinsic '" + call.getCalledFunction()->getName().str() + "'");
    std::string out = std::string(name) + "f(";
    for (unsigned i = 0; i < call.arg_size(); ++i) out += (i ? ", " : "") + toF32(call.getArgOperand(i));
    return fromF32(out + ")", t);
  };
  auto shuffle = [&](const char *fn, bool up) -> std::string {
    auto *c = dyn_cast<ConstantInt>(call.getArgOperand(3));
    if (!c) fail("shuffle with a run-time clamp");
    const uint64_t clamp = c->getZExtValue();
    const uint64_t width = 32 - (clamp >> 8);
    if ((clamp & 0xff) != (up ? 0u : 0x1fu)) fail("shuffle clamp " + hex(clamp));
    return std::string(fn) + "(" + arg(0) + ", " + arg(1) + ", " + arg(2) + ", " + std::to_string(width) + ")";
  };
  switch (id) {
  case Intrinsic::nvvm_read_ptx_sreg_tid_x: return "threadIdx.x";
  case Intrinsic::nvvm_read_ptx_sreg_tid_y: return "threadIdx.y";
  case Intrinsic::nvvm_read_ptx_sreg_tid_z: return "threadIdx.z";
  case Intrinsic::nvvm_read_ptx_sreg_ntid_x: return "blockDim.x";
  case Intrinsic::nvvm_read_ptx_sreg_ntid_y: return "blockDim.y";
  case Intrinsic::nvvm_read_ptx_sreg_ntid_z: return "blockDim.z";
  case Intrinsic::nvvm_read_ptx_sreg_ctaid_x: return "blockIdx.x";
  case Intrinsic::nvvm_read_ptx_sreg_ctaid_y: return "blockIdx.y";
  case Intrinsic::nvvm_read_ptx_sreg_ctaid_z: return "blockIdx.z";
  case Intrinsic::nvvm_read_ptx_sreg_nctaid_x: return "gridDim.x";
  case Intrinsic::nvvm_read_ptx_sreg_nctaid_y: return "gridDim.y";
  case Intrinsic::nvvm_read_ptx_sreg_nctaid_z: return "gridDim.z";
  case Intrinsic::nvvm_shfl_sync_bfly_i32: case Intrinsic::nvvm_shfl_sync_bfly_f32:
    return shuffle("__shfl_xor_sync", false);
  case Intrinsic::nvvm_shfl_sync_down_i32: case Intrinsic::nvvm_shfl_sync_down_f32:
    return shuffle("__shfl_down_sync", false);
  case Intrinsic::nvvm_shfl_sync_idx_i32: case Intrinsic::nvvm_shfl_sync_idx_f32:
    return shuffle("__shfl_sync", false);
  case Intrinsic::nvvm_shfl_sync_up_i32: case Intrinsic::nvvm_shfl_sync_up_f32:
    return shuffle("__shfl_up_sync", true);
  case Intrinsic::nvvm_ff2f16x2_rn: case Intrinsic::nvvm_ff2bf16x2_rn: {
    const bool bf16 = id == Intrinsic::nvvm_ff2bf16x2_rn;
    need("vec"); need("bitcast"); need("f16"); need(bf16 ? "f32x2_bf16x2" : "f32x2_f16x2");
    return std::string(bf16 ? "tsr_f32x2_to_bf16x2(" : "tsr_f32x2_to_f16x2(") + arg(0) + ", " + arg(1) + ")";
  }
  case Intrinsic::nvvm_ex2_approx_ftz_f: need("ex2_ftz"); return "tsr_ex2_approx_ftz(" + arg(0) + ")";
  case Intrinsic::nvvm_ex2_approx_f: need("ex2"); return "tsr_ex2_approx(" + arg(0) + ")";
  case Intrinsic::nvvm_lg2_approx_f: need("lg2"); return "tsr_lg2_approx(" + arg(0) + ")";
  case Intrinsic::nvvm_rsqrt_approx_f: need("rsqrt"); return "tsr_rsqrt_approx(" + arg(0) + ")";
  case Intrinsic::nvvm_mulhi_ui: return "__umulhi(" + arg(0) + ", " + arg(1) + ")";
  case Intrinsic::nvvm_mulhi_i: return "(unsigned int)__mulhi((int)" + arg(0) + ", (int)" + arg(1) + ")";
  case Intrinsic::nvvm_mulhi_ull: return "__umul64hi(" + arg(0) + ", " + arg(1) + ")";
  case Intrinsic::nvvm_mulhi_ll:
    return "(unsigned long long)__mul64hi((long long)" + arg(0) + ", (long long)" + arg(1) + ")";
  case Intrinsic::sqrt: return floatFn("sqrt");
  case Intrinsic::fma: return floatFn("fma");
  case Intrinsic::floor: return floatFn("floor");
  case Intrinsic::ceil: return floatFn("ceil");
  case Intrinsic::trunc: return floatFn("trunc");
  case Intrinsic::rint: return floatFn("rint");
  case Intrinsic::nearbyint: return floatFn("nearbyint");
  case Intrinsic::round: return floatFn("round");
  case Intrinsic::fabs:
    if (isHalfLike(t)) return "(" + cType(t) + ")(" + arg(0) + " & 0x7fff)";
    return floatFn("fabs");
  case Intrinsic::minnum: return floatFn("fmin");
  case Intrinsic::maxnum: return floatFn("fmax");
  case Intrinsic::maximum: case Intrinsic::minimum: { // tl.PropagateNan.ALL: a NaN operand is the result
    if (!t->isDoubleTy() && !t->isFloatTy() && !isHalfLike(t)) break;
    const bool dbl = t->isDoubleTy();
    const std::string a = dbl ? arg(0) : toF32(call.getArgOperand(0)), b = dbl ? arg(1) : toF32(call.getArgOperand(1));
    const std::string fn = std::string(id == Intrinsic::maximum ? "fmax" : "fmin") + (dbl ? "" : "f");
    const std::string e = "(" + a + " != " + a + " ? " + a + " : " + b + " != " + b + " ? " + b + " : " + fn + "(" + a +
                          ", " + b + "))";
    return dbl ? e : fromF32(e, t);
  }
  case Intrinsic::copysign: return floatFn("copysign");
  case Intrinsic::smin: case Intrinsic::smax: case Intrinsic::umin: case Intrinsic::umax: {
    if (t->isVectorTy()) break;
    const bool isSigned = id == Intrinsic::smin || id == Intrinsic::smax;
    const bool isMin = id == Intrinsic::smin || id == Intrinsic::umin;
    const std::string a = arg(0), b = arg(1);
    const std::string sa = isSigned ? "(" + signedType(intBits(t)) + ")" + a : a;
    const std::string sb = isSigned ? "(" + signedType(intBits(t)) + ")" + b : b;
    return "(" + sa + (isMin ? " < " : " > ") + sb + " ? " + a + " : " + b + ")";
  }
  case Intrinsic::abs: {
    if (t->isVectorTy()) break;
    const std::string s = signedType(intBits(t));
    return "(" + cType(t) + ")((" + s + ")" + arg(0) + " < 0 ? -(" + s + ")" + arg(0) + " : (" + s + ")" + arg(0) + ")";
  }
  case Intrinsic::ctpop:
    if (t->isIntegerTy(32)) return "(unsigned int)__popc(" + arg(0) + ")";
    if (t->isIntegerTy(64)) return "(unsigned long long)__popcll(" + arg(0) + ")";
    break;
  case Intrinsic::ctlz:
    if (t->isIntegerTy(32)) return "(unsigned int)__clz((int)" + arg(0) + ")";
    if (t->isIntegerTy(64)) return "(unsigned long long)__clzll((long long)" + arg(0) + ")";
    break;
  default:
    break;
  }
  fail("LLVM intrinsic '" + call.getCalledFunction()->getName().str() + "'");
}

std::string Printer::libdevice(const CallInst &call, const Function &callee) {
  std::string name = callee.getName().str().substr(5); // after "__nv_"
  std::string args;
  for (unsigned i = 0; i < call.arg_size(); ++i) args += (i ? ", " : "") + expr(call.getArgOperand(i));
  Type *ret = call.getType();
  std::string cudaName;
  if (name.rfind("fast_", 0) == 0) cudaName = "__" + name.substr(5); // __nv_fast_expf -> __expf
  else if (name == "saturatef") cudaName = "__saturatef";
  else if (ret->isFloatTy() && !name.empty() && name.back() == 'f' && cudaMathFunctions().count(name.substr(0, name.size() - 1)))
    cudaName = name;
  else if (ret->isDoubleTy() && cudaMathFunctions().count(name))
    cudaName = name;
  if (!cudaName.empty()) return cudaName + "(" + args + ")";
  // No CUDA spelling: call libdevice by its own name (NVRTC links libdevice).
  const std::string full = callee.getName().str();
  if (!declared_.count(full)) {
    declared_.insert(full);
    std::string params;
    for (unsigned i = 0; i < callee.getFunctionType()->getNumParams(); ++i)
      params += (i ? ", " : "") + cType(callee.getFunctionType()->getParamType(i));
    externs_.push_back("extern \"C\" __device__ " + (ret->isVoidTy() ? std::string("void") : cType(ret)) + " " + full +
                       "(" + params + ");\n");
  }
  return full + "(" + args + ")";
}

void Printer::callStatement(const CallInst &c) {
  if (c.isInlineAsm()) return inlineAsm(c);
  const Function *callee = c.getCalledFunction();
  if (callee && callee->isIntrinsic()) {
    switch (callee->getIntrinsicID()) {
    case Intrinsic::nvvm_barrier0: line("__syncthreads();"); return;
    case Intrinsic::assume: line("__builtin_assume(" + expr(c.getArgOperand(0)) + ");"); return;
    case Intrinsic::lifetime_start: case Intrinsic::lifetime_end: case Intrinsic::donothing: return;
    default: break;
    }
  }
  if (callee && callee->getName() == "__assertfail") {
    line("__assertfail((const char *)" + expr(c.getArgOperand(0)) + ", (const char *)" + expr(c.getArgOperand(1)) +
         ", " + expr(c.getArgOperand(2)) + ", (const char *)" + expr(c.getArgOperand(3)) + ", " +
         expr(c.getArgOperand(4)) + ");");
    return;
  }
  std::string value = rhs(c);
  if (c.getType()->isVoidTy()) line(value + ";");
  else line(names_.at(&c) + " = " + value + ";");
}

} // namespace tessera::codegen::cuda
