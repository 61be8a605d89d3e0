// The NVRTC back-end's printer: the per-thread LLVM form of a kernel (what
// KernelLowering builds, before O3) as CUDA C++. docs/nvrtc.md lists what
// maps to what.
//
// Shape of the output: a few helpers (only those used), the shared buffer,
// then one extern "C" __global__ function. Every SSA value is a local
// declared at the top (so gotos never jump over an initialisation); each
// basic block is a label; a phi `x` gets a second local `x_in` that its
// predecessors assign before their branch, and `x = x_in;` opens its block
// (so phis that read each other on a back edge still see the old values).
//
// Types: i1 bool; i8..i64 unsigned char/short/int/long long (signedness is
// per instruction, as in LLVM: sdiv, ashr, sext and signed compares cast);
// f16/bf16 are their bits (tsr_f16/tsr_bf16 = unsigned short), converted
// to f32 for arithmetic (exact for +, -, *, /: f32 has more than twice
// their precision); pointers are `unsigned char *` (generic: CUDA C++ has
// no address-space qualifiers on pointers; NVVM infers shared accesses);
// vectors are tsr_vec<T, N>. Memory is read and written through unsigned
// integer types of the value's width (floats are bit-cast), so that two
// accesses of one width never differ in type for type-based alias analysis.
#include "compiler/codegen/CudaEmitter.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/GetElementPtrTypeIterator.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Metadata.h>
#include <llvm/IR/PassManager.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Transforms/Scalar/DCE.h>
#include <llvm/Transforms/Scalar/EarlyCSE.h>
#include <llvm/Transforms/Utils/BasicBlockUtils.h>
#include <llvm/Transforms/Utils/Local.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

namespace tessera::codegen {

using namespace llvm;

void cleanupForCuda(Module &module) {
  LoopAnalysisManager lam;
  FunctionAnalysisManager fam;
  CGSCCAnalysisManager cgam;
  ModuleAnalysisManager mam;
  PassBuilder builder;
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  for (Function &f : module) {
    if (f.isDeclaration())
      continue;
    removeUnreachableBlocks(f);
    FunctionPassManager passes;
    passes.addPass(EarlyCSEPass());
    passes.addPass(DCEPass());
    passes.run(f, fam);
    // A block whose only predecessor only branches to it is the same block.
    for (auto it = f.begin(); it != f.end();) {
      BasicBlock *block = &*it++;
      MergeBlockIntoPredecessor(block);
    }
  }
}

namespace {

// Words the generated code uses that a kernel's parameter or value names
// must not shadow: C++ keywords, CUDA's built-in variables and functions
// called by name.
const std::set<std::string> &reservedNames() {
  static const std::set<std::string> names = {
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case",
      "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "const", "consteval",
      "constexpr", "constinit", "const_cast", "continue", "co_await", "co_return", "co_yield", "decltype",
      "default", "delete", "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern",
      "false", "float", "for", "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new",
      "noexcept", "not", "not_eq", "nullptr", "operator", "or", "or_eq", "private", "protected", "public",
      "register", "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static",
      "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local", "throw", "true",
      "try", "typedef", "typeid", "typename", "union", "unsigned", "using", "virtual", "void", "volatile",
      "wchar_t", "while", "xor", "xor_eq", "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize",
      "main", "min", "max", "abs", "llabs", "fabs", "fabsf", "memcpy", "printf", "vprintf", "assert",
      "global_smem"};
  return names;
}

// libdevice functions with a CUDA math API spelling (the f32 one adds 'f').
const std::set<std::string> &cudaMathFunctions() {
  static const std::set<std::string> names = {
      "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
      "exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "pow", "sqrt", "rsqrt", "cbrt",
      "rcbrt", "erf", "erfc", "erfinv", "erfcinv", "erfcx", "lgamma", "tgamma", "normcdf", "normcdfinv",
      "hypot", "fmod", "remainder", "copysign", "fdim", "fmin", "fmax", "fma", "floor", "ceil", "trunc",
      "round", "rint", "nearbyint", "sinpi", "cospi", "j0", "j1", "y0", "y1", "logb", "nextafter", "fabs",
      "cyl_bessel_i0", "cyl_bessel_i1", "rhypot", "norm3d", "rnorm3d"};
  return names;
}

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string quoted(StringRef text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
    case '\n': out += "\\n"; break;
    case '\t': out += "\\t"; break;
    case '\\': out += "\\\\"; break;
    case '"': out += "\\\""; break;
    default:
      if (c < 0x20 || c >= 0x7f) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\%03o", c); // octal: never swallows a following digit
        out += buf;
      } else {
        out += static_cast<char>(c);
      }
    }
  }
  return out + "\"";
}

std::string printed(const Value *v) {
  std::string text;
  raw_string_ostream os(text);
  v->print(os);
  os.flush();
  size_t start = text.find_first_not_of(' ');
  return start == std::string::npos ? text : text.substr(start);
}

std::string printed(const Type *t) {
  std::string text;
  raw_string_ostream os(text);
  t->print(os);
  os.flush();
  return text;
}

bool isHalfLike(const Type *t) { return t->isHalfTy() || t->isBFloatTy(); }

// The helpers the generated code may use, in the order they are printed.
struct Helper {
  const char *name;
  const char *text;
};
const Helper kHelpers[] = {
    {"vec", "template <typename T, int N> struct __align__(sizeof(T) * N) tsr_vec { T e[N]; };\n"},
    {"bitcast", "template <typename To, typename From> __device__ __forceinline__ To tsr_bitcast(From from) {\n"
                "  static_assert(sizeof(To) == sizeof(From), \"tsr_bitcast between sizes\");\n"
                "  union { From from; To to; } bits;\n"
                "  bits.from = from;\n"
                "  return bits.to;\n"
                "}\n"},
    {"f16", "typedef unsigned short tsr_f16;  // float16 bits\n"
            "typedef unsigned short tsr_bf16; // bfloat16 bits\n"},
    {"f16_f32", "__device__ __forceinline__ float tsr_f16_to_f32(tsr_f16 h) {\n"
                "  float f;\n"
                "  asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h));\n"
                "  return f;\n"
                "}\n"},
    {"f32_f16", "__device__ __forceinline__ tsr_f16 tsr_f32_to_f16(float f) {\n"
                "  tsr_f16 h;\n"
                "  asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f));\n"
                "  return h;\n"
                "}\n"},
    {"f64_f16", "__device__ __forceinline__ tsr_f16 tsr_f64_to_f16(double d) {\n"
                "  tsr_f16 h;\n"
                "  asm(\"cvt.rn.f16.f64 %0, %1;\" : \"=h\"(h) : \"d\"(d));\n"
                "  return h;\n"
                "}\n"},
    {"bf16_f32", "__device__ __forceinline__ float tsr_bf16_to_f32(tsr_bf16 h) { return __uint_as_float((unsigned int)h << 16); }\n"},
    {"f32_bf16", "__device__ __forceinline__ tsr_bf16 tsr_f32_to_bf16(float f) {\n"
                 "  tsr_bf16 h;\n"
                 "  asm(\"cvt.rn.bf16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f));\n"
                 "  return h;\n"
                 "}\n"},
    // Round to odd into f32, then to nearest into bf16: one correct rounding.
    {"f64_bf16", "__device__ __forceinline__ tsr_bf16 tsr_f64_to_bf16(double d) {\n"
                 "  float f = __double2float_rz(d);\n"
                 "  unsigned int bits = __float_as_uint(f);\n"
                 "  if ((double)f != d && d == d && (bits & 0x7f800000u) != 0x7f800000u) bits |= 1u;\n"
                 "  return tsr_f32_to_bf16(__uint_as_float(bits));\n"
                 "}\n"},
    // cvt.rn.{f16,bf16}x2.f32 d, a, b: a rounds into the high half (element 1).
    {"f32x2_f16x2", "__device__ __forceinline__ tsr_vec<tsr_f16, 2> tsr_f32x2_to_f16x2(float hi, float lo) {\n"
                    "  unsigned int bits;\n"
                    "  asm(\"cvt.rn.f16x2.f32 %0, %1, %2;\" : \"=r\"(bits) : \"f\"(hi), \"f\"(lo));\n"
                    "  return tsr_bitcast<tsr_vec<tsr_f16, 2>>(bits);\n"
                    "}\n"},
    {"f32x2_bf16x2", "__device__ __forceinline__ tsr_vec<tsr_bf16, 2> tsr_f32x2_to_bf16x2(float hi, float lo) {\n"
                     "  unsigned int bits;\n"
                     "  asm(\"cvt.rn.bf16x2.f32 %0, %1, %2;\" : \"=r\"(bits) : \"f\"(hi), \"f\"(lo));\n"
                     "  return tsr_bitcast<tsr_vec<tsr_bf16, 2>>(bits);\n"
                     "}\n"},
    {"ex2", "__device__ __forceinline__ float tsr_ex2_approx(float x) {\n"
            "  float y;\n"
            "  asm(\"ex2.approx.f32 %0, %1;\" : \"=f\"(y) : \"f\"(x));\n"
            "  return y;\n"
            "}\n"},
    {"ex2_ftz", "__device__ __forceinline__ float tsr_ex2_approx_ftz(float x) {\n"
                "  float y;\n"
                "  asm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(y) : \"f\"(x));\n"
                "  return y;\n"
                "}\n"},
    {"lg2", "__device__ __forceinline__ float tsr_lg2_approx(float x) {\n"
            "  float y;\n"
            "  asm(\"lg2.approx.f32 %0, %1;\" : \"=f\"(y) : \"f\"(x));\n"
            "  return y;\n"
            "}\n"},
    {"rsqrt", "__device__ __forceinline__ float tsr_rsqrt_approx(float x) {\n"
              "  float y;\n"
              "  asm(\"rsqrt.approx.f32 %0, %1;\" : \"=f\"(y) : \"f\"(x));\n"
              "  return y;\n"
              "}\n"},
    {"vprintf", "extern \"C\" __device__ int vprintf(const char *format, const char *arguments);\n"},
};

class Printer {
public:
  Printer(const Module &module, const Function &fn)
      : module_(module), fn_(fn), dl_(module.getDataLayout()), kernel_(fn.getName().str()) {}

  std::string run();

private:
  const Module &module_;
  const Function &fn_;
  const DataLayout &dl_;
  std::string kernel_;

  std::set<std::string> taken_, labelsTaken_;
  std::unordered_map<const Value *, std::string> names_;
  std::unordered_map<const BasicBlock *, std::string> labels_;
  std::unordered_map<const PHINode *, std::string> phiIn_;
  std::unordered_map<const Value *, std::vector<std::string>> asmOutputs_; // struct-valued asm calls
  std::vector<std::pair<std::string, std::string>> locals_;                // (type, name), in order
  std::vector<std::string> storage_;                                       // alloca buffers
  std::set<std::string> helpers_;
  std::vector<std::string> externs_; // declarations of libdevice functions without a CUDA name
  std::set<std::string> declared_;
  std::set<const BasicBlock *> gotoTargets_;
  const BasicBlock *nextBlock_ = nullptr;
  std::string out_; // the statements of the block being printed

  [[noreturn]] void fail(const std::string &what) const {
    throw std::runtime_error("NVRTC back-end: unsupported " + what + " in kernel '" + kernel_ + "'");
  }
  [[noreturn]] void failInstruction(const Instruction &inst) const {
    fail(std::string("LLVM instruction '") + inst.getOpcodeName() + "' (" + printed(&inst) + ")");
  }

  void need(const std::string &helper) {
    helpers_.insert(helper);
    if (helper == "f64_bf16") helpers_.insert("f32_bf16");
    if (helper.find("f16") != std::string::npos || helper.find("bf16") != std::string::npos) helpers_.insert("f16");
  }
  void line(const std::string &text) { out_ += "  " + text + "\n"; }

  // ------------------------------------------------------------ names
  std::string uniqueName(std::string base, std::set<std::string> &taken) {
    std::string s;
    for (char c : base)
      s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "v" + s;
    if (reservedNames().count(s) || s.rfind("tsr_", 0) == 0 || s.rfind("__", 0) == 0 || s == kernel_ ||
        cudaMathFunctions().count(s) || cudaMathFunctions().count(s.substr(0, s.size() - 1)))
      s = "v_" + s;
    std::string name = s;
    for (unsigned n = 1; taken.count(name); ++n) name = s + "_" + std::to_string(n);
    taken.insert(name);
    return name;
  }
  std::string localName(const Value &v) {
    return uniqueName(v.hasName() ? v.getName().str() : "t" + std::to_string(locals_.size()), taken_);
  }
  void declare(const std::string &type, const std::string &name) { locals_.emplace_back(type, name); }
  void nameValues();

  // ------------------------------------------------------------ types
  std::string cType(Type *t);
  std::string bitsType(Type *t); // how a value of type t is kept in memory
  std::string signedType(unsigned bits) const {
    switch (bits) {
    case 1: case 32: return "int";
    case 8: return "signed char";
    case 16: return "short";
    case 64: return "long long";
    }
    fail("integer width " + std::to_string(bits));
  }
  unsigned intBits(Type *t) {
    if (!t->isIntegerTy() || (t->getIntegerBitWidth() != 1 && t->getIntegerBitWidth() != 8 &&
                              t->getIntegerBitWidth() != 16 && t->getIntegerBitWidth() != 32 &&
                              t->getIntegerBitWidth() != 64))
      fail("LLVM type '" + printed(t) + "'");
    return t->getIntegerBitWidth();
  }

  // ------------------------------------------------------------ values
  std::string expr(const Value *v);
  std::string zero(Type *t);
  std::string intLiteral(uint64_t value, Type *t);
  std::string floatLiteral(const ConstantFP &c);
  std::string globalName(const GlobalVariable &g);
  std::map<const GlobalVariable *, std::string> globalNames_;
  std::vector<std::string> globalDecls_;

  // Values as f32 / from f32 (f16 and bf16 compute in f32).
  std::string toF32(const Value *v) {
    Type *t = v->getType();
    if (t->isHalfTy()) { need("f16_f32"); return "tsr_f16_to_f32(" + expr(v) + ")"; }
    if (t->isBFloatTy()) { need("bf16_f32"); return "tsr_bf16_to_f32(" + expr(v) + ")"; }
    return expr(v);
  }
  std::string fromF32(const std::string &e, Type *t) {
    if (t->isHalfTy()) { need("f32_f16"); return "tsr_f32_to_f16(" + e + ")"; }
    if (t->isBFloatTy()) { need("f32_bf16"); return "tsr_f32_to_bf16(" + e + ")"; }
    return e;
  }
  std::string fromBits(const std::string &bits, Type *t);
  // A vector element index: a plain number when constant.
  std::string index(const Value *v) {
    if (auto *c = dyn_cast<ConstantInt>(v)) return std::to_string(c->getZExtValue());
    return expr(v);
  }
  std::string toBits(const Value *v);

  // ------------------------------------------------------------ instructions
  std::string rhs(const Instruction &inst); // the expression an instruction computes
  std::string binary(const BinaryOperator &inst);
  std::string compare(const CmpInst &inst);
  std::string castExpr(const CastInst &inst);
  std::string gep(const GetElementPtrInst &inst);
  std::string intrinsic(const CallInst &call, Intrinsic::ID id);
  std::string libdevice(const CallInst &call, const Function &callee);
  void statement(const Instruction &inst);
  void inlineAsm(const CallInst &call);
  void callStatement(const CallInst &call);
  void edgeCopies(const BasicBlock *from, const BasicBlock *to);
  void jump(const BasicBlock *from, const BasicBlock *to, bool mayFallThrough);
  void terminator(const Instruction &inst);
};

// ---------------------------------------------------------------- types

std::string Printer::cType(Type *t) {
  if (t->isIntegerTy()) {
    switch (intBits(t)) {
    case 1: return "bool";
    case 8: return "unsigned char";
    case 16: return "unsigned short";
    case 32: return "unsigned int";
    default: return "unsigned long long";
    }
  }
  if (t->isHalfTy()) { need("f16"); return "tsr_f16"; }
  if (t->isBFloatTy()) { need("f16"); return "tsr_bf16"; }
  if (t->isFloatTy()) return "float";
  if (t->isDoubleTy()) return "double";
  if (t->isPointerTy()) return "unsigned char *";
  if (auto *v = dyn_cast<FixedVectorType>(t)) {
    uint64_t bytes = dl_.getTypeAllocSize(t);
    if ((bytes & (bytes - 1)) || v->getElementType()->isPointerTy() || v->getElementType()->isIntegerTy(1))
      fail("LLVM vector type '" + printed(t) + "'");
    need("vec");
    return "tsr_vec<" + cType(v->getElementType()) + ", " + std::to_string(v->getNumElements()) + ">";
  }
  fail("LLVM type '" + printed(t) + "'");
}

std::string Printer::bitsType(Type *t) {
  if (auto *v = dyn_cast<FixedVectorType>(t)) {
    Type *elem = v->getElementType();
    if (!elem->isIntegerTy() && !elem->isFloatingPointTy()) fail("LLVM vector type '" + printed(t) + "'");
    need("vec");
    return "tsr_vec<" + bitsType(elem) + ", " + std::to_string(v->getNumElements()) + ">";
  }
  if (t->isPointerTy()) return "unsigned long long";
  if (t->isIntegerTy(1)) fail("memory access of type i1");
  if (t->isIntegerTy()) return cType(t);
  switch (t->getPrimitiveSizeInBits()) {
  case 16: return "unsigned short";
  case 32: return "unsigned int";
  case 64: return "unsigned long long";
  }
  fail("memory access of type '" + printed(t) + "'");
}

std::string Printer::fromBits(const std::string &bits, Type *t) {
  if (t->isFloatTy()) return "__uint_as_float(" + bits + ")";
  if (t->isDoubleTy()) return "__longlong_as_double((long long)" + bits + ")";
  if (t->isPointerTy()) return "(unsigned char *)" + bits;
  if (auto *v = dyn_cast<FixedVectorType>(t); v && v->getElementType()->isFloatingPointTy() &&
                                               !isHalfLike(v->getElementType())) {
    need("bitcast");
    return "tsr_bitcast<" + cType(t) + ">(" + bits + ")";
  }
  return bits; // integers, f16/bf16 bits, vectors of them
}

std::string Printer::toBits(const Value *v) {
  Type *t = v->getType();
  if (t->isFloatTy()) return "__float_as_uint(" + expr(v) + ")";
  if (t->isDoubleTy()) return "(unsigned long long)__double_as_longlong(" + expr(v) + ")";
  if (t->isPointerTy()) return "(unsigned long long)" + expr(v);
  if (auto *vt = dyn_cast<FixedVectorType>(t); vt && vt->getElementType()->isFloatingPointTy() &&
                                                !isHalfLike(vt->getElementType())) {
    need("bitcast");
    return "tsr_bitcast<" + bitsType(t) + ">(" + expr(v) + ")";
  }
  return expr(v);
}

// ---------------------------------------------------------------- values

std::string Printer::intLiteral(uint64_t value, Type *t) {
  unsigned bits = intBits(t);
  if (bits == 1) return value & 1 ? "true" : "false";
  if (bits < 64) value &= (uint64_t{1} << bits) - 1;
  std::string digits = value < 65536 ? std::to_string(value) : hex(value);
  if (bits == 64) return digits + "ull";
  if (bits == 32) return digits + "u";
  return "(" + cType(t) + ")" + digits;
}

std::string Printer::floatLiteral(const ConstantFP &c) {
  Type *t = c.getType();
  uint64_t bits = c.getValueAPF().bitcastToAPInt().getZExtValue();
  if (isHalfLike(t)) return "(" + cType(t) + ")" + hex(bits);
  char buf[64];
  if (t->isFloatTy()) {
    float v = c.getValueAPF().convertToFloat();
    if (!std::isfinite(v)) return "__uint_as_float(" + hex(bits) + "u)";
    std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
    std::string s = buf;
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    return s + "f";
  }
  if (t->isDoubleTy()) {
    double v = c.getValueAPF().convertToDouble();
    if (!std::isfinite(v)) return "__longlong_as_double(" + hex(bits) + "ll)";
    std::snprintf(buf, sizeof buf, "%.17g", v);
    std::string s = buf;
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    return s;
  }
  fail("LLVM constant '" + printed(&c) + "'");
}

std::string Printer::zero(Type *t) {
  if (t->isIntegerTy()) return intLiteral(0, t);
  if (t->isFloatTy()) return "0.0f";
  if (t->isDoubleTy()) return "0.0";
  if (isHalfLike(t)) return "(" + cType(t) + ")0";
  if (t->isPointerTy()) return "(unsigned char *)0";
  if (t->isVectorTy()) return cType(t) + "{}";
  fail("LLVM type '" + printed(t) + "'");
}

std::string Printer::globalName(const GlobalVariable &g) {
  auto it = globalNames_.find(&g);
  if (it != globalNames_.end()) return it->second;
  std::string name;
  if (g.getAddressSpace() == 3) {
    // The dynamic shared buffer: a zero-length external array.
    auto *array = dyn_cast<ArrayType>(g.getValueType());
    if (g.hasInitializer() || !array || array->getNumElements() != 0)
      fail("shared-memory global '" + g.getName().str() + "' (only the dynamic shared buffer is supported)");
    name = g.getName() == "global_smem" ? "global_smem" : uniqueName(g.getName().str(), taken_);
    globalDecls_.push_back("extern __shared__ __align__(" + std::to_string(std::max<uint64_t>(16, g.getAlign().valueOrOne().value())) +
                           ") unsigned char " + name + "[];");
  } else {
    // Constant byte strings (format strings of tl.device_print, assert messages).
    auto *data = g.hasInitializer() ? dyn_cast<ConstantDataArray>(g.getInitializer()) : nullptr;
    if (!g.isConstant() || !data || !data->isString())
      fail("global variable '" + g.getName().str() + "' (only constant strings are supported)");
    StringRef bytes = data->getAsString();
    name = uniqueName(g.getName().str(), taken_);
    std::string size = std::to_string(bytes.size());
    if (!bytes.empty() && bytes.back() == '\0')
      globalDecls_.push_back("static __device__ const char " + name + "[" + size + "] = " +
                             quoted(bytes.drop_back()) + ";");
    else {
      std::string list;
      for (unsigned char c : bytes) list += (list.empty() ? "" : ", ") + std::to_string(c);
      globalDecls_.push_back("static __device__ const char " + name + "[" + size + "] = {" + list + "};");
    }
  }
  return globalNames_[&g] = name;
}

std::string Printer::expr(const Value *v) {
  if (auto it = names_.find(v); it != names_.end()) return it->second;
  if (auto *c = dyn_cast<ConstantInt>(v)) return intLiteral(c->getZExtValue(), c->getType());
  if (auto *c = dyn_cast<ConstantFP>(v)) return floatLiteral(*c);
  if (isa<ConstantPointerNull>(v)) return "(unsigned char *)0";
  if (isa<UndefValue>(v) || isa<ConstantAggregateZero>(v)) return zero(v->getType());
  if (auto *c = dyn_cast<ConstantDataVector>(v)) {
    std::string list;
    for (unsigned i = 0; i < c->getNumElements(); ++i)
      list += (i ? ", " : "") + expr(c->getElementAsConstant(i));
    return cType(c->getType()) + "{{" + list + "}}";
  }
  if (auto *c = dyn_cast<ConstantVector>(v)) {
    std::string list;
    for (unsigned i = 0; i < c->getNumOperands(); ++i) list += (i ? ", " : "") + expr(c->getOperand(i));
    return cType(c->getType()) + "{{" + list + "}}";
  }
  if (auto *g = dyn_cast<GlobalVariable>(v)) return "(unsigned char *)" + globalName(*g);
  if (auto *c = dyn_cast<ConstantExpr>(v)) {
    Instruction *inst = c->getAsInstruction();
    std::string text;
    try {
      text = "(" + rhs(*inst) + ")";
    } catch (...) {
      inst->deleteValue();
      throw;
    }
    inst->deleteValue();
    return text;
  }
  fail("LLVM value '" + printed(v) + "'");
}

// ---------------------------------------------------------------- instructions

std::string Printer::binary(const BinaryOperator &inst) {
  Type *t = inst.getType();
  const Value *a = inst.getOperand(0), *b = inst.getOperand(1);
  if (t->isVectorTy()) failInstruction(inst);
  if (t->isFloatingPointTy()) {
    const char *op = nullptr;
    switch (inst.getOpcode()) {
    case Instruction::FAdd: op = " + "; break;
    case Instruction::FSub: op = " - "; break;
    case Instruction::FMul: op = " * "; break;
    case Instruction::FDiv: op = " / "; break;
    case Instruction::FRem:
      if (t->isDoubleTy()) return "fmod(" + expr(a) + ", " + expr(b) + ")";
      return fromF32("fmodf(" + toF32(a) + ", " + toF32(b) + ")", t);
    default: failInstruction(inst);
    }
    if (isHalfLike(t)) return fromF32(toF32(a) + op + toF32(b), t);
    return expr(a) + op + expr(b);
  }
  const unsigned bits = intBits(t);
  const std::string type = cType(t);
  auto u = [&](const Value *v) { return bits < 32 ? "(unsigned int)" + expr(v) : expr(v); };
  auto s = [&](const Value *v) { return bits == 1 ? "-(int)" + expr(v) : "(" + signedType(bits) + ")" + expr(v); };
  auto narrow = [&](const std::string &e) {
    if (bits == 1) return "(bool)((" + e + ") & 1)";
    if (bits < 32) return "(" + type + ")(" + e + ")";
    return e;
  };
  switch (inst.getOpcode()) {
  case Instruction::Add: return narrow(u(a) + " + " + u(b));
  case Instruction::Sub: return narrow(u(a) + " - " + u(b));
  case Instruction::Mul: return narrow(u(a) + " * " + u(b));
  case Instruction::And: return narrow(u(a) + " & " + u(b));
  case Instruction::Or: return narrow(u(a) + " | " + u(b));
  case Instruction::Xor: return narrow(u(a) + " ^ " + u(b));
  case Instruction::Shl: return narrow(u(a) + " << " + expr(b));
  case Instruction::LShr: return narrow(u(a) + " >> " + expr(b));
  case Instruction::AShr: return "(" + type + ")(" + s(a) + " >> " + expr(b) + ")";
  case Instruction::UDiv: return narrow(u(a) + " / " + u(b));
  case Instruction::URem: return narrow(u(a) + " % " + u(b));
  case Instruction::SDiv: return "(" + type + ")(" + s(a) + " / " + s(b) + ")";
  case Instruction::SRem: return "(" + type + ")(" + s(a) + " % " + s(b) + ")";
  default: failInstruction(inst);
  }
}

std::string Printer::compare(const CmpInst &inst) {
  const Value *a = inst.getOperand(0), *b = inst.getOperand(1);
  if (a->getType()->isVectorTy()) failInstruction(inst);
  if (auto *f = dyn_cast<FCmpInst>(&inst)) {
    std::string x = toF32(a), y = toF32(b);
    switch (f->getPredicate()) {
    case CmpInst::FCMP_FALSE: return "false";
    case CmpInst::FCMP_TRUE: return "true";
    case CmpInst::FCMP_OEQ: return x + " == " + y;
    case CmpInst::FCMP_OGT: return x + " > " + y;
    case CmpInst::FCMP_OGE: return x + " >= " + y;
    case CmpInst::FCMP_OLT: return x + " < " + y;
    case CmpInst::FCMP_OLE: return x + " <= " + y;
    case CmpInst::FCMP_ONE: return "(" + x + " < " + y + " || " + x + " > " + y + ")";
    case CmpInst::FCMP_ORD: return "(" + x + " == " + x + " && " + y + " == " + y + ")";
    case CmpInst::FCMP_UNO: return "(" + x + " != " + x + " || " + y + " != " + y + ")";
    case CmpInst::FCMP_UEQ: return "!(" + x + " < " + y + " || " + x + " > " + y + ")";
    case CmpInst::FCMP_UGT: return "!(" + x + " <= " + y + ")";
    case CmpInst::FCMP_UGE: return "!(" + x + " < " + y + ")";
    case CmpInst::FCMP_ULT: return "!(" + x + " >= " + y + ")";
    case CmpInst::FCMP_ULE: return "!(" + x + " > " + y + ")";
    case CmpInst::FCMP_UNE: return x + " != " + y;
    default: failInstruction(inst);
    }
  }
  const bool pointers = a->getType()->isPointerTy();
  const unsigned bits = pointers ? 64 : intBits(a->getType());
  const bool isSigned = cast<ICmpInst>(inst).isSigned();
  auto operand = [&](const Value *v) {
    if (pointers) return "(unsigned long long)" + expr(v);
    if (isSigned && bits == 1) return "-(int)" + expr(v); // a signed i1 is 0 or -1
    if (isSigned) return "(" + signedType(bits) + ")" + expr(v);
    return expr(v);
  };
  const char *op = nullptr;
  switch (inst.getPredicate()) {
  case CmpInst::ICMP_EQ: op = " == "; break;
  case CmpInst::ICMP_NE: op = " != "; break;
  case CmpInst::ICMP_UGT: case CmpInst::ICMP_SGT: op = " > "; break;
  case CmpInst::ICMP_UGE: case CmpInst::ICMP_SGE: op = " >= "; break;
  case CmpInst::ICMP_ULT: case CmpInst::ICMP_SLT: op = " < "; break;
  case CmpInst::ICMP_ULE: case CmpInst::ICMP_SLE: op = " <= "; break;
  default: failInstruction(inst);
  }
  return operand(a) + op + operand(b);
}

std::string Printer::castExpr(const CastInst &inst) {
  const Value *x = inst.getOperand(0);
  Type *from = x->getType(), *to = inst.getType();
  if (from->isVectorTy() || to->isVectorTy()) {
    if (inst.getOpcode() != Instruction::BitCast) failInstruction(inst);
    need("bitcast");
    return "tsr_bitcast<" + cType(to) + ">(" + expr(x) + ")";
  }
  const std::string toType = cType(to);
  switch (inst.getOpcode()) {
  case Instruction::Trunc:
    if (to->isIntegerTy(1)) return "(bool)(" + expr(x) + " & 1)";
    return "(" + toType + ")" + expr(x);
  case Instruction::ZExt:
    return "(" + toType + ")" + expr(x);
  case Instruction::SExt:
    if (from->isIntegerTy(1)) return "(" + toType + ")-(" + signedType(intBits(to)) + ")" + expr(x);
    return "(" + toType + ")(" + signedType(intBits(to)) + ")(" + signedType(intBits(from)) + ")" + expr(x);
  case Instruction::FPTrunc:
  case Instruction::FPExt: {
    if (from->isDoubleTy() && to->isHalfTy()) { need("f64_f16"); return "tsr_f64_to_f16(" + expr(x) + ")"; }
    if (from->isDoubleTy() && to->isBFloatTy()) { need("f64_bf16"); return "tsr_f64_to_bf16(" + expr(x) + ")"; }
    if (isHalfLike(from) && isHalfLike(to)) return fromF32(toF32(x), to);
    if (isHalfLike(from)) return to->isDoubleTy() ? "(double)" + toF32(x) : toF32(x);
    if (isHalfLike(to)) return fromF32(expr(x), to);
    return "(" + toType + ")" + expr(x);
  }
  case Instruction::FPToSI:
  case Instruction::FPToUI: {
    std::string value = isHalfLike(from) ? toF32(x) : expr(x);
    if (to->isIntegerTy(1)) return value + " != 0";
    if (inst.getOpcode() == Instruction::FPToSI)
      return "(" + toType + ")(" + signedType(intBits(to)) + ")" + value;
    return "(" + toType + ")" + value;
  }
  case Instruction::SIToFP:
  case Instruction::UIToFP: {
    const bool isSigned = inst.getOpcode() == Instruction::SIToFP;
    const unsigned bits = intBits(from);
    std::string value = isSigned ? (bits == 1 ? "-(int)" : "(" + signedType(bits) + ")") + expr(x) : expr(x);
    if (!isHalfLike(to)) return "(" + toType + ")" + value;
    if (bits <= 16) return fromF32("(float)" + value, to); // exact in f32, then one rounding
    if (to->isHalfTy()) {
      // One rounding straight from the integer.
      const std::string type = bits == 64 ? (isSigned ? "s64" : "u64") : (isSigned ? "s32" : "u32");
      const std::string name = "tsr_" + type + "_to_f16";
      if (!declared_.count(name)) {
        declared_.insert(name);
        const std::string ctype = bits == 64 ? (isSigned ? "long long" : "unsigned long long")
                                             : (isSigned ? "int" : "unsigned int");
        externs_.push_back("__device__ __forceinline__ tsr_f16 " + name + "(" + ctype + " x) {\n  tsr_f16 h;\n  asm(\"cvt.rn.f16." +
                           type + " %0, %1;\" : \"=h\"(h) : \"" + (bits == 64 ? "l" : "r") + "\"(x));\n  return h;\n}\n");
      }
      need("f16");
      return name + "(" + value + ")";
    }
    if (bits == 32) { need("f64_bf16"); return "tsr_f64_to_bf16((double)" + value + ")"; } // exact in f64
    fail("conversion of a 64-bit integer to bfloat16");
  }
  case Instruction::PtrToInt: {
    std::string address = from->getPointerAddressSpace() == 3
                              ? "(unsigned long long)__cvta_generic_to_shared(" + expr(x) + ")"
                              : "(unsigned long long)" + expr(x);
    return to->isIntegerTy(64) ? address : "(" + toType + ")" + address;
  }
  case Instruction::IntToPtr:
    if (to->getPointerAddressSpace() == 3)
      return "(unsigned char *)__cvta_shared_to_generic((unsigned long long)" + expr(x) + ")";
    return "(unsigned char *)(unsigned long long)" + expr(x);
  case Instruction::AddrSpaceCast:
    return expr(x); // every pointer is generic in CUDA C++
  case Instruction::BitCast:
    if (from == to || (from->getPrimitiveSizeInBits() == 16 && to->getPrimitiveSizeInBits() == 16) ||
        (from->isPointerTy() && to->isPointerTy()))
      return expr(x); // f16/bf16/i16 share their representation
    if (from->isFloatTy() && to->isIntegerTy(32)) return "__float_as_uint(" + expr(x) + ")";
    if (from->isIntegerTy(32) && to->isFloatTy()) return "__uint_as_float(" + expr(x) + ")";
    if (from->isDoubleTy() && to->isIntegerTy(64)) return "(unsigned long long)__double_as_longlong(" + expr(x) + ")";
    if (from->isIntegerTy(64) && to->isDoubleTy()) return "__longlong_as_double((long long)" + expr(x) + ")";
    need("bitcast");
    return "tsr_bitcast<" + toType + ">(" + expr(x) + ")";
  default:
    failInstruction(inst);
  }
}

std::string Printer::gep(const GetElementPtrInst &inst) {
  if (inst.getType()->isVectorTy()) failInstruction(inst);
  int64_t constant = 0;
  std::string terms;
  for (gep_type_iterator it = gep_type_begin(inst), end = gep_type_end(inst); it != end; ++it) {
    const Value *index = it.getOperand();
    if (StructType *st = it.getStructTypeOrNull()) {
      constant += static_cast<int64_t>(dl_.getStructLayout(st)->getElementOffset(
          static_cast<unsigned>(cast<ConstantInt>(index)->getZExtValue())));
      continue;
    }
    const int64_t stride = static_cast<int64_t>(it.getSequentialElementStride(dl_).getFixedValue());
    if (auto *c = dyn_cast<ConstantInt>(index)) {
      constant += c->getSExtValue() * stride;
      continue;
    }
    const unsigned bits = intBits(index->getType());
    std::string term = bits == 64 ? "(long long)" + expr(index) : "(long long)(" + signedType(bits) + ")" + expr(index);
    terms += " + " + (stride == 1 ? term : term + " * " + std::to_string(stride));
  }
  std::string out = expr(inst.getPointerOperand()) + terms;
  if (constant > 0) out += " + " + std::to_string(constant);
  if (constant < 0) out += " - " + std::to_string(-constant);
  return out;
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

std::string Printer::rhs(const Instruction &inst) {
  if (auto *b = dyn_cast<BinaryOperator>(&inst)) return binary(*b);
  if (auto *c = dyn_cast<CmpInst>(&inst)) return compare(*c);
  if (auto *c = dyn_cast<CastInst>(&inst)) return castExpr(*c);
  if (auto *g = dyn_cast<GetElementPtrInst>(&inst)) return gep(*g);
  switch (inst.getOpcode()) {
  case Instruction::FNeg: {
    Type *t = inst.getType();
    if (t->isVectorTy()) failInstruction(inst);
    if (isHalfLike(t)) return "(" + cType(t) + ")(" + expr(inst.getOperand(0)) + " ^ 0x8000)";
    return "-" + expr(inst.getOperand(0));
  }
  case Instruction::Select:
    if (inst.getOperand(0)->getType()->isVectorTy()) failInstruction(inst);
    return expr(inst.getOperand(0)) + " ? " + expr(inst.getOperand(1)) + " : " + expr(inst.getOperand(2));
  case Instruction::Freeze:
    return expr(inst.getOperand(0));
  case Instruction::ExtractElement: {
    auto &e = cast<ExtractElementInst>(inst);
    return expr(e.getVectorOperand()) + ".e[" + index(e.getIndexOperand()) + "]";
  }
  case Instruction::Load: {
    auto &load = cast<LoadInst>(inst);
    if (load.isAtomic()) failInstruction(inst);
    Type *t = load.getType();
    if (t->isVectorTy() && load.getAlign().value() < dl_.getTypeAllocSize(t))
      fail("vector load with less than its size's alignment (" + printed(&inst) + ")");
    return fromBits(std::string("*(") + (load.isVolatile() ? "volatile " : "") + "const " + bitsType(t) + " *)" +
                        expr(load.getPointerOperand()),
                    t);
  }
  case Instruction::Call: {
    auto &c = cast<CallInst>(inst);
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
  default:
    failInstruction(inst);
  }
}

void Printer::inlineAsm(const CallInst &call) {
  const auto *ia = cast<InlineAsm>(call.getCalledOperand());
  InlineAsm::ConstraintInfoVector constraints = ia->ParseConstraints();
  struct Output {
    std::string code, var;
    const Value *tied = nullptr;
  };
  struct Input {
    std::string code;
    const Value *value;
    int tiedTo = -1;
  };
  std::vector<Output> outputs;
  std::vector<Input> inputs;
  bool clobbersMemory = false;
  unsigned argument = 0;
  for (const InlineAsm::ConstraintInfo &c : constraints) {
    if (c.Type == InlineAsm::isClobber) {
      clobbersMemory = clobbersMemory || (c.Codes.size() == 1 && c.Codes[0] == "{memory}");
      continue;
    }
    if (c.isIndirect || c.isMultipleAlternative || c.Codes.size() != 1 || c.Type == InlineAsm::isLabel)
      fail("inline asm constraint string '" + ia->getConstraintString() + "'");
    if (c.Type == InlineAsm::isOutput) {
      outputs.push_back({c.Codes[0], ""});
    } else {
      Input in{c.Codes[0], call.getArgOperand(argument++)};
      if (!in.code.empty() && std::all_of(in.code.begin(), in.code.end(), ::isdigit)) in.tiedTo = std::stoi(in.code);
      inputs.push_back(in);
    }
  }
  // Output variables: the call's own local, or one per field of its struct.
  if (outputs.size() == 1 && !call.getType()->isStructTy()) outputs[0].var = names_.at(&call);
  else if (!outputs.empty()) {
    const std::vector<std::string> &vars = asmOutputs_.at(&call);
    if (vars.size() != outputs.size()) fail("inline asm with mismatched outputs (" + printed(&call) + ")");
    for (size_t i = 0; i < outputs.size(); ++i) outputs[i].var = vars[i];
  }
  // CUDA operand numbers: outputs first, then the inputs not tied to an output.
  const unsigned numOutputs = static_cast<unsigned>(outputs.size());
  std::vector<int> cudaIndex(numOutputs + inputs.size(), -1);
  std::vector<int> predicate(numOutputs + inputs.size(), -1); // "b" operands: index of their .pred register
  for (unsigned i = 0; i < numOutputs; ++i) cudaIndex[i] = static_cast<int>(i);
  unsigned next = numOutputs, predicates = 0;
  std::string inputList, prologue;
  for (size_t j = 0; j < inputs.size(); ++j) {
    Input &in = inputs[j];
    const unsigned llvmIndex = numOutputs + static_cast<unsigned>(j);
    if (in.tiedTo >= 0) {
      if (in.tiedTo >= static_cast<int>(numOutputs)) fail("inline asm tied operand '" + in.code + "'");
      outputs[in.tiedTo].tied = in.value;
      cudaIndex[llvmIndex] = in.tiedTo;
      continue;
    }
    std::string code = in.code, value = expr(in.value);
    Type *t = in.value->getType();
    if (code == "b") { // a predicate: passed as a 32-bit integer and turned into a .pred inside
      predicate[llvmIndex] = static_cast<int>(predicates);
      prologue += "setp.ne.b32 tsr_p" + std::to_string(predicates++) + ", %" + std::to_string(next) + ", 0;\n\t";
      code = "r";
      value = "(unsigned int)" + value;
    } else if (t->isPointerTy()) {
      if (code != "l") fail("inline asm pointer operand with constraint '" + code + "'");
      value = t->getPointerAddressSpace() == 3 ? "(unsigned long long)__cvta_generic_to_shared(" + value + ")"
                                               : "(unsigned long long)" + value;
    } else if (code != "r" && code != "h" && code != "l" && code != "f" && code != "d" && code != "n") {
      fail("inline asm constraint '" + code + "'");
    }
    cudaIndex[llvmIndex] = static_cast<int>(next++);
    inputList += std::string(inputList.empty() ? "" : ", ") + "\"" + code + "\"(" + value + ")";
  }
  std::string outputList;
  for (Output &o : outputs) {
    std::string code = o.code; // ParseConstraints took the '=' (and an early-clobber '&') off
    if (code != "r" && code != "h" && code != "l" && code != "f" && code != "d")
      fail("inline asm output constraint '" + o.code + "'");
    if (o.tied) {
      line(o.var + " = " + expr(o.tied) + ";");
      code = "+" + code;
    } else {
      code = "=" + code;
    }
    outputList += std::string(outputList.empty() ? "" : ", ") + "\"" + code + "\"(" + o.var + ")";
  }
  // The template: $N -> %N (renumbered), $$ -> $, % -> %%.
  const std::string &text = ia->getAsmString();
  std::string body;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '%') {
      body += "%%";
      continue;
    }
    if (c != '$') {
      body += c;
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '$') {
      body += '$';
      ++i;
      continue;
    }
    size_t start = i + 1;
    const bool braced = start < text.size() && text[start] == '{';
    if (braced) ++start;
    size_t end = start;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
    if (end == start || (braced && (end >= text.size() || text[end] != '}')))
      fail("inline asm template '" + text + "'");
    const unsigned operand = static_cast<unsigned>(std::stoul(text.substr(start, end - start)));
    if (operand >= cudaIndex.size()) fail("inline asm operand $" + std::to_string(operand));
    body += predicate[operand] >= 0 ? "tsr_p" + std::to_string(predicate[operand])
                                     : "%" + std::to_string(cudaIndex[operand]);
    i = braced ? end : end - 1;
  }
  if (predicates) {
    std::string declare = "{\n\t.reg .pred ";
    for (unsigned p = 0; p < predicates; ++p) declare += (p ? ", tsr_p" : "tsr_p") + std::to_string(p);
    body = declare + ";\n\t" + prologue + body + "\n\t}";
  }
  // Pure asm (no side effects, no memory) may be moved, merged or dropped; anything
  // touching memory stays where it is.
  bool touchesMemory = ia->hasSideEffects() || clobbersMemory || !call.doesNotAccessMemory();
  if (touchesMemory && !ia->hasSideEffects() && !clobbersMemory && !call.onlyReadsMemory()) {
    // No attributes: trust the instruction (our lowering's convention).
    touchesMemory = false;
    for (const char *op : {"ld.", "st.", "atom.", "red.", "ldmatrix", "stmatrix", "cp.", "bar.", "barrier", "fence",
                           "membar", "shfl", "vote", "prefetch"})
      touchesMemory = touchesMemory || text.find(op) != std::string::npos;
  }
  std::string statement = std::string("asm") + (touchesMemory ? " volatile" : "") + "(" + quoted(body);
  const std::string clobbers = clobbersMemory ? "\"memory\"" : "";
  if (!outputList.empty() || !inputList.empty() || !clobbers.empty()) statement += " : " + outputList;
  if (!inputList.empty() || !clobbers.empty()) statement += " : " + inputList;
  if (!clobbers.empty()) statement += " : " + clobbers;
  line(statement + ");");
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

void Printer::statement(const Instruction &inst) {
  switch (inst.getOpcode()) {
  case Instruction::PHI:
  case Instruction::ExtractValue: // named after the asm output it reads
  case Instruction::Alloca:       // a buffer declared at the top
    return;
  case Instruction::Store: {
    auto &store = cast<StoreInst>(inst);
    if (store.isAtomic()) failInstruction(inst);
    Type *t = store.getValueOperand()->getType();
    if (t->isVectorTy() && store.getAlign().value() < dl_.getTypeAllocSize(t))
      fail("vector store with less than its size's alignment (" + printed(&inst) + ")");
    line(std::string("*(") + (store.isVolatile() ? "volatile " : "") + bitsType(t) + " *)" +
         expr(store.getPointerOperand()) + " = " + toBits(store.getValueOperand()) + ";");
    return;
  }
  case Instruction::InsertElement: {
    auto &ins = cast<InsertElementInst>(inst);
    const std::string &name = names_.at(&inst);
    line(name + " = " + expr(ins.getOperand(0)) + ";");
    line(name + ".e[" + index(ins.getOperand(2)) + "] = " + expr(ins.getOperand(1)) + ";");
    return;
  }
  case Instruction::ShuffleVector: {
    auto &sh = cast<ShuffleVectorInst>(inst);
    const unsigned n = cast<FixedVectorType>(sh.getOperand(0)->getType())->getNumElements();
    std::string list;
    for (unsigned i = 0; i < sh.getShuffleMask().size(); ++i) {
      const int m = sh.getMaskValue(i);
      std::string e = m < 0 ? zero(cast<VectorType>(inst.getType())->getElementType())
                            : expr(sh.getOperand(m < static_cast<int>(n) ? 0 : 1)) + ".e[" +
                                  std::to_string(m % n) + "]";
      list += (i ? ", " : "") + e;
    }
    line(names_.at(&inst) + " = " + cType(inst.getType()) + "{{" + list + "}};");
    return;
  }
  case Instruction::Call:
    return callStatement(cast<CallInst>(inst));
  default:
    if (inst.isTerminator()) return terminator(inst);
    if (inst.getType()->isVoidTy() || inst.getType()->isStructTy()) failInstruction(inst);
    line(names_.at(&inst) + " = " + rhs(inst) + ";");
  }
}

void Printer::edgeCopies(const BasicBlock *from, const BasicBlock *to) {
  for (const PHINode &phi : to->phis()) line(phiIn_.at(&phi) + " = " + expr(phi.getIncomingValueForBlock(from)) + ";");
}

void Printer::jump(const BasicBlock *from, const BasicBlock *to, bool mayFallThrough) {
  edgeCopies(from, to);
  if (mayFallThrough && to == nextBlock_) return;
  gotoTargets_.insert(to);
  line("goto " + labels_.at(to) + ";");
}

void Printer::terminator(const Instruction &inst) {
  const BasicBlock *from = inst.getParent();
  if (auto *ret = dyn_cast<ReturnInst>(&inst)) {
    if (ret->getReturnValue()) failInstruction(inst);
    line("return;");
    return;
  }
  if (auto *br = dyn_cast<BranchInst>(&inst)) {
    if (br->isUnconditional()) return jump(from, br->getSuccessor(0), true);
    const BasicBlock *yes = br->getSuccessor(0), *no = br->getSuccessor(1);
    const bool copies = !yes->phis().empty() || !no->phis().empty();
    if (!copies) {
      gotoTargets_.insert(yes);
      line("if (" + expr(br->getCondition()) + ") goto " + labels_.at(yes) + ";");
      return jump(from, no, true);
    }
    line("if (" + expr(br->getCondition()) + ") {");
    std::string saved;
    std::swap(saved, out_);
    jump(from, yes, false);
    std::string thenPart;
    std::swap(thenPart, out_);
    jump(from, no, false);
    std::string elsePart;
    std::swap(elsePart, out_);
    out_ = saved;
    for (const std::string *part : {&thenPart, &elsePart}) {
      std::istringstream lines(*part);
      for (std::string l; std::getline(lines, l);) out_ += "  " + l + "\n";
      if (part == &thenPart) line("} else {");
    }
    line("}");
    return;
  }
  if (auto *sw = dyn_cast<SwitchInst>(&inst)) {
    line("switch (" + expr(sw->getCondition()) + ") {");
    for (auto &c : sw->cases()) {
      line("case " + expr(c.getCaseValue()) + ":");
      jump(from, c.getCaseSuccessor(), false);
    }
    line("default:");
    jump(from, sw->getDefaultDest(), false);
    line("}");
    return;
  }
  if (isa<UnreachableInst>(inst)) {
    line("__builtin_unreachable();");
    return;
  }
  failInstruction(inst);
}

// ---------------------------------------------------------------- the kernel

void Printer::nameValues() {
  for (const Argument &a : fn_.args()) names_[&a] = uniqueName(a.hasName() ? a.getName().str() : "arg", taken_);
  std::vector<const ExtractValueInst *> extracts;
  for (const BasicBlock &block : fn_) {
    labels_[&block] = uniqueName(block.hasName() ? block.getName().str() : "block", labelsTaken_);
    for (const Instruction &inst : block) {
      if (inst.getType()->isVoidTy()) continue;
      if (auto *e = dyn_cast<ExtractValueInst>(&inst)) {
        extracts.push_back(e);
        continue;
      }
      if (auto *alloca = dyn_cast<AllocaInst>(&inst)) {
        auto size = alloca->getAllocationSize(dl_);
        if (!size || size->isScalable()) failInstruction(inst);
        std::string name = localName(inst);
        storage_.push_back("__align__(" + std::to_string(std::max<uint64_t>(alloca->getAlign().value(), 8)) +
                           ") unsigned char " + name + "[" + std::to_string(size->getFixedValue()) + "];");
        names_[&inst] = name;
        continue;
      }
      if (auto *st = dyn_cast<StructType>(inst.getType())) {
        auto *c = dyn_cast<CallInst>(&inst);
        if (!c || !c->isInlineAsm()) failInstruction(inst);
        std::string base = localName(inst);
        std::vector<std::string> vars;
        for (unsigned i = 0; i < st->getNumElements(); ++i) {
          vars.push_back(uniqueName(base + "_" + std::to_string(i), taken_));
          declare(cType(st->getElementType(i)), vars.back());
        }
        asmOutputs_[&inst] = vars;
        continue;
      }
      std::string name = localName(inst);
      names_[&inst] = name;
      declare(cType(inst.getType()), name);
      if (auto *phi = dyn_cast<PHINode>(&inst)) {
        phiIn_[phi] = uniqueName(name + "_in", taken_);
        declare(cType(inst.getType()), phiIn_[phi]);
      }
    }
  }
  for (const ExtractValueInst *e : extracts) {
    auto it = asmOutputs_.find(e->getAggregateOperand());
    if (it == asmOutputs_.end() || e->getNumIndices() != 1 || e->getIndices()[0] >= it->second.size())
      failInstruction(*e);
    names_[e] = it->second[e->getIndices()[0]];
  }
}

std::string Printer::run() {
  const std::string stem = !kernel_.empty() && kernel_.back() == 'f' ? kernel_.substr(0, kernel_.size() - 1) : kernel_;
  if (reservedNames().count(kernel_) || kernel_.rfind("tsr_", 0) == 0 || kernel_.rfind("__", 0) == 0 ||
      cudaMathFunctions().count(kernel_) || cudaMathFunctions().count(stem))
    fail("kernel name (a C++ keyword or a name the generated code uses)");
  taken_.insert(kernel_);
  nameValues();

  // Parameters; 16-byte (or more) aligned pointers say so.
  std::string params, prologue;
  for (const Argument &a : fn_.args()) {
    const std::string &name = names_.at(&a);
    params += (params.empty() ? "" : ", ") + cType(a.getType()) + (a.getType()->isPointerTy() ? "" : " ") + name;
    if (a.getType()->isPointerTy())
      if (MaybeAlign align = a.getParamAlign(); align && align->value() >= 16)
        prologue += "  " + name + " = (unsigned char *)__builtin_assume_aligned(" + name + ", " +
                    std::to_string(align->value()) + ");\n";
  }

  // Blocks, in layout order.
  std::vector<std::pair<const BasicBlock *, std::string>> blocks;
  for (auto it = fn_.begin(); it != fn_.end(); ++it) {
    const BasicBlock &block = *it;
    auto next = std::next(it);
    nextBlock_ = next == fn_.end() ? nullptr : &*next;
    out_.clear();
    for (const PHINode &phi : block.phis()) line(names_.at(&phi) + " = " + phiIn_.at(&phi) + ";");
    for (const Instruction &inst : block) statement(inst);
    blocks.emplace_back(&block, out_);
  }

  // Launch bounds: the lowering's maxntidx and maxnreg annotations.
  unsigned maxThreads = 0, maxRegisters = 0;
  if (const NamedMDNode *annotations = module_.getNamedMetadata("nvvm.annotations")) {
    for (const MDNode *node : annotations->operands()) {
      if (node->getNumOperands() != 3) continue;
      auto *target = mdconst::dyn_extract_or_null<Function>(node->getOperand(0));
      auto *key = dyn_cast<MDString>(node->getOperand(1));
      auto *value = mdconst::dyn_extract_or_null<ConstantInt>(node->getOperand(2));
      if (target != &fn_ || !key || !value) continue;
      if (key->getString() == "maxntidx") maxThreads = static_cast<unsigned>(value->getZExtValue());
      if (key->getString() == "maxnreg") maxRegisters = static_cast<unsigned>(value->getZExtValue());
    }
  }

  std::ostringstream os;
  os << "// CUDA C++ for NVRTC, generated by tessera from kernel '" << kernel_ << "' (docs/nvrtc.md).\n";
  bool any = false;
  for (const Helper &h : kHelpers)
    if (helpers_.count(h.name)) {
      os << (any ? "" : "\n") << h.text;
      any = true;
    }
  for (const std::string &e : externs_) os << (any ? "" : "\n") << e, any = true;
  if (!globalDecls_.empty()) os << "\n";
  for (const std::string &g : globalDecls_) os << g << "\n";
  os << "\nextern \"C\" __global__ void ";
  // CUDA C++ takes one or the other; with a register cap the thread bound adds nothing.
  if (maxRegisters) os << "__maxnreg__(" << maxRegisters << ") ";
  else if (maxThreads) os << "__launch_bounds__(" << maxThreads << ") ";
  os << kernel_ << "(" << params << ") {\n";
  // Locals, grouped by type in order of first appearance.
  std::vector<std::string> typeOrder;
  std::map<std::string, std::vector<std::string>> byType;
  for (const auto &[type, name] : locals_) {
    if (!byType.count(type)) typeOrder.push_back(type);
    byType[type].push_back(name);
  }
  for (const std::string &type : typeOrder) {
    std::string text = "  " + type + (type.back() == '*' ? "" : " ");
    size_t width = text.size();
    const std::vector<std::string> &names = byType[type];
    for (size_t i = 0; i < names.size(); ++i) {
      std::string item = (type.back() == '*' && i ? "*" : "") + names[i] + (i + 1 < names.size() ? ", " : ";");
      if (width + item.size() > 110) {
        text += "\n     ";
        width = 5;
      }
      text += item;
      width += item.size();
    }
    os << text << "\n";
  }
  for (const std::string &s : storage_) os << "  " << s << "\n";
  os << prologue;
  for (const auto &[block, text] : blocks) {
    if (gotoTargets_.count(block)) os << labels_.at(block) << ":\n";
    os << text;
  }
  os << "}\n";
  return os.str();
}

} // namespace

std::string emitCuda(const Module &module, const std::string &kernelName) {
  const Function *fn = module.getFunction(kernelName);
  if (!fn || fn->isDeclaration())
    throw std::runtime_error("NVRTC back-end: no kernel '" + kernelName + "' in the lowered module");
  return Printer(module, *fn).run();
}

} // namespace tessera::codegen
