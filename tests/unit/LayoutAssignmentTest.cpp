// The layout math (which thread/register holds which element) and the
// tiling pass's choices.
#include "compiler/ir/LayoutMath.h"
#include "compiler/ir/IR.h"
#include "compiler/passes/LayoutAssignment.h"

#include <gtest/gtest.h>

#include <map>

using namespace tessera;
using namespace tessera::ir;
using ir::DistributedLayout;

namespace {

// Every element is held by the same number of (thread, register) pairs,
// `copies` of them, and exactly one of those is its owner.
void expectCoverage(const Layout &layout, const std::vector<int64_t> &shape, unsigned numWarps,
                    int64_t copies) {
  DistributedLayout d(layout, shape);
  std::map<std::vector<int64_t>, int64_t> seen, owners;
  for (unsigned tid = 0; tid < 32 * numWarps; ++tid)
    for (unsigned r = 0; r < d.numRegs(); ++r) {
      std::vector<int64_t> c = d.coordinates(tid, r);
      ASSERT_EQ(c.size(), shape.size());
      for (size_t i = 0; i < c.size(); ++i)
        ASSERT_TRUE(c[i] >= 0 && c[i] < shape[i]) << layout.str();
      ++seen[c];
      if (d.isOwner(tid, r)) {
        ++owners[c];
        EXPECT_FALSE(d.isDuplicateRegister(r)) << layout.str();
      }
    }
  int64_t elements = 1;
  for (int64_t s : shape)
    elements *= s;
  ASSERT_EQ(static_cast<int64_t>(seen.size()), elements) << layout.str();
  for (auto &[coord, n] : seen)
    EXPECT_EQ(n, copies) << layout.str();
  for (auto &[coord, n] : owners)
    EXPECT_EQ(n, 1) << layout.str();
  EXPECT_EQ(static_cast<int64_t>(owners.size()), elements) << layout.str();
}

} // namespace

TEST(LayoutMath, DefaultBlockedLayouts) {
  EXPECT_EQ(ir::defaultBlockedLayout({1024}, 4)->str(),
            "#blocked<spt=[4], tpw=[32], wpc=[4], order=[0]>");
  EXPECT_EQ(ir::defaultBlockedLayout({128}, 4)->str(),
            "#blocked<spt=[1], tpw=[32], wpc=[4], order=[0]>");
  EXPECT_EQ(ir::defaultBlockedLayout({64, 64}, 4)->str(),
            "#blocked<spt=[1,4], tpw=[2,16], wpc=[4,1], order=[1,0]>");
  EXPECT_EQ(ir::defaultBlockedLayout({32, 128}, 8)->str(),
            "#blocked<spt=[1,4], tpw=[1,32], wpc=[8,1], order=[1,0]>");
  EXPECT_EQ(ir::defaultBlockedLayout({16, 8}, 4)->str(),
            "#blocked<spt=[1,1], tpw=[4,8], wpc=[4,1], order=[1,0]>");
  EXPECT_EQ(ir::defaultBlockedLayout({2, 4, 64}, 2)->str(),
            "#blocked<spt=[1,1,4], tpw=[1,2,16], wpc=[1,2,1], order=[2,1,0]>");
}

TEST(LayoutMath, RepetitionGivesMoreRegisters) {
  // 1024 elements, a 512-element tile: two repetitions of 4 registers.
  auto l = Layout::blocked({4}, {32}, {4}, {0});
  DistributedLayout d(*l, {1024});
  EXPECT_EQ(d.numRegs(), 8u);
  EXPECT_EQ(d.coordinates(0, 0), std::vector<int64_t>{0});
  EXPECT_EQ(d.coordinates(0, 3), std::vector<int64_t>{3});
  EXPECT_EQ(d.coordinates(0, 4), std::vector<int64_t>{512});
  EXPECT_EQ(d.coordinates(1, 0), std::vector<int64_t>{4});
  EXPECT_EQ(d.coordinates(33, 1), std::vector<int64_t>{128 + 4 + 1});
  expectCoverage(*l, {1024}, 4, 1);
}

TEST(LayoutMath, WrapAroundReplicates) {
  auto l = Layout::blocked({1}, {32}, {4}, {0});
  DistributedLayout d(*l, {32}); // 128 threads, 32 elements: 4 copies each
  EXPECT_EQ(d.numRegs(), 1u);
  EXPECT_EQ(d.coordinates(37, 0), std::vector<int64_t>{5});
  EXPECT_TRUE(d.isOwner(5, 0));
  EXPECT_FALSE(d.isOwner(37, 0));
  expectCoverage(*l, {32}, 4, 4);
  // Smaller than one thread's registers: copies inside the thread too.
  auto wide = Layout::blocked({4}, {32}, {1}, {0});
  DistributedLayout w(*wide, {2});
  EXPECT_EQ(w.numRegs(), 4u);
  EXPECT_TRUE(w.isDuplicateRegister(2));
  EXPECT_FALSE(w.isDuplicateRegister(1));
  expectCoverage(*wide, {2}, 1, 64);
}

TEST(LayoutMath, TwoDimensionalCoverage) {
  auto l = Layout::blocked({1, 4}, {2, 16}, {4, 1}, {1, 0});
  expectCoverage(*l, {64, 64}, 4, 1);   // 8 repetitions along dim 0
  expectCoverage(*l, {8, 64}, 4, 1);    // exactly one tile
  expectCoverage(*l, {4, 64}, 4, 2);    // wraps along dim 0
  expectCoverage(*l, {64, 16}, 4, 4);   // wraps along dim 1, repeats along dim 0
  expectCoverage(*l, {1, 1}, 4, 512);   // everything is one element
  auto colMajor = Layout::blocked({2, 1}, {8, 4}, {1, 2}, {0, 1});
  expectCoverage(*colMajor, {32, 16}, 2, 1);
  DistributedLayout d(*colMajor, {32, 16});
  EXPECT_EQ(d.coordinates(1, 0), (std::vector<int64_t>{2, 0})); // lanes run down dim 0
  EXPECT_EQ(d.coordinates(1, 1), (std::vector<int64_t>{3, 0})); // registers too
}

TEST(LayoutMath, SliceLayouts) {
  auto parent = Layout::blocked({1, 4}, {2, 16}, {4, 1}, {1, 0});
  // Rows of a 64x64 block: each row held by the 16 lanes along dim 1.
  auto rows = Layout::slice(1, parent);
  DistributedLayout r(*rows, {64});
  EXPECT_EQ(r.numRegs(), 8u);
  expectCoverage(*rows, {64}, 4, 16);
  auto cols = Layout::slice(0, parent);
  expectCoverage(*cols, {64}, 4, 8);
  // A scalar from a 1-D layout: one register, thread 0 owns it.
  auto scalar = Layout::slice(0, Layout::blocked({4}, {32}, {4}, {0}));
  DistributedLayout s(*scalar, {});
  EXPECT_EQ(s.numRegs(), 1u);
  EXPECT_TRUE(s.isOwner(0, 0));
  EXPECT_FALSE(s.isOwner(1, 0));
  // Slices of slices (3-D reduced twice).
  auto three = Layout::blocked({1, 1, 2}, {2, 4, 4}, {2, 1, 1}, {2, 1, 0});
  expectCoverage(*Layout::slice(0, Layout::slice(2, three)), {8}, 2, 16);
}

TEST(LayoutMath, RegisterMappingIsConsistentWithSlicing) {
  // A reduction's result register r is the operand's register with the
  // axis index at 0: the coordinates must agree on the other dims.
  auto parent = Layout::blocked({2, 2}, {4, 8}, {2, 2}, {1, 0});
  DistributedLayout full(*parent, {16, 64});
  DistributedLayout sliced = full.slicedAlong(1);
  for (unsigned tid = 0; tid < 128; tid += 7)
    for (unsigned r = 0; r < sliced.numRegs(); ++r) {
      std::vector<unsigned> index = sliced.regIndex(r);
      EXPECT_EQ(index[1], 0u);
      EXPECT_EQ(sliced.coordinates(tid, r)[0], full.coordinates(tid, full.regNumber(index))[0]);
    }
}

TEST(LayoutMath, RejectsBadLayouts) {
  auto l = Layout::blocked({1}, {16}, {4}, {0}); // 16 lanes
  EXPECT_THROW(DistributedLayout(*l, {64}), std::invalid_argument);
  auto ok = Layout::blocked({1}, {32}, {4}, {0});
  EXPECT_THROW(DistributedLayout(*ok, {48}), std::invalid_argument);
  EXPECT_THROW(DistributedLayout(*ok, {64, 64}), std::invalid_argument);
}

// ------------------------------------------------------------ the pass

namespace {

Type i32() { return Type(ScalarType::I32); }
Type f32() { return Type(ScalarType::F32); }

std::unique_ptr<Function> makeFunction(unsigned numWarps) {
  auto fn = std::make_unique<Function>();
  fn->name = "k";
  fn->numWarps = numWarps;
  return fn;
}

Value *param(Function &fn, const std::string &name, Type t) {
  fn.params.push_back({name, t, 16, false});
  return fn.body.addArgument(t, name);
}

} // namespace

TEST(LayoutAssignment, AnchorsSlicesAndConverts) {
  auto fn = makeFunction(4);
  Value *out = param(*fn, "out", Type::ptr(ScalarType::F32));
  Builder b(&fn->body);
  Value *rows = b.op(OpCode::MakeRange, {}, i32().withShape({64}), {{"start", int64_t{0}}, {"end", int64_t{64}}});
  Value *cols = b.op(OpCode::MakeRange, {}, i32().withShape({32}), {{"start", int64_t{0}}, {"end", int64_t{32}}});
  Value *r2 = b.op(OpCode::ExpandDims, {rows}, i32().withShape({64, 1}), {{"axis", int64_t{1}}});
  Value *c2 = b.op(OpCode::ExpandDims, {cols}, i32().withShape({1, 32}), {{"axis", int64_t{0}}});
  Value *rb = b.op(OpCode::Broadcast, {r2}, i32().withShape({64, 32}));
  Value *cb = b.op(OpCode::Broadcast, {c2}, i32().withShape({64, 32}));
  Value *sum = b.op(OpCode::Add, {rb, cb}, i32().withShape({64, 32}));
  Value *asFloat = b.op(OpCode::Cast, {sum}, f32().withShape({64, 32}));
  Value *red = b.op(OpCode::Reduce, {asFloat}, f32().withShape({64}),
                    {{"axis", int64_t{1}}, {"kind", std::string("sum")}});
  Value *ptrs = b.op(OpCode::Splat, {out}, Type::ptr(ScalarType::F32).withShape({64}));
  Value *addrs = b.op(OpCode::AddPtr, {ptrs, rows}, ptrs->type);
  b.create(OpCode::Store, {addrs, red}, {}, {{"has_mask", int64_t{0}}});
  b.create(OpCode::Return, {}, {});
  ASSERT_EQ(verify(*fn), "");

  passes::assignLayouts(*fn);
  ASSERT_EQ(verify(*fn), "");
  std::string text = print(*fn);
  SCOPED_TRACE(text);
  auto anchor2 = ir::defaultBlockedLayout({64, 32}, 4);
  EXPECT_TRUE(sameLayout(sum->layout, anchor2));
  EXPECT_TRUE(sameLayout(red->layout, Layout::slice(1, anchor2)));
  // expand_dims got slices of the 2-D anchor by recomputing the ranges.
  EXPECT_TRUE(sameLayout(r2->definingOp->operand(0)->layout, Layout::slice(1, anchor2)));
  EXPECT_EQ(r2->definingOp->operand(0)->definingOp->code, OpCode::MakeRange);
  EXPECT_TRUE(sameLayout(r2->layout, anchor2));
  // The store runs in the row sums' layout (they are expensive to move);
  // its address math is recomputed there: no convert is left at all.
  size_t converts = 0;
  walk(fn->body, [&](Operation &op) { converts += op.code == OpCode::ConvertLayout; });
  EXPECT_EQ(converts, 0u);
  Operation *store = fn->body.ops.front().get();
  for (auto &op : fn->body.ops)
    if (op->code == OpCode::Store)
      store = op.get();
  EXPECT_TRUE(sameLayout(store->operand(0)->layout, red->layout));
  EXPECT_NE(store->operand(0), addrs); // (the original chain was erased)
  EXPECT_NE(text.find("#slice<dim=1, #blocked<spt=[1,4], tpw=[4,8], wpc=[4,1], order=[1,0]>>"),
            std::string::npos);
}

TEST(LayoutAssignment, LoopCarriedValuesKeepTheirInitLayout) {
  auto fn = makeFunction(2);
  Value *n = param(*fn, "n", i32());
  Builder b(&fn->body);
  Value *zero = b.intConstant(0, i32());
  Value *one = b.intConstant(1, i32());
  Value *acc0 = b.floatConstant(0.0, f32().withShape({8, 16}));
  Value *wide = b.floatConstant(1.0, f32().withShape({16, 16})); // sets the anchor
  Value *red = b.op(OpCode::Reduce, {wide}, f32().withShape({16}),
                    {{"axis", int64_t{0}}, {"kind", std::string("max")}});
  Operation *loop = b.create(OpCode::For, {zero, n, one, acc0, red},
                             {acc0->type, red->type}, {}, 1);
  Block *body = loop->region(0);
  body->addArgument(i32(), "i");
  Value *acc = body->addArgument(acc0->type, "acc");
  Value *carried = body->addArgument(red->type, "m");
  Builder lb(body);
  Value *plusOne = lb.floatConstant(1.0, acc0->type);
  Value *next = lb.op(OpCode::Add, {plusOne, acc}, acc0->type);
  Value *fresh = lb.floatConstant(2.0, red->type);
  lb.create(OpCode::Yield, {next, fresh}, {});
  b.create(OpCode::Return, {}, {});
  ASSERT_EQ(verify(*fn), "");

  passes::assignLayouts(*fn);
  ASSERT_EQ(verify(*fn), "");
  SCOPED_TRACE(print(*fn));
  EXPECT_TRUE(sameLayout(acc->layout, acc0->layout));
  EXPECT_TRUE(sameLayout(carried->layout, red->layout));
  EXPECT_TRUE(sameLayout(loop->result(1)->layout, red->layout));
  EXPECT_EQ(carried->layout->kind, Layout::Kind::Slice);
  // The constant yielded for the slice-typed value was rebuilt in that
  // layout instead of being converted through shared memory.
  Operation *yield = body->terminator();
  EXPECT_TRUE(sameLayout(yield->operand(1)->layout, red->layout));
  EXPECT_EQ(yield->operand(1)->definingOp->code, OpCode::Constant);
  EXPECT_TRUE(sameLayout(yield->operand(0)->layout, acc0->layout));
}

TEST(LayoutAssignment, RejectsNonPowerOfTwoShapes) {
  auto fn = makeFunction(4);
  Builder b(&fn->body);
  b.op(OpCode::MakeRange, {}, i32().withShape({48}), {{"start", int64_t{0}}, {"end", int64_t{48}}});
  b.create(OpCode::Return, {}, {});
  EXPECT_THROW(passes::assignLayouts(*fn), std::runtime_error);
}
