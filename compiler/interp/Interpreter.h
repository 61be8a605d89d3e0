// The host interpreter: runs a kernel's block IR on the CPU, one program of
// the grid after the other, with host memory (numpy arrays, torch CPU
// tensors) behind its pointer arguments. It is the reference semantics of
// every op in compiler/ir/Ops.def and matches the GPU code generator
// (compiler/codegen/) op by op:
//
//   * integers wrap to their width; div/rem are C's (truncating; the
//     remainder has the dividend's sign); shr is arithmetic for signed types;
//     shift amounts >= the width give 0 (or the sign for shr), as PTX clamps;
//     integer division by zero gives all ones (rem: the dividend), which the
//     GPU leaves unspecified;
//   * floats are rounded to their element type after every op (f16/bf16
//     add/mul round once, as the GPU's f16 instructions do); exp/log/... are
//     computed exactly and rounded (the GPU's f32 exp/log are approximate);
//     max/min are maxnum/minnum (a NaN operand yields the other one); cmp is
//     ordered except `ne`;
//   * float → int casts truncate, saturate to the target's range, NaN → 0
//     (PTX cvt.rzi); → i1 is `!= 0`; ints convert with the source's
//     signedness (i1 is unsigned);
//   * a masked-off load yields `other` (0 without one) and touches nothing.
//
// Every unmasked load and store is checked: the address must be aligned and
// lie inside the argument buffer the pointer was computed from (or, for a
// pointer of unknown origin, inside some argument's buffer); a store must
// target a writable buffer. Violations throw InterpreterError with the op's
// source location, the element, the argument and the program id.
#pragma once

#include "compiler/ir/IR.h"
#include "compiler/support/Diagnostics.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tessera::interp {

struct Grid {
  uint32_t x = 1, y = 1, z = 1;
};

// One runtime argument, in the order of Function::params.
struct ArgValue {
  // Scalars: the value's bits as the parameter's type (little-endian, the
  // same bytes a GPU launch passes; an i1 is 0 or 1).
  uint64_t bits = 0;
  // Pointers: `bits` is the address the kernel sees; loads and stores
  // through it must stay in [begin, end) (a strided view's whole span).
  uint64_t begin = 0, end = 0;
  bool writable = true;
  std::string description; // for messages, e.g. "16 x f32"; may be empty

  static ArgValue scalar(uint64_t bits) {
    ArgValue a;
    a.bits = bits;
    return a;
  }
  static ArgValue buffer(const void *data, uint64_t bytes, bool writable = true) {
    ArgValue a;
    a.bits = reinterpret_cast<uint64_t>(data);
    a.begin = a.bits;
    a.end = a.bits + bytes;
    a.writable = writable;
    return a;
  }
};

struct Options {
  // The kernel's source: errors quote its line with a caret. Without it
  // they name Function::sourcePath and the line number only.
  std::shared_ptr<const SourceFile> file;
};

// A run-time error found by the interpreter: an out-of-bounds, misaligned
// or read-only access, or an op it cannot run. what() is formatted like a
// compile error: "file:line:col: error: ..." + the source line + a caret.
class InterpreterError : public CompileError {
public:
  using CompileError::CompileError;
};

// Runs `fn` (block IR before layout assignment; later IR works too:
// convert_layout is the identity) once per program id of `grid`, in order.
// Throws InterpreterError, or std::invalid_argument when `args` do not fit
// fn's parameters.
void run(const ir::Function &fn, Grid grid, const std::vector<ArgValue> &args, const Options &options = {});

// The ops of Ops.def the interpreter executes (all of them, when it is up to
// date; tests compare this list with Ops.def).
bool supports(ir::OpCode code);

} // namespace tessera::interp
