// reshape / trans / split / join in registers (compiler/ir/ShapeOpLayouts.h):
// the result layouts the tiling pass picks, and that the registers codegen
// takes for them hold, in every thread, the element the op's meaning asks
// for (checked here against the ops' definitions, element by element).
#include "compiler/ir/ShapeOpLayouts.h"
#include "compiler/ir/IR.h"
#include "compiler/ir/LayoutMath.h"

#include <gtest/gtest.h>

#include <memory>

using namespace tessera;
using namespace tessera::ir;

namespace {

Type f32(std::vector<int64_t> shape) { return Type(ScalarType::F32).withShape(std::move(shape)); }

struct Kernel {
  std::unique_ptr<Function> fn = std::make_unique<Function>();
  Builder b{&fn->body};
  Value *input(std::vector<int64_t> shape, LayoutRef layout) {
    Value *v = b.op(OpCode::Constant, {}, f32(std::move(shape)), {{"value", 0.0}});
    v->layout = std::move(layout);
    return v;
  }
};

int64_t flat(const std::vector<int64_t> &c, const std::vector<int64_t> &shape) { return linearIndex(c, shape); }

// The operand element (operand, coordinates) that result k's element at `c` is, from each op's definition.
std::pair<unsigned, std::vector<int64_t>> definedSource(const Operation &op, unsigned k, std::vector<int64_t> c) {
  const std::vector<int64_t> &in = op.operand(0)->type.shape;
  if (op.code == OpCode::Reshape) {
    int64_t index = flat(c, op.result()->type.shape);
    std::vector<int64_t> src(in.size());
    for (size_t d = in.size(); d-- > 0;) {
      src[d] = index % in[d];
      index /= in[d];
    }
    return {0, src};
  }
  if (op.code == OpCode::Trans) {
    std::vector<int64_t> src(c.size());
    const std::vector<int64_t> &order = op.arrayAttr("order");
    for (size_t i = 0; i < c.size(); ++i) src[order[i]] = c[i];
    return {0, src};
  }
  if (op.code == OpCode::Split) {
    c.push_back(k);
    return {0, c};
  }
  unsigned j = static_cast<unsigned>(c.back()); // join
  c.pop_back();
  return {j, c};
}

// Gives op's results the in-register layouts and checks every (thread, result register).
std::vector<LayoutRef> expectInRegisters(Operation &op, unsigned numWarps) {
  std::vector<LayoutRef> layouts = inRegisterResultLayouts(op, op.operand(0)->layout, numWarps);
  EXPECT_EQ(layouts.size(), op.results.size()) << mnemonic(op.code) << " of " << op.operand(0)->layout->str();
  if (layouts.size() != op.results.size()) return layouts;
  std::vector<DistributedLayout> operands;
  for (Value *v : op.operands) operands.emplace_back(*v->layout, v->type.shape);
  for (unsigned k = 0; k < op.results.size(); ++k) {
    op.result(k)->layout = layouts[k];
    DistributedLayout result(*layouts[k], op.result(k)->type.shape);
    auto picks = registersInThread(op, k, operands, result);
    EXPECT_TRUE(picks.has_value()) << layouts[k]->str();
    if (!picks) continue;
    int wrong = 0;
    for (unsigned tid = 0; tid < 32 * numWarps; ++tid)
      for (unsigned r = 0; r < result.numRegs(); ++r) {
        auto [j, src] = definedSource(op, k, result.coordinates(tid, r));
        auto [pj, preg] = (*picks)[r];
        if (pj != j || operands[j].coordinates(tid, preg) != src) ++wrong;
      }
    EXPECT_EQ(wrong, 0) << mnemonic(op.code) << " result " << k << " in " << layouts[k]->str();
  }
  return layouts;
}

} // namespace

// Triton tutorial 09's subtiled epilogue on the wgmma accumulator:
// split(permute(reshape(acc, [BM, 2, BN/2]), [0, 2, 1])) gives each thread
// its own columns j and j + BN/2: both halves are wgmma accumulators again.
TEST(ShapeOpLayouts, SubtiledEpilogueOfTheWgmmaAccumulatorStaysInRegisters) {
  Kernel k;
  LayoutRef mma = Layout::mma(3, {8, 1});
  Value *acc = k.input({128, 256}, mma);
  Value *r = k.b.op(OpCode::Reshape, {acc}, f32({128, 2, 128}));
  expectInRegisters(*r->definingOp, 8);
  Value *t = k.b.op(OpCode::Trans, {r}, f32({128, 128, 2}), {{"order", std::vector<int64_t>{0, 2, 1}}});
  expectInRegisters(*t->definingOp, 8);
  Operation *split = k.b.create(OpCode::Split, {t}, {f32({128, 128}), f32({128, 128})});
  std::vector<LayoutRef> halves = expectInRegisters(*split, 8);
  ASSERT_EQ(halves.size(), 2u);
  EXPECT_TRUE(sameLayout(halves[0], mma)) << halves[0]->str();
  EXPECT_TRUE(sameLayout(halves[1], mma));

  // The attention tutorial's way back: join, permute, reshape to the accumulator.
  Value *j = k.b.op(OpCode::Join, {split->result(0), split->result(1)}, f32({128, 128, 2}));
  expectInRegisters(*j->definingOp, 8);
  Value *p = k.b.op(OpCode::Trans, {j}, f32({128, 2, 128}), {{"order", std::vector<int64_t>{0, 2, 1}}});
  expectInRegisters(*p->definingOp, 8);
  Value *back = k.b.op(OpCode::Reshape, {p}, f32({128, 256}));
  std::vector<LayoutRef> l = expectInRegisters(*back->definingOp, 8);
  ASSERT_EQ(l.size(), 1u);
  EXPECT_TRUE(sameLayout(l[0], mma)) << l[0]->str();
}

TEST(ShapeOpLayouts, MmaSyncAccumulatorHalves) {
  for (std::vector<unsigned> wpc : {std::vector<unsigned>{2, 2}, {4, 1}, {1, 4}}) {
    Kernel k;
    Value *acc = k.input({64, 128}, Layout::mma(2, wpc));
    Value *r = k.b.op(OpCode::Reshape, {acc}, f32({64, 2, 64}));
    expectInRegisters(*r->definingOp, 4);
    Value *t = k.b.op(OpCode::Trans, {r}, f32({64, 64, 2}), {{"order", std::vector<int64_t>{0, 2, 1}}});
    expectInRegisters(*t->definingOp, 4);
    Operation *split = k.b.create(OpCode::Split, {t}, {f32({64, 64}), f32({64, 64})});
    expectInRegisters(*split, 4);
  }
}

// Every blocked layout of a small block that the tiling pass might give,
// reshaped a few ways: where a layout is offered, it must be right.
TEST(ShapeOpLayouts, ReshapesOfBlockedLayoutsAreRightWhereOffered) {
  const std::vector<std::vector<int64_t>> targets = {{512}, {8, 4, 16}, {16, 2, 16}, {2, 16, 16}, {32, 16}, {4, 128}};
  int offered = 0;
  for (unsigned spt1 : {1u, 2u, 4u})
    for (unsigned tpw1 : {1u, 2u, 4u, 8u})
      for (unsigned wpc1 : {1u, 2u}) {
        LayoutRef l = Layout::blocked({1, spt1}, {32 / tpw1, tpw1}, {2 / wpc1, wpc1}, {1, 0});
        for (const auto &shape : targets) {
          Kernel k;
          Value *x = k.input({16, 32}, l);
          Value *r = k.b.op(OpCode::Reshape, {x}, f32(shape));
          if (inRegisterResultLayouts(*r->definingOp, l, 2).empty()) continue;
          ++offered;
          expectInRegisters(*r->definingOp, 2);
        }
      }
  EXPECT_GT(offered, 20);
}

TEST(ShapeOpLayouts, NoLayoutWhereElementsLiveInOtherThreads) {
  Kernel k;
  // The split dim spread over lanes: each thread holds one of the pair.
  LayoutRef spread = Layout::blocked({1, 1}, {16, 2}, {4, 1}, {1, 0});
  Value *x = k.input({64, 2}, spread);
  Operation *split = k.b.create(OpCode::Split, {x}, {f32({64}), f32({64})});
  EXPECT_TRUE(inRegisterResultLayouts(*split, spread, 4).empty());
  // A reduction's slice layout: left to shared memory.
  LayoutRef slice = Layout::slice(1, Layout::blocked({1, 4}, {4, 8}, {4, 1}, {1, 0}));
  Value *s = k.input({64}, slice);
  Value *r = k.b.op(OpCode::Reshape, {s}, f32({8, 8}));
  EXPECT_TRUE(inRegisterResultLayouts(*r->definingOp, slice, 4).empty());
  // Codegen's check refuses layouts that do not fit, e.g. the anchor of a reshape.
  Value *y = k.input({64, 64}, Layout::blocked({1, 4}, {2, 16}, {4, 1}, {1, 0}));
  Value *ry = k.b.op(OpCode::Reshape, {y}, f32({64, 2, 32}));
  DistributedLayout in(*y->layout, {64, 64}), anchor(*Layout::blocked({1, 1, 4}, {1, 4, 8}, {4, 1, 1}, {2, 1, 0}), {64, 2, 32});
  EXPECT_FALSE(registersInThread(*ry->definingOp, 0, {in}, anchor).has_value());
}

// Layouts with copies: threads along a dim of extent 1 (the packed int4 zeros
// row of AWQ's GEMM, [1, 4] interleaved three times with join + reshape), or
// more threads than elements. The copies stay where they are and the op is
// a choice of registers; the [1, N] rows keep Triton's layouts (threads along
// the 1), so the broadcast to the [K, N] tile that follows needs no conversion.
TEST(ShapeOpLayouts, CopiesStayInRegisters) {
  Kernel k;
  Value *row = k.input({1, 4}, Layout::blocked({1, 1}, {8, 4}, {4, 1}, {1, 0}));
  std::vector<int64_t> n = {1, 4};
  for (int i = 0; i < 3; ++i) {
    Operation *join = k.b.create(OpCode::Join, {row, row}, {f32({1, n[1], 2})});
    expectInRegisters(*join, 4);
    n[1] *= 2;
    Value *r = k.b.op(OpCode::Reshape, {join->result()}, f32(n));
    std::vector<LayoutRef> l = expectInRegisters(*r->definingOp, 4);
    ASSERT_EQ(l.size(), 1u);
    row = r;
  }
  // [1, 32] as Triton's #blocked<[1,8],[8,4],[4,1]>: the [32, 32] tile's layout, copies along dim 0.
  EXPECT_EQ(row->layout->str(), Layout::blocked({1, 8}, {8, 4}, {4, 1}, {1, 0})->str());

  // 16 elements over 128 threads, reshaped and flattened again.
  LayoutRef copies = Layout::blocked({1}, {32}, {4}, {0});
  Value *c = k.input({16}, copies);
  Value *rc = k.b.op(OpCode::Reshape, {c}, f32({4, 4}));
  expectInRegisters(*rc->definingOp, 4);
  Value *flat = k.b.op(OpCode::Reshape, {rc}, f32({16}));
  expectInRegisters(*flat->definingOp, 4);
  // A reshape read backwards through a [1, 8] row with copies.
  Value *src = k.input({8}, nullptr);
  Value *r8 = k.b.op(OpCode::Reshape, {src}, f32({1, 8}));
  LayoutRef want = Layout::blocked({1, 2}, {8, 4}, {4, 1}, {1, 0});
  r8->layout = want;
  LayoutRef in = inRegisterReshapeOperandLayout(*r8->definingOp, want, 4);
  ASSERT_NE(in, nullptr);
  src->layout = in;
  EXPECT_TRUE(registersInThread(*r8->definingOp, 0, {DistributedLayout(*in, {8})}, DistributedLayout(*want, {1, 8})));
}

// A reshape read backwards: the operand layout that makes a reshape give a wanted result layout in
// registers (remove-layout-conversions recomputes tl.arange(0, N).reshape(...) there instead of
// converting a block of pointers). Where one is offered, every thread's registers must hold the
// elements the reshape asks for; a result whose threads' elements are not a blocked run of the
// flat index gets none.
TEST(ShapeOpLayouts, ReshapeOperandLayoutsForAWantedResult) {
  struct Case {
    std::vector<int64_t> from, to;
    std::vector<unsigned> spt, tpw, wpc, order;
    bool offered;
  };
  const std::vector<Case> cases = {
      // Triton's test_chained_reductions: a 5-D load layout, its 1-D arange is blocked<[1],[32],[4]>
      {{32768}, {4, 32, 32, 4, 2}, {1, 1, 1, 1, 1}, {1, 1, 4, 4, 2}, {1, 1, 4, 1, 1}, {4, 3, 2, 1, 0}, true},
      {{4096}, {64, 64}, {1, 4}, {2, 16}, {4, 1}, {1, 0}, true},
      {{4096}, {64, 64}, {4, 1}, {16, 2}, {1, 4}, {0, 1}, false}, // column-major: not a run of the flat index
  };
  for (const Case &c : cases) {
    Kernel k;
    Value *src = k.input(c.from, nullptr);
    Value *r = k.b.op(OpCode::Reshape, {src}, f32(c.to));
    LayoutRef want = Layout::blocked(c.spt, c.tpw, c.wpc, c.order);
    r->layout = want;
    LayoutRef in = inRegisterReshapeOperandLayout(*r->definingOp, want, 4);
    EXPECT_EQ(in != nullptr, c.offered) << want->str();
    if (!in) continue;
    src->layout = in;
    DistributedLayout operand(*in, c.from), result(*want, c.to);
    auto picks = registersInThread(*r->definingOp, 0, {operand}, result);
    ASSERT_TRUE(picks.has_value()) << in->str();
    int wrong = 0;
    for (unsigned tid = 0; tid < 128; ++tid)
      for (unsigned reg = 0; reg < result.numRegs(); ++reg)
        if (operand.coordinates(tid, (*picks)[reg].second) != definedSource(*r->definingOp, 0, result.coordinates(tid, reg)).second)
          ++wrong;
    EXPECT_EQ(wrong, 0) << in->str() << " -> " << want->str();
  }
}
