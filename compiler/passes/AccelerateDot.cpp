// Accelerate-dot (runs after remove-layout-conversions). For every
// dot(a <MxK>, b <KxN>, acc <MxN>) that an mma.sync shape covers (mmaKStep:
// f16/bf16 -> f32 and f16 -> f16 in k-steps of 16, f32 with input_precision "tf32" -> f32
// in k-steps of 8, i8 -> i32 in k-steps of 32), with M % 16 == 0,
// N % 8 == 0, K a multiple of the k-step, on sm_80+ (warps split M and N
// into 16 x 8 tiles; where there are fewer tiles than warps, the extra warps
// repeat tiles, as Triton's do: a 16 x 16 block on 4 warps is wpc = [2, 2]):
//   * the result gets #mma<version=2, wpc=[wm, wn]> (mma.sync m16n8k16
//     accumulator fragments, compiler/ir/Layout.h);
//   * `x + dot(a, b, 0)` (`acc += tl.dot(a, b)`, `acc * alpha + tl.dot(p, v)`)
//     becomes dot(a, b, x); pure ops computing x after the dot move before it;
//   * a and b are converted to #dot_op<opIdx=0/1, #mma<...>>, the
//     accumulator to the Mma layout, and the result's users read it through a
//     conversion back to their old layout;
//   * when the accumulator is a `for` loop-carried value updated by the dot
//     (`acc += tl.dot(a, b)` / `acc = tl.dot(a, b, acc)`), the carried value
//     itself moves to the Mma layout: the conversion happens once before and
//     once after the loop instead of twice per iteration;
//   * dots chained through operand A (attention's S -> P -> P V) share their
//     warps, all along M (wpc = [num_warps, 1]) when every M allows it.
// On sm_90a (unless wgmma is off: TESSERA_WGMMA=0), f16/bf16 -> f32 dots
// whose M splits into one 64-row slab per warpgroup (M % (16 * num_warps)
// == 0, num_warps % 4 == 0) and whose K and N rows fit a wgmma swizzle line
// (wgmmaRowFits) get #mma<version=3, wpc=[num_warps, 1]> instead: Hopper's
// wgmma.mma_async (compiler/codegen/WgmmaDot.cpp). Its registers are those
// of version 2 with the same warps, so the rest of this pass is the same.
// Where M has fewer slabs than warpgroups (64 rows on 8 warps), warpgroups
// split N as well, as Triton does: wpc = [4, 2] (wgmmaFits).
// fp8 dots (the front-end widens e4m3/e5m2 operands to f16 with casts and
// marks the dot `fp8`) that fit fp8WgmmaFits lose those casts there and take
// Hopper's native fp8 wgmma (k = 32); on sm_89+ the others with K % 32 == 0
// and an f32 result take mma.sync m16n8k32 on e4m3/e5m2 (version 2, the int8
// fragments); the rest keep the f16 dot.
// Everything else keeps the FMA lowering (compiler/codegen/Dot.cpp).
#include "compiler/passes/AccelerateDot.h"

#include "compiler/ir/LayoutMath.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <list>
#include <map>
#include <set>
#include <tuple>
#include <vector>

namespace tessera::passes {

using namespace ir;

namespace {

Value *convertAt(Block *block, std::list<std::unique_ptr<Operation>>::iterator before, SourceLoc loc, Value *v,
                 const LayoutRef &to) {
  Builder b(block);
  b.setInsertionPoint(block, before);
  b.setLoc(loc);
  if (Operation *k = v->definingOp; k && k->code == OpCode::Constant && to->kind != Layout::Kind::DotOperand) {
    // A splat constant (the accumulator's zeros) is made in the new layout
    // instead of moving through shared memory.
    Value *c = b.op(OpCode::Constant, {}, v->type, k->attrs);
    c->layout = to;
    return c;
  }
  Value *c = b.op(OpCode::ConvertLayout, {v}, v->type);
  c->layout = to;
  return c;
}

int archNumber(const std::string &arch) {
  if (arch.rfind("sm_", 0) != 0) return 0;
  return std::atoi(arch.c_str() + 3);
}

// Warps over [M, N]: split the dim whose per-warp extent (in mma tiles of
// 16 x 8 elements, counted in elements) is larger, while it still fits.
// When the block has fewer 16 x 8 tiles than warps (GPTQ's 16 x 16 small-M GEMM on 4 warps), the
// extra warps repeat tiles, along M first, then N (Triton's [2, 2] there); codegen (MmaDot.cpp)
// wraps their tile indices.
bool chooseWarps(int64_t M, int64_t N, unsigned numWarps, unsigned &wm, unsigned &wn) {
  wm = wn = 1;
  while (wm * wn < numWarps) {
    bool canM = M % (16 * int64_t{wm} * 2) == 0, canN = N % (8 * int64_t{wn} * 2) == 0;
    if (canM && (M / wm >= N / wn || !canN)) wm *= 2;
    else if (canN) wn *= 2;
    else break;
  }
  for (bool alongM = true; wm * wn < numWarps; alongM = !alongM) {
    if (M % 16 || N % 8) return false;
    if (alongM) wm *= 2;
    else wn *= 2;
  }
  return true;
}

} // namespace

namespace {

// A tile row of `length` elements of `elemBytes` as wgmma reads it: one 32-
// or 64-byte swizzle line, or whole 128-byte lines.
bool wgmmaRowFits(int64_t length, int64_t elemBytes = 2) {
  const int64_t bytes = length * elemBytes;
  return bytes == 32 || bytes == 64 || (bytes > 0 && bytes % 128 == 0);
}

bool isFp8(const Type &t) {
  return !t.pointer && (t.scalar == ScalarType::F8E4M3 || t.scalar == ScalarType::F8E5M2);
}

// The fp8 values under the front-end's widening casts to f16 of a dot it
// marked `fp8` (dsl/BuiltinsReduce.cpp), or nulls.
std::pair<Value *, Value *> fp8Sources(Operation &dot) {
  if (!dot.hasAttr("fp8") || !dot.intAttr("fp8")) return {nullptr, nullptr};
  auto source = [](Value *v) -> Value * {
    Operation *def = v->definingOp;
    if (!def || def->code != OpCode::Cast || def->operands.size() != 1) return nullptr;
    Value *x = def->operand(0);
    return isFp8(x->type.element()) && x->layout ? x : nullptr;
  };
  Value *a = source(dot.operand(0)), *b = source(dot.operand(1));
  if (!a || !b) return {nullptr, nullptr};
  return {a, b};
}

struct Accelerator {
  Function &fn;
  bool hopper; // sm_90a with wgmma on
  bool fp8MmaSync; // sm_89+: mma.sync m16n8k32 on e4m3/e5m2
  // Warps chosen for a chain of dots (see chooseChainWarps), by dot.
  std::map<const Operation *, std::pair<unsigned, unsigned>> chainWarps;

  // The dots whose results operand A of `dot` is computed from, in its block
  // (attention: P = exp2(S - m) from S = dot(q, k)).
  static std::vector<Operation *> feedingDots(Operation &dot) {
    std::vector<Operation *> found;
    std::set<const Value *> seen;
    std::vector<Value *> work = {dot.operand(0)};
    while (!work.empty() && seen.size() < 256) {
      Value *v = work.back();
      work.pop_back();
      if (!seen.insert(v).second) continue;
      Operation *def = v->definingOp;
      if (!def || def->parent != dot.parent || def->code == OpCode::Load) continue;
      if (def->code == OpCode::Dot) {
        found.push_back(def);
        continue;
      }
      for (Value *operand : def->operands)
        if (operand->type.isBlock()) work.push_back(operand);
    }
    return found;
  }

  static bool fits(const Operation &dot, unsigned wm, unsigned wn) {
    const int64_t M = dot.operand(0)->type.shape[0], N = dot.operand(1)->type.shape[1];
    return M % (16 * int64_t{wm}) == 0 && N % (8 * int64_t{wn}) == 0;
  }

  // Dots chained through operand A (a dot's result, after elementwise work,
  // is the next one's A: attention's S -> P -> P V, and the backward's
  // dS) get the same warps, so that the values between them (row maxima
  // and sums, P) share one #mma layout. All warps along M (wpc =
  // [num_warps, 1]) when every M allows it: row reductions then stay in a
  // warp, and P's registers are the next dot's A fragments (codegen,
  // MmaDot.cpp). Otherwise the first dot's choice, when it fits them all.
  void chooseChainWarps(const std::vector<Operation *> &dots) {
    std::map<Operation *, Operation *> leader;
    std::function<Operation *(Operation *)> find = [&](Operation *d) {
      auto it = leader.find(d);
      if (it == leader.end() || it->second == d) return d;
      return it->second = find(it->second);
    };
    std::set<Operation *> chained;
    for (Operation *d : dots) {
      unsigned wm, wn;
      if (!eligible(*d, wm, wn, /*chain=*/false)) continue;
      for (Operation *from : feedingDots(*d)) {
        if (!eligible(*from, wm, wn, /*chain=*/false)) continue;
        leader[find(from)] = find(d);
        chained.insert(from);
        chained.insert(d);
      }
    }
    std::map<Operation *, std::vector<Operation *>> groups;
    for (Operation *d : dots) // program order: the group's first dot comes first
      if (chained.count(d)) groups[find(d)].push_back(d);
    for (auto &[root, members] : groups) {
      unsigned wm = fn.numWarps, wn = 1;
      bool all = true;
      for (Operation *d : members) all = all && fits(*d, wm, wn);
      if (!all) {
        eligible(*members.front(), wm, wn, /*chain=*/false);
        all = true;
        for (Operation *d : members) all = all && fits(*d, wm, wn);
      }
      if (all)
        for (Operation *d : members) chainWarps[d] = {wm, wn};
    }
  }

  // Makes x (defined in the dot's block) available at the dot: true when it
  // already is, or after moving the pure ops computing it that come after the
  // dot (and do not use its result) to right before it.
  static bool hoistBefore(Operation &dot, Value *x) {
    Block *block = dot.parent;
    std::map<const Operation *, size_t> position;
    size_t i = 0;
    for (auto &op : block->ops) position[op.get()] = i++;
    const size_t at = position.at(&dot);
    std::set<Operation *> toMove;
    std::function<bool(Value *)> collect = [&](Value *v) {
      Operation *def = v->definingOp;
      if (!def || def->parent != block || position.at(def) < at || toMove.count(def)) return true;
      if (def == &dot || !isPure(*def) || !def->regions.empty() || toMove.size() >= 16) return false;
      toMove.insert(def);
      for (Value *operand : def->operands)
        if (!collect(operand)) return false;
      return true;
    };
    if (!collect(x)) return false;
    std::vector<Operation *> ordered(toMove.begin(), toMove.end());
    std::sort(ordered.begin(), ordered.end(),
              [&](Operation *a, Operation *b) { return position.at(a) < position.at(b); });
    for (Operation *op : ordered) {
      auto from = positionOf(*op);
      std::unique_ptr<Operation> moved = std::move(*from);
      block->ops.erase(from);
      block->ops.insert(positionOf(dot), std::move(moved));
    }
    return true;
  }

  // The one operation reading v, or null.
  Operation *soleUser(Value *v) {
    Operation *user = nullptr;
    unsigned uses = 0;
    walk(fn.body, [&](Operation &op) {
      for (Value *operand : op.operands)
        if (operand == v) { ++uses; user = &op; }
    });
    return uses == 1 ? user : nullptr;
  }

  // acc + dot(a, b, 0) (what `acc += tl.dot(a, b)` gives) -> dot(a, b, acc),
  // so that the accumulator can stay in the mma registers. The dot's result
  // may reach the add through a layout conversion (remove-layout-conversions
  // left the dot in its operands' layout and the sum in the loop-carried
  // value's: fla's `b_h1 = b_h1 * g + tl.dot(b_k, b_v)`); the dot then takes
  // the sum's layout.
  void foldAccumulatorAdd(Operation &dot) {
    Value *zero = dot.operand(2), *r = dot.result();
    Operation *z = zero->definingOp;
    if (!z || z->code != OpCode::Constant) return;
    if (z->isFloatConstant() ? z->floatAttr("value") != 0.0 : z->intAttr("value") != 0) return;
    Operation *add = soleUser(r), *convert = nullptr;
    if (add && add->code == OpCode::ConvertLayout && add->parent == dot.parent) {
      convert = add;
      add = soleUser(convert->result());
    }
    if (!add || add->code != OpCode::Add || add->parent != dot.parent || add->operands.size() != 2) return;
    Value *summand = convert ? convert->result() : r;
    Value *x = add->operand(0) == summand ? add->operand(1) : add->operand(0);
    if (x == summand) return;
    if (x == r || !(x->type == r->type) || !(add->result()->type == r->type)) return;
    // x must be available at the dot: an argument of its block, or defined before it there
    // (or computed after it by pure ops that can move before it: `dot(p, v) + acc * alpha`).
    if (x->ownerBlock) {
      if (x->ownerBlock != dot.parent) return;
    } else {
      if (!x->definingOp || x->definingOp->parent != dot.parent) return;
      if (!hoistBefore(dot, x)) return;
    }
    Value *sum = add->result();
    dot.operands[2] = x;
    replaceAllUsesWith(fn.body, sum, r);
    r->layout = sum->layout;
    dot.parent->ops.erase(positionOf(*add));
    if (convert) dot.parent->ops.erase(positionOf(*convert));
  }

  // The warps of a 16-bit wgmma dot, [wm, wn], or false when it does not fit. Like Triton's
  // warpsPerTileV3: all along M ([num_warps, 1]) where M has a 64-row slab for each warpgroup;
  // else (a 64-row block on 8 warps: Unsloth's MoE grouped GEMM) warpgroups along N too,
  // each taking whole 64-column line blocks of B (compiler/ir/Layout.h). Not for a dot in a
  // chain (its A may come from registers of the [num_warps, 1] form) unless A is a transpose,
  // nor one whose B the TMA unit writes (in its own column order; SoftwarePipelineTma.cpp).
  bool wgmmaFits(Operation &dot, unsigned &wm, unsigned &wn) {
    Value *a = dot.operand(0), *b = dot.operand(1), *r = dot.result();
    const ScalarType in = a->type.element().scalar;
    const int64_t M = a->type.shape[0], K = a->type.shape[1], N = b->type.shape[1];
    if (!hopper || (in != ScalarType::F16 && in != ScalarType::BF16) || r->type.element().scalar != ScalarType::F32 ||
        fn.numWarps % 4 || N % 8 || K % 16 || !wgmmaRowFits(K) || !wgmmaRowFits(N))
      return false;
    wm = fn.numWarps, wn = 1;
    if (M % (16 * int64_t{fn.numWarps}) == 0) return true;
    if ((chainWarps.count(&dot) && !transposedOperand(a)) || writtenByTma(b)) return false;
    for (wm = fn.numWarps / 2, wn = 2; wm >= 4 && wm % 4 == 0; wm /= 2, wn *= 2)
      if (M % (16 * int64_t{wm}) == 0 && N % (64 * int64_t{wn}) == 0) return true;
    return false;
  }

  // v is a transpose (through layout conversions): as a dot's A it is staged in shared memory
  // whatever the warps, so a chained dot with such an A (the attention backward's
  // dQ = dS K, dS^T being in registers) may spread its warpgroups along N.
  static bool transposedOperand(Value *v) {
    Operation *def = v->definingOp;
    while (def && def->code == OpCode::ConvertLayout) def = def->operand(0)->definingOp;
    return def && def->code == OpCode::Trans;
  }

  // v is a descriptor load's block (through trans, reshape and layout conversions).
  static bool writtenByTma(Value *v) {
    Operation *def = v->definingOp;
    while (def && (def->code == OpCode::Trans || def->code == OpCode::Reshape || def->code == OpCode::ConvertLayout))
      def = def->operand(0)->definingOp;
    return def && def->code == OpCode::DescLoad;
  }

  // Native fp8 wgmma (m64nNk32, e4m3/e5m2 in any pair, f32 accumulator) for a
  // dot the front-end widened: both operands K-major in shared memory (B is
  // stored transposed by the dot, compiler/codegen/WgmmaDot.cpp), rows of K
  // bytes filling a swizzle line. max_num_imprecise_acc=0 asks for no reduced-precision
  // accumulation at all: as in Triton, that dot keeps the widened f16 form (exact products,
  // f32 accumulation) instead of fp8 wgmma.
  bool fp8WgmmaFits(Operation &dot) {
    Value *a = dot.operand(0), *b = dot.operand(1), *r = dot.result();
    if (!hopper || !fp8Sources(dot).first || a->type.rank() != 2) return false;
    if (dot.hasAttr("max_num_imprecise_acc") && dot.intAttr("max_num_imprecise_acc") == 0) return false;
    const int64_t M = a->type.shape[0], K = a->type.shape[1], N = b->type.shape[1];
    return r->type.element().scalar == ScalarType::F32 && fn.numWarps % 4 == 0 &&
           M % (16 * int64_t{fn.numWarps}) == 0 && N % 8 == 0 && N >= 8 && K % 32 == 0 && wgmmaRowFits(K, 1);
  }

  bool eligible(Operation &dot, unsigned &wm, unsigned &wn, bool chain = true) {
    Value *a = dot.operand(0), *b = dot.operand(1), *acc = dot.operand(2), *r = dot.result();
    if (a->type.rank() != 2 || b->type.rank() != 2 || !r->layout || !acc->layout) return false;
    const ScalarType in = a->type.element().scalar, out = r->type.element().scalar;
    if (b->type.element().scalar != in || a->type.element().pointer) return false;
    const int64_t kStep = mmaKStep(in, out, dot.hasAttr("input_precision") ? dot.stringAttr("input_precision") : "tf32");
    const int64_t M = a->type.shape[0], K = a->type.shape[1], N = b->type.shape[1];
    if (kStep == 0 || M % 16 || N % 8 || K % kStep) return false;
    if (fn.numWarps == 0 || (fn.numWarps & (fn.numWarps - 1))) return false;
    if (auto it = chainWarps.find(&dot); chain && it != chainWarps.end()) {
      std::tie(wm, wn) = it->second;
      return true;
    }
    return chooseWarps(M, N, fn.numWarps, wm, wn);
  }

  void rewrite(Operation &dot, unsigned wm, unsigned wn) {
    const bool fp8Wgmma = fp8WgmmaFits(dot);
    unsigned wgmmaRows = fn.numWarps, wgmmaCols = 1;
    const bool wgmma = fp8Wgmma || wgmmaFits(dot, wgmmaRows, wgmmaCols);
    // Not on wgmma: mma.sync's fp8 form where K splits into its k-steps of 32.
    const bool fp8 = fp8Wgmma || (!wgmma && fp8MmaSync && fp8Sources(dot).first &&
                                  dot.result()->type.element().scalar == ScalarType::F32 &&
                                  dot.operand(0)->type.rank() == 2 && dot.operand(0)->type.shape[1] % 32 == 0);
    LayoutRef mma = wgmma ? Layout::mma(3, {wgmmaRows, wgmmaCols}) : Layout::mma(2, {wm, wn});
    Value *result = dot.result();
    LayoutRef old = result->layout;
    Block *block = dot.parent;
    auto at = positionOf(dot);
    if (fp8) { // the fp8 values themselves; casts left unused go (the pipeline wants loads read once)
      auto [a8, b8] = fp8Sources(dot);
      Operation *castA = dot.operand(0)->definingOp, *castB = dot.operand(1)->definingOp;
      dot.operands[0] = a8;
      dot.operands[1] = b8;
      for (Operation *cast : {castA, castB == castA ? nullptr : castB})
        if (cast && countUses(fn.body, cast->result()) == 0) cast->parent->ops.erase(positionOf(*cast));
      at = positionOf(dot);
    }
    dot.operands[0] = convertAt(block, at, dot.loc, dot.operand(0), Layout::dotOperand(0, mma));
    dot.operands[1] = convertAt(block, at, dot.loc, dot.operand(1), Layout::dotOperand(1, mma));
    Value *acc = dot.operand(2);
    result->layout = mma;
    Value *back = convertAt(block, std::next(at), dot.loc, result, old);
    replaceUsesExcept(fn.body, result, back, back->definingOp);

    // Loop-carried accumulator: acc is argument i of a for body whose yield
    // passes `back` (the dot result) on at the same position, and which has
    // no other users than the dot. (With other users they get a conversion.)
    Operation *loop = acc->ownerBlock ? acc->ownerBlock->parentOp : nullptr;
    Operation *yield = loop && loop->code == OpCode::For ? acc->ownerBlock->terminator() : nullptr;
    unsigned i = acc->index; // body arg i <-> init operand 2 + i, result i - 1, yield operand i - 1
    if (yield && acc->ownerBlock == block && i >= 1 && yield->operands.size() >= i &&
        yield->operand(i - 1) == back && sameLayout(acc->layout, old)) {
      Block *body = acc->ownerBlock;
      acc->layout = mma;
      if (countUses(fn.body, acc) > 1) { // other readers keep the old layout
        Value *accOld = convertAt(body, body->ops.begin(), dot.loc, acc, old);
        replaceUsesExcept(fn.body, acc, accOld, accOld->definingOp);
        dot.operands[2] = acc;
      }
      yield->operands[i - 1] = result;
      if (countUses(fn.body, back) == 0) body->ops.erase(positionOf(*back->definingOp));
      Value *init = loop->operand(2 + i);
      loop->operands[2 + i] = convertAt(loop->parent, positionOf(*loop), loop->loc, init, mma);
      Value *loopResult = loop->result(i - 1);
      loopResult->layout = mma;
      Value *after = convertAt(loop->parent, std::next(positionOf(*loop)), loop->loc, loopResult, old);
      replaceUsesExcept(fn.body, loopResult, after, after->definingOp);
      if (countUses(fn.body, after) == 0) loop->parent->ops.erase(positionOf(*after->definingOp));
    } else {
      dot.operands[2] = convertAt(block, positionOf(dot), dot.loc, acc, mma);
    }
  }

  void run() {
    std::vector<Operation *> dots;
    walk(fn.body, [&](Operation &op) {
      if (op.code == OpCode::Dot) dots.push_back(&op);
    });
    chooseChainWarps(dots);
    for (Operation *dot : dots) {
      unsigned wm, wn;
      if (!eligible(*dot, wm, wn)) continue;
      foldAccumulatorAdd(*dot);
      if (eligible(*dot, wm, wn)) rewrite(*dot, wm, wn);
    }
  }
};

} // namespace

void accelerateDot(Function &fn, const std::string &arch, bool wgmma) {
  if (archNumber(arch) < 80) return;
  Accelerator{fn, wgmma && arch == "sm_90a", archNumber(arch) >= 89}.run();
}

} // namespace tessera::passes
