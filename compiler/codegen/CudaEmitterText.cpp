// The fixed text of the NVRTC back-end's output (CudaEmitterInternal.h): the
// helpers a kernel may use, the names its values must not take, and how
// numbers and strings are spelled.
#include "compiler/codegen/CudaEmitterInternal.h"

#include <llvm/Support/raw_ostream.h>

#include <cstdio>

namespace tessera::codegen::cuda {

using namespace llvm;

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

namespace {

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
    // A CUtensorMap kernel parameter (docs/tma.md): 128 opaque bytes, 64-byte aligned.
    {"tensor_map", "struct __align__(64) tsr_tensor_map { unsigned long long words[16]; };\n"},
};

} // namespace

ArrayRef<Helper> helperDefinitions() { return kHelpers; }

// Helpers that use others bring them: tsr_f64_to_bf16 ends in tsr_f32_to_bf16, and
// every f16/bf16 helper takes or returns the tsr_f16/tsr_bf16 typedefs.
void Printer::need(const std::string &helper) {
  helpers_.insert(helper);
  if (helper == "f64_bf16") helpers_.insert("f32_bf16");
  if (helper.find("f16") != std::string::npos || helper.find("bf16") != std::string::npos) helpers_.insert("f16");
}

} // namespace tessera::codegen::cuda
