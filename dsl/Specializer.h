// The specialiser turns the AST of a kernel file plus a signature (argument
// types and constexpr values) into block IR: constexprs are folded,
// tl.static_range is unrolled, calls to other @jit functions are inlined,
// Triton's type promotion and broadcasting rules are applied, and type and
// shape errors are reported at their source location.
#pragma once

#include "compiler/ir/IR.h"
#include "dsl/AST.h"
#include "dsl/ConstInt.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tessera {

// A compile-time Python value: what a tl.constexpr parameter or global holds.
struct ConstexprValue {
  // Runtime: a leaf of a tuple argument that is passed at run time (a tensor, an int, a float, a bool); its
  // type is the next entry of the signature (Triton flattens a tuple argument into its leaves).
  enum class Kind { Int, Float, Bool, None, String, DType, Tuple, Enum, Runtime };
  Kind kind = Kind::None;
  ConstInt intValue = 0; // Int (exact up to 127 bits, dsl/ConstInt.h), Bool (0/1), Enum (the member's value)
  double floatValue = 0;
  std::string stringValue; // String; DType: the element type's name ("fp16", "int32", ...);
                           // Enum: the member, "PropagateNan.ALL"
  std::vector<ConstexprValue> elems; // Tuple (a tuple or list argument, `out_shape=(8, 8)`)
  std::vector<std::string> fields;   // Tuple: a NamedTuple's field names (empty: a plain tuple)

  static ConstexprValue ofInt(ConstInt v) { ConstexprValue c; c.kind = Kind::Int; c.intValue = v; return c; }
  static ConstexprValue ofFloat(double v) { ConstexprValue c; c.kind = Kind::Float; c.floatValue = v; return c; }
  static ConstexprValue ofBool(bool v) { ConstexprValue c; c.kind = Kind::Bool; c.intValue = v; return c; }
  static ConstexprValue ofString(std::string s) { ConstexprValue c; c.kind = Kind::String; c.stringValue = std::move(s); return c; }
  static ConstexprValue none() { return {}; }
  static ConstexprValue ofTuple(std::vector<ConstexprValue> e) { ConstexprValue c; c.kind = Kind::Tuple; c.elems = std::move(e); return c; }
  static ConstexprValue runtime() { ConstexprValue c; c.kind = Kind::Runtime; return c; }
  // How many signature entries this value takes: a Runtime leaf one, a tuple the sum of its elements'.
  size_t runtimeLeaves() const;
  // A member of a triton.language enum: tl.PropagateNan.NONE / ALL (Triton's values 0 and 0xFFFF).
  static std::optional<ConstexprValue> ofEnumMember(std::string_view enumName, std::string_view member);
  // A dtype (`OUT_DTYPE=tl.float16`), kept as its triton.language name ("float16"); `name`
  // is any spelling ir::parseScalarType accepts ("fp16", "float16", ...).
  static ConstexprValue ofDType(ir::ScalarType type);
  static std::optional<ConstexprValue> ofDTypeName(std::string_view name);
  // Parses "1024", "0.5", "True", "None", "tl.float16" (a dtype), "tl.PropagateNan.ALL", "(8, 8)"
  // (a tuple), anything else as a string. (A Runtime leaf prints as "<runtime>" and does not parse.)
  static ConstexprValue parse(const std::string &text);
  std::string str() const; // Python's repr
  bool operator==(const ConstexprValue &o) const = default;
};

// The type of one runtime (non-constexpr) argument.
struct ArgSpec {
  ir::Type type;          // scalar or pointer
  int divisibility = 1;   // ":16" hint: ints divisible by 16, pointers 16-byte aligned
  bool equalsOne = false; // int known to be 1: specialised to the constant 1
};

struct Specialization {
  std::string kernelName;
  // One per non-constexpr parameter, in order; a parameter given a tuple (a Tuple in `constexprs`) takes
  // one per Runtime leaf of it, depth first, and one given None takes none.
  std::vector<ArgSpec> args;
  std::map<std::string, ConstexprValue> constexprs;
  unsigned numWarps = 4;
  // The GPU compiled for ("sm_90a"); empty in the interpreter, where tl.target_info.is_cuda() is False
  // (Triton's target_info without an active CUDA driver).
  std::string arch;
  bool debug = false; // tl.device_assert (and `assert` on runtime values) checks on the device
};

// Throws CompileError (with location) on any user error.
std::unique_ptr<ir::Function> specialize(const ast::Module &module, const Specialization &spec);

// Names of the @jit functions defined in a file (for listings and errors).
std::vector<std::string> jitFunctionNames(const ast::Module &module);

// The names of kernel `kernelName`'s signature entries, in order (not its constexprs, nor a parameter
// given None; a tuple's runtime leaves as "name_0", "name_1_0", ...); empty when the module has no
// such function.
std::vector<std::string> runtimeParameterNames(const ast::Module &module, const std::string &kernelName,
                                               const std::map<std::string, ConstexprValue> &constexprs);

} // namespace tessera
