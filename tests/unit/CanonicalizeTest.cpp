#include "compiler/passes/Canonicalize.h"
#include "compiler/passes/DeadCodeElimination.h"

#include <gtest/gtest.h>

using namespace tessera;
using namespace tessera::ir;

namespace {

size_t countOps(Function &fn, OpCode code) {
  size_t n = 0;
  walk(fn.body, [&](Operation &op) { n += op.code == code; });
  return n;
}

} // namespace

TEST(Canonicalize, FoldsIntegerArithmeticWithWrapAround) {
  Function fn;
  fn.name = "k";
  fn.params.push_back({"out", Type::ptr(ScalarType::I8)});
  Value *out = fn.body.addArgument(Type::ptr(ScalarType::I8), "out");
  Builder b(&fn.body);
  Value *a = b.intConstant(100, Type(ScalarType::I8));
  Value *c = b.intConstant(100, Type(ScalarType::I8));
  Value *sum = b.op(OpCode::Add, {a, c}, Type(ScalarType::I8));
  b.create(OpCode::Store, {out, sum}, {}, {{"has_mask", int64_t(0)}});
  b.create(OpCode::Return, {}, {});
  passes::canonicalize(fn);
  passes::eliminateDeadCode(fn);
  ASSERT_EQ(verify(fn), "");
  EXPECT_EQ(countOps(fn, OpCode::Add), 0u);
  // 100 + 100 wraps to -56 in i8.
  EXPECT_NE(print(fn).find("constant {value = -56} : i8"), std::string::npos) << print(fn);
}

TEST(Canonicalize, RemovesAddOfZeroAndSplatsOfConstants) {
  Function fn;
  fn.name = "k";
  fn.params.push_back({"out", Type::ptr(ScalarType::I32)});
  Value *out = fn.body.addArgument(Type::ptr(ScalarType::I32), "out");
  Builder b(&fn.body);
  Type block = Type(ScalarType::I32).withShape({32});
  Value *range = b.op(OpCode::MakeRange, {}, block, {{"start", int64_t(0)}, {"end", int64_t(32)}});
  Value *zero = b.intConstant(0, Type(ScalarType::I32));
  Value *zeros = b.op(OpCode::Splat, {zero}, block);
  Value *sum = b.op(OpCode::Add, {range, zeros}, block);
  Value *ptrs = b.op(OpCode::Splat, {out}, out->type.withShape({32}));
  Value *addr = b.op(OpCode::AddPtr, {ptrs, sum}, ptrs->type);
  b.create(OpCode::Store, {addr, sum}, {}, {{"has_mask", int64_t(0)}});
  b.create(OpCode::Return, {}, {});
  passes::canonicalize(fn);
  passes::eliminateDeadCode(fn);
  ASSERT_EQ(verify(fn), "");
  EXPECT_EQ(countOps(fn, OpCode::Add), 0u) << print(fn);
  EXPECT_EQ(countOps(fn, OpCode::Constant), 0u) << print(fn);
  EXPECT_EQ(countOps(fn, OpCode::Store), 1u);
}

TEST(DeadCodeElimination, KeepsStoresAndDropsUnusedLoads) {
  Function fn;
  fn.name = "k";
  fn.params.push_back({"p", Type::ptr(ScalarType::F32)});
  Value *p = fn.body.addArgument(Type::ptr(ScalarType::F32), "p");
  Builder b(&fn.body);
  b.op(OpCode::Load, {p}, Type(ScalarType::F32), {{"has_mask", int64_t(0)}, {"has_other", int64_t(0)}});
  Value *one = b.floatConstant(1.0, Type(ScalarType::F32));
  b.create(OpCode::Store, {p, one}, {}, {{"has_mask", int64_t(0)}});
  b.create(OpCode::Return, {}, {});
  passes::eliminateDeadCode(fn);
  EXPECT_EQ(countOps(fn, OpCode::Load), 0u);
  EXPECT_EQ(countOps(fn, OpCode::Store), 1u);
}
