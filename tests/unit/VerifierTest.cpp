#include "compiler/ir/IR.h"

#include <gtest/gtest.h>

using namespace tessera::ir;

namespace {

// kernel(x: ptr<f32>) { store x + make_range, 1.0 }
std::unique_ptr<Function> validKernel() {
  auto fn = std::make_unique<Function>();
  fn->name = "k";
  fn->params.push_back({"x", Type::ptr(ScalarType::F32)});
  Value *x = fn->body.addArgument(Type::ptr(ScalarType::F32), "x");
  Builder b(&fn->body);
  Type range = Type(ScalarType::I32).withShape({64});
  Value *offs = b.op(OpCode::MakeRange, {}, range, {{"start", int64_t(0)}, {"end", int64_t(64)}});
  Value *ptrs = b.op(OpCode::Splat, {x}, x->type.withShape({64}));
  Value *addr = b.op(OpCode::AddPtr, {ptrs, offs}, ptrs->type);
  Value *one = b.floatConstant(1.0, Type(ScalarType::F32).withShape({64}));
  b.create(OpCode::Store, {addr, one}, {}, {{"has_mask", int64_t(0)}});
  b.create(OpCode::Return, {}, {});
  return fn;
}

} // namespace

TEST(Verifier, AcceptsAValidKernel) {
  auto fn = validKernel();
  EXPECT_EQ(verify(*fn), "");
}

TEST(Verifier, RejectsMismatchedElementwiseTypes) {
  auto fn = validKernel();
  Builder b(&fn->body);
  b.setInsertionPoint(&fn->body, std::prev(fn->body.ops.end()));
  Value *a = b.floatConstant(1.0, Type(ScalarType::F32));
  Value *c = b.intConstant(1, Type(ScalarType::I32));
  b.op(OpCode::Add, {a, c}, Type(ScalarType::F32));
  EXPECT_NE(verify(*fn).find("operands and result must have one type"), std::string::npos) << verify(*fn);
}

TEST(Verifier, RejectsUseBeforeDefinition) {
  auto fn = validKernel();
  // Move the store (which uses earlier values) to the front.
  auto store = std::prev(fn->body.ops.end(), 2);
  fn->body.ops.splice(fn->body.ops.begin(), fn->body.ops, store);
  EXPECT_NE(verify(*fn).find("not defined before its use"), std::string::npos) << verify(*fn);
}

TEST(Verifier, RequiresTheReturnTerminator) {
  auto fn = validKernel();
  fn->body.ops.pop_back();
  EXPECT_EQ(verify(*fn), "the kernel body does not end in 'return'");
}

TEST(Printer, PrintsOpsAttributesAndTypes) {
  auto fn = validKernel();
  std::string text = print(*fn);
  EXPECT_NE(text.find("kernel @k(%x: ptr<f32>) num_warps = 4 {"), std::string::npos) << text;
  EXPECT_NE(text.find("%0 = make_range {end = 64, start = 0} : <64xi32>"), std::string::npos) << text;
  EXPECT_NE(text.find("constant {value = 1.0} : <64xf32>"), std::string::npos) << text;
  EXPECT_NE(text.find("store %2, %3 {has_mask = 0}"), std::string::npos) << text;
}
