// The verifier's rules for the rest of triton.language's ops (the second half
// of compiler/ir/Ops.def): shapes of trans/join/split/cat, dot, atomics, and
// the combine regions of reduce_combine / scan.
#include "compiler/ir/IR.h"

#include <gtest/gtest.h>

using namespace tessera::ir;

namespace {

struct Kernel {
  std::unique_ptr<Function> fn = std::make_unique<Function>();
  Builder b{&fn->body};
  Kernel() { fn->name = "k"; }
  Value *block(std::vector<int64_t> shape, ScalarType s = ScalarType::F32) {
    return b.floatConstant(0.0, Type(s).withShape(std::move(shape)));
  }
  std::string check() {
    if (!fn->body.terminator() || fn->body.terminator()->code != OpCode::Return) b.create(OpCode::Return, {}, {});
    return verify(*fn);
  }
};

bool mentions(const std::string &problem, const char *text) { return problem.find(text) != std::string::npos; }

// A reduce_combine (or scan) of `xs` whose region adds the pairs.
Operation *combineOp(Kernel &k, OpCode code, std::vector<Value *> xs, std::vector<Type> results) {
  Operation *op = k.b.create(code, xs, results, {{"axis", int64_t(1)}, {"reverse", int64_t(0)}}, 1);
  Block *region = op->region(0);
  std::vector<Value *> args;
  for (int side = 0; side < 2; ++side)
    for (Value *x : xs) args.push_back(region->addArgument(x->type.element()));
  Builder rb(region);
  std::vector<Value *> sums;
  for (size_t i = 0; i < xs.size(); ++i)
    sums.push_back(rb.op(OpCode::Add, {args[i], args[xs.size() + i]}, args[i]->type));
  rb.create(OpCode::Yield, sums, {});
  return op;
}

} // namespace

TEST(LanguageOpsVerifier, AcceptsWellFormedOps) {
  Kernel k;
  Value *x = k.block({16, 32});
  k.b.op(OpCode::Trans, {x}, x->type.withShape({32, 16}), {{"order", std::vector<int64_t>{1, 0}}});
  Value *j = k.b.op(OpCode::Join, {x, x}, x->type.withShape({16, 32, 2}));
  k.b.create(OpCode::Split, {j}, {x->type, x->type});
  k.b.op(OpCode::Cat, {x, x}, x->type.withShape({32, 32}));
  k.b.op(OpCode::Flip, {x}, x->type, {{"axis", int64_t(0)}});
  Value *a = k.block({16, 8}), *bb = k.block({8, 32});
  k.b.op(OpCode::Dot, {a, bb, x}, x->type, {{"input_precision", std::string("ieee")}});
  k.b.op(OpCode::Libdevice, {x, x}, x->type, {{"fn", std::string("pow")}});
  combineOp(k, OpCode::ReduceCombine, {x, x}, {x->type.withShape({16}), x->type.withShape({16})});
  combineOp(k, OpCode::Scan, {x}, {x->type});
  EXPECT_EQ(k.check(), "");
}

TEST(LanguageOpsVerifier, RejectsABadTransOrder) {
  Kernel k;
  Value *x = k.block({16, 32});
  k.b.op(OpCode::Trans, {x}, x->type.withShape({16, 16}), {{"order", std::vector<int64_t>{0, 0}}});
  EXPECT_TRUE(mentions(k.check(), "not a permutation")) << k.check();
}

TEST(LanguageOpsVerifier, RejectsDotShapeMismatch) {
  Kernel k;
  Value *a = k.block({16, 8}), *bb = k.block({16, 32}), *acc = k.block({16, 32});
  k.b.op(OpCode::Dot, {a, bb, acc}, acc->type);
  EXPECT_TRUE(mentions(k.check(), "shapes do not match")) << k.check();
}

TEST(LanguageOpsVerifier, RejectsSplitWithoutAPairDim) {
  Kernel k;
  Value *x = k.block({16, 4});
  k.b.create(OpCode::Split, {x}, {x->type.withShape({16}), x->type.withShape({16})});
  EXPECT_TRUE(mentions(k.check(), "last dim must be 2")) << k.check();
}

TEST(LanguageOpsVerifier, RejectsAtomicsOnTheWrongType) {
  Kernel k;
  Value *p = k.fn->body.addArgument(Type::ptr(ScalarType::F32), "p");
  k.fn->params.push_back({"p", p->type});
  Value *v = k.b.intConstant(1, Type(ScalarType::I32));
  k.b.op(OpCode::AtomicRMW, {p, v}, v->type, {{"kind", std::string("add")}, {"sem", std::string("acq_rel")},
                                                {"scope", std::string("gpu")}, {"has_mask", int64_t(0)}});
  EXPECT_TRUE(mentions(k.check(), "pointee")) << k.check();
}

TEST(LanguageOpsVerifier, RejectsACombineRegionOfTheWrongArity) {
  Kernel k;
  Value *x = k.block({16, 32});
  Operation *op = combineOp(k, OpCode::ReduceCombine, {x}, {x->type.withShape({16})});
  op->region(0)->addArgument(Type(ScalarType::F32)); // three arguments for one operand
  EXPECT_TRUE(mentions(k.check(), "two scalars per operand")) << k.check();
}
