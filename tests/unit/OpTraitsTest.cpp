// The op traits of compiler/ir/Ops.def and the IR's questions built on them
// (hasSideEffects: what dead-code-elimination keeps; mayWriteMemory: what stops
// a load from being repeated later).
#include "compiler/ir/IR.h"

#include <gtest/gtest.h>

using namespace tessera::ir;

namespace {

std::vector<OpCode> everyOp() {
  return {
#define OP(name, text, traits) OpCode::name,
#include "compiler/ir/Ops.def"
#undef OP
  };
}

} // namespace

TEST(OpTraits, ImpliedTraitsHold) {
  for (OpCode code : everyOp()) {
    const char *name = mnemonic(code);
    if (opIsArithmetic(code)) EXPECT_TRUE(opIsElementwise(code)) << name;
    if (opIsElementwise(code)) EXPECT_TRUE(opIsPure(code)) << name;
    if (opIsPure(code)) {
      EXPECT_FALSE(opReadsMemory(code) || opWritesMemory(code) || opAllocates(code) || opFrees(code)) << name;
      EXPECT_FALSE(opIsTerminator(code)) << name;
    }
    if (opWritesSharedMemory(code)) EXPECT_TRUE(opWritesMemory(code)) << name;
  }
}

TEST(OpTraits, FusionAndLayoutAssignmentElementwiseDiffer) {
  // Layout assignment runs every elementwise op in its operands' layout; fusion's chains
  // follow only the arithmetic ones (not a predicate, an address, a bitcast or a hint).
  for (OpCode code : {OpCode::Cmp, OpCode::AddPtr, OpCode::Bitcast, OpCode::Hint}) {
    EXPECT_TRUE(opIsElementwise(code)) << mnemonic(code);
    EXPECT_FALSE(opIsArithmetic(code)) << mnemonic(code);
  }
  for (OpCode code : {OpCode::Add, OpCode::Cast, OpCode::Select, OpCode::Libdevice, OpCode::Fma})
    EXPECT_TRUE(opIsArithmetic(code)) << mnemonic(code);
  for (OpCode code : {OpCode::Load, OpCode::Dot, OpCode::Reduce, OpCode::Broadcast})
    EXPECT_FALSE(opIsElementwise(code)) << mnemonic(code);
}

TEST(OpTraits, OpsWithoutTraitsAreTheSafeDefault) {
  Function fn;
  Builder b(&fn.body);
  for (OpCode code : {OpCode::Barrier, OpCode::Print, OpCode::Assume, OpCode::DotWait, OpCode::AsyncWait}) {
    Operation *op = b.create(code, {}, {});
    EXPECT_EQ(opTraits(code), op_trait::None) << mnemonic(code);
    EXPECT_FALSE(opIsPure(code)) << mnemonic(code);
    EXPECT_TRUE(hasSideEffects(*op)) << mnemonic(code);
    EXPECT_TRUE(mayWriteMemory(*op)) << mnemonic(code);
  }
}

TEST(OpTraits, SideEffectsAreWhatDeadCodeEliminationKeeps) {
  Function fn;
  Value *ptr = fn.body.addArgument(Type::ptr(ScalarType::F32), "p");
  Builder b(&fn.body);
  Operation *load = b.create(OpCode::Load, {ptr}, {Type(ScalarType::F32)}, {{"has_mask", int64_t(0)}});
  Operation *volatileLoad =
      b.create(OpCode::Load, {ptr}, {Type(ScalarType::F32)}, {{"has_mask", int64_t(0)}, {"volatile", int64_t(1)}});
  Operation *add = b.create(OpCode::Add, {load->result(), load->result()}, {Type(ScalarType::F32)});
  Operation *store = b.create(OpCode::Store, {ptr, add->result()}, {}, {{"has_mask", int64_t(0)}});
  Operation *alloc = b.create(OpCode::LocalAlloc, {}, {Type(ScalarType::F16).withShape({2, 16, 16})});
  Operation *dealloc = b.create(OpCode::LocalDealloc, {alloc->result()}, {});
  Operation *ret = b.create(OpCode::Return, {}, {});
  EXPECT_FALSE(hasSideEffects(*load));
  EXPECT_TRUE(hasSideEffects(*volatileLoad));
  EXPECT_FALSE(hasSideEffects(*add));
  EXPECT_TRUE(hasSideEffects(*store));
  EXPECT_FALSE(hasSideEffects(*alloc));
  EXPECT_TRUE(hasSideEffects(*dealloc));
  EXPECT_TRUE(hasSideEffects(*ret));
  EXPECT_FALSE(mayWriteMemory(*load));
  EXPECT_FALSE(mayWriteMemory(*add));
  EXPECT_TRUE(mayWriteMemory(*store));
  EXPECT_FALSE(mayWriteMemory(*ret));
}

TEST(OpTraits, AnOpWithRegionsWritesWhatItsOpsWrite) {
  Function fn;
  Value *ptr = fn.body.addArgument(Type::ptr(ScalarType::I32), "p");
  Builder b(&fn.body);
  const Type i32(ScalarType::I32);
  Value *lb = b.intConstant(0, i32), *ub = b.intConstant(4, i32), *step = b.intConstant(1, i32);
  Operation *pureLoop = b.create(OpCode::For, {lb, ub, step}, {}, {}, 1);
  Operation *storingLoop = b.create(OpCode::For, {lb, ub, step}, {}, {}, 1);
  for (Operation *loop : {pureLoop, storingLoop}) {
    Value *iv = loop->region(0)->addArgument(i32, "i");
    Builder body(loop->region(0));
    Value *twice = body.op(OpCode::Add, {iv, iv}, i32);
    if (loop == storingLoop) body.create(OpCode::Store, {ptr, twice}, {}, {{"has_mask", int64_t(0)}});
    body.create(OpCode::Yield, {}, {});
  }
  EXPECT_FALSE(mayWriteMemory(*pureLoop));
  EXPECT_TRUE(mayWriteMemory(*storingLoop));
  // Loops stay for dead-code-elimination either way (as before the traits).
  EXPECT_TRUE(hasSideEffects(*pureLoop));
  EXPECT_TRUE(hasSideEffects(*storingLoop));
}

TEST(OpTraits, SpecialRegistersAndMapElementwise) {
  Function fn;
  Value *ptr = fn.body.addArgument(Type::ptr(ScalarType::I32), "p");
  Builder b(&fn.body);
  // smid is pure (merged, removed when unused); globaltimer has unknown effects: read where written.
  Operation *smid = b.create(OpCode::SmId, {}, {Type(ScalarType::I32)});
  Operation *timer = b.create(OpCode::GlobalTimer, {}, {Type(ScalarType::I64)});
  EXPECT_TRUE(isPure(*smid));
  EXPECT_FALSE(hasSideEffects(*smid));
  EXPECT_FALSE(isPure(*timer));
  EXPECT_TRUE(hasSideEffects(*timer));
  EXPECT_TRUE(mayWriteMemory(*timer));
  // map_elementwise: pure exactly when the ops of its region are.
  auto map = [&](bool store) {
    Operation *op = b.create(OpCode::MapElementwise, {smid->result()}, {Type(ScalarType::I32)},
                             {{"pack", int64_t(1)}}, 1);
    Builder inner(op->region(0));
    Value *x = op->region(0)->addArgument(Type(ScalarType::I32), "x");
    Value *y = inner.op(OpCode::Add, {x, x}, Type(ScalarType::I32));
    if (store) inner.create(OpCode::Store, {ptr, y}, {}, {{"has_mask", int64_t(0)}});
    inner.create(OpCode::Yield, {y}, {});
    return op;
  };
  Operation *pure = map(false), *storing = map(true);
  EXPECT_TRUE(isPure(*pure));
  EXPECT_FALSE(hasSideEffects(*pure));
  EXPECT_FALSE(mayWriteMemory(*pure));
  EXPECT_FALSE(isPure(*storing));
  EXPECT_TRUE(hasSideEffects(*storing));
  EXPECT_TRUE(mayWriteMemory(*storing));
}
