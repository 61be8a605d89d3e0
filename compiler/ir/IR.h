// The block IR: a kernel is one Function whose body is a Block of Operations
// in SSA form. Control flow is structured: for/if/while own regions (each a
// single Block) and pass values through yield/condition terminators.
//
// Ownership: a Block owns its Operations and its arguments; an Operation owns
// its results and regions. Values are referenced by raw pointer.
#pragma once

#include "compiler/ir/Layout.h"
#include "compiler/ir/Types.h"
#include "compiler/support/Diagnostics.h"

#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace tessera::ir {

enum class OpCode : uint16_t {
#define OP(name, mnemonic, traits) name,
#include "compiler/ir/Ops.def"
#undef OP
};
const char *mnemonic(OpCode code);

// What an op does, as Ops.def lists it (the meaning of each trait is written there).
namespace op_trait {
enum : uint32_t {
  None = 0,
  Pure = 1u << 0,
  Elementwise = 1u << 1,
  Arithmetic = 1u << 2,
  ReadsMemory = 1u << 3,
  WritesMemory = 1u << 4,
  WritesSharedMemory = 1u << 5,
  Allocates = 1u << 6,
  Frees = 1u << 7,
  HasRegions = 1u << 8,
  Terminator = 1u << 9,
};
} // namespace op_trait

constexpr uint32_t opTraits(OpCode code) {
  using namespace op_trait;
  switch (code) {
#define OP(name, mnemonic, traits) case OpCode::name: return traits;
#include "compiler/ir/Ops.def"
#undef OP
  }
  return None;
}
constexpr bool opHasTrait(OpCode code, uint32_t trait) { return (opTraits(code) & trait) == trait; }
constexpr bool opIsPure(OpCode code) { return opHasTrait(code, op_trait::Pure); }
constexpr bool opIsElementwise(OpCode code) { return opHasTrait(code, op_trait::Elementwise); }
constexpr bool opIsArithmetic(OpCode code) { return opHasTrait(code, op_trait::Arithmetic); }
constexpr bool opReadsMemory(OpCode code) { return opHasTrait(code, op_trait::ReadsMemory); }
constexpr bool opWritesMemory(OpCode code) { return opHasTrait(code, op_trait::WritesMemory); }
constexpr bool opWritesSharedMemory(OpCode code) { return opHasTrait(code, op_trait::WritesSharedMemory); }
constexpr bool opAllocates(OpCode code) { return opHasTrait(code, op_trait::Allocates); }
constexpr bool opFrees(OpCode code) { return opHasTrait(code, op_trait::Frees); }
constexpr bool opHasRegions(OpCode code) { return opHasTrait(code, op_trait::HasRegions); }
constexpr bool opIsTerminator(OpCode code) { return opHasTrait(code, op_trait::Terminator); }
// Whether all an op does is known from its traits: it is pure, only reads, allocates or ends a
// region. Anything else (no trait at all included) may have any effect.
constexpr bool opEffectsKnown(OpCode code) {
  using namespace op_trait;
  return (opTraits(code) & (Pure | ReadsMemory | WritesMemory | Allocates | Terminator)) != 0;
}

class Operation;
class Block;

struct Value {
  Type type;
  LayoutRef layout;            // set by the tiling pass, for blocks only
  Operation *definingOp = nullptr; // null for block arguments
  Block *ownerBlock = nullptr;     // set for block arguments
  unsigned index = 0;          // result index or argument index
  std::string nameHint;        // for the printer: parameter and loop variable names
};

using Attribute = std::variant<int64_t, double, std::string, std::vector<int64_t>>;

class Block {
public:
  Operation *parentOp = nullptr; // null for a function body
  std::vector<std::unique_ptr<Value>> args;
  std::list<std::unique_ptr<Operation>> ops;

  Value *addArgument(Type type, std::string nameHint = "");
  Operation *terminator() const { return ops.empty() ? nullptr : ops.back().get(); }
};

class Operation {
public:
  OpCode code;
  SourceLoc loc;
  std::vector<Value *> operands;
  std::vector<std::unique_ptr<Value>> results;
  std::map<std::string, Attribute> attrs; // printed in key order
  std::vector<std::unique_ptr<Block>> regions;
  Block *parent = nullptr;

  Operation(OpCode code, SourceLoc loc) : code(code), loc(loc) {}

  Value *result(unsigned i = 0) const { return results.at(i).get(); }
  Value *operand(unsigned i) const { return operands.at(i); }
  Block *region(unsigned i) const { return regions.at(i).get(); }

  bool hasAttr(const std::string &key) const { return attrs.count(key) != 0; }
  int64_t intAttr(const std::string &key) const;
  double floatAttr(const std::string &key) const;
  const std::string &stringAttr(const std::string &key) const;
  const std::vector<int64_t> &arrayAttr(const std::string &key) const;
  bool isFloatConstant() const; // a Constant whose value attr is a double

  // Optional operands of load/store.
  Value *loadMask() const;
  Value *loadOther() const;
  Value *storeMask() const;
};

// A float `div` with rounding = "full" is PTX's div.full.f32: Triton's `/` of f32 (and tl.fdiv's
// default), approximate (at most 2 ulp) and much cheaper than the IEEE div.rn the op has without it.
inline std::map<std::string, Attribute> fullRangeDivision() { return {{"rounding", std::string("full")}}; }
inline bool isFullRangeDivision(const Operation &op) {
  auto it = op.attrs.find("rounding");
  return op.code == OpCode::Div && it != op.attrs.end() && std::get_if<std::string>(&it->second) &&
         std::get<std::string>(it->second) == "full";
}

struct Param {
  std::string name;
  Type type;
  int divisibility = 1;   // known divisibility (16 from the ":16" hint), pointers in bytes
  bool equalsOne = false; // int known to be 1 (Triton's specialisation)
};

struct Function {
  std::string name;
  std::vector<Param> params; // body.args[i] is params[i]
  Block body;
  unsigned numWarps = 4;
  std::string sourcePath;
  // Set by codegen-side analysis: shared memory the kernel needs, in bytes.
  unsigned sharedBytes = 0;
};

// Creates operations at the end of a block (or before a given op).
class Builder {
public:
  explicit Builder(Block *block) : block_(block), insertBefore_(block->ops.end()) {}
  void setInsertionPoint(Block *block, std::list<std::unique_ptr<Operation>>::iterator before) {
    block_ = block;
    insertBefore_ = before;
  }
  void setInsertionPointToEnd(Block *block) { block_ = block; insertBefore_ = block->ops.end(); }
  Block *block() const { return block_; }
  std::list<std::unique_ptr<Operation>>::iterator insertionPoint() const { return insertBefore_; }
  void setLoc(SourceLoc loc) { loc_ = loc; }
  SourceLoc loc() const { return loc_; }

  // Generic creation: resultTypes may be empty.
  Operation *create(OpCode code, std::vector<Value *> operands, std::vector<Type> resultTypes,
                    std::map<std::string, Attribute> attrs = {}, unsigned numRegions = 0);
  // Single-result convenience.
  Value *op(OpCode code, std::vector<Value *> operands, Type resultType,
            std::map<std::string, Attribute> attrs = {});

  Value *intConstant(int64_t value, Type type);
  Value *floatConstant(double value, Type type);

private:
  Block *block_;
  std::list<std::unique_ptr<Operation>>::iterator insertBefore_;
  SourceLoc loc_;
};

// Walks every operation (pre-order, nested regions included).
void walk(Block &block, const std::function<void(Operation &)> &fn);
// Replaces every use of `from` by `to` inside `block` (recursively).
void replaceAllUsesWith(Block &block, Value *from, Value *to);
// The same, except in `keep` (the op that computes `to` from `from`).
void replaceUsesExcept(Block &block, Value *from, Value *to, const Operation *keep);
// How many operands inside `block` (recursively) are `v`.
unsigned countUses(Block &block, const Value *v);
// Whether `op`, or an op in its regions, has `v` as an operand.
bool readsValue(Operation &op, const Value *v);
// Ops.def's Pure trait, refined where one op decides: an inline_asm with pure = 0
// (tl.inline_asm_elementwise(..., is_pure=False)) may read and write memory; a map_elementwise
// is pure when every op in its region is.
bool isPure(const Operation &op);
// Whether dead-code-elimination must keep `op` even when its results are unused: it writes
// memory, has unknown effects, has regions (not Pure ones) or ends a region; a volatile load too.
bool hasSideEffects(const Operation &op);
// Whether `op` may change memory that a later load reads: it writes memory or its effects are
// unknown (barriers, debug ops, waits); an op with regions asks the ops inside.
bool mayWriteMemory(const Operation &op);
// A dot laid out for Hopper's wgmma (its result in the mma v3 layout).
bool isWgmmaDot(const Operation &op);
// A zero constant, possibly splat, broadcast or converted to another layout.
bool isZeroConstant(const Value *v);
// `op`'s place in its parent block's list (for inserting before/after it or erasing it).
std::list<std::unique_ptr<Operation>>::iterator positionOf(Operation &op);
// Elements of type `t` that one operand of an inline_asm op with `pack` holds: types narrower
// than 32 bits are packed into one 32-bit register (16-bit when pack leaves room for two bytes).
int64_t inlineAsmElementsPerRegister(const Type &t, int64_t pack);
// Warps the kernel runs besides fn.numWarps: a warp_specialize op's producer (0 without one).
unsigned producerWarps(const Function &fn);
// Consumer warpgroups of fn.numWarps each that take turns over a persistent kernel's tiles
// (the warp_specialize op's consumer_groups, "ping-pong"; 1 without one).
unsigned consumerGroups(const Function &fn);
// The warps a launch runs: fn.numWarps per consumer group, and the producer's.
unsigned launchedWarps(const Function &fn);

// The canonical text form (stable: golden tests compare it).
std::string print(const Function &fn);
// Checks structural and type invariants; returns an empty string when valid,
// else a description of the first problem.
std::string verify(const Function &fn);

} // namespace tessera::ir
