#include "compiler/passes/CommonSubexpressionElimination.h"

#include <cstdint>
#include <cstring>
#include <map>
#include <tuple>
#include <vector>

namespace tessera::passes {

using namespace ir;

namespace {

// Loads are excluded: a store between two loads may change what they read.
bool isPure(const Operation &op) {
  switch (op.code) {
  case OpCode::Load: case OpCode::DescLoad: case OpCode::Store: case OpCode::DescStore: case OpCode::For: case OpCode::If: case OpCode::While:
  case OpCode::Yield: case OpCode::Condition: case OpCode::Return:
  case OpCode::AtomicRMW: case OpCode::AtomicCAS: case OpCode::Print: case OpCode::Assert:
  case OpCode::Assume: case OpCode::Barrier:
  case OpCode::LocalAlloc: case OpCode::LocalDealloc: case OpCode::AsyncCopy: case OpCode::AsyncCommit: case OpCode::FenceAsyncShared: case OpCode::DotWait:
  case OpCode::AsyncWait: case OpCode::LocalLoad: case OpCode::LocalStore:
  case OpCode::MbarrierAlloc: case OpCode::AsyncTmaCopy: case OpCode::MbarrierWait: case OpCode::MbarrierArrive: case OpCode::WarpSpecialize:
    return false;
  case OpCode::InlineAsm:
    return op.intAttr("pure") != 0;
  default:
    return op.regions.empty();
  }
}

using Key = std::tuple<OpCode, std::vector<const Value *>, std::map<std::string, Attribute>, std::vector<std::string>>;

Key keyOf(const Operation &op) {
  std::vector<std::string> types;
  for (const auto &r : op.results) types.push_back(r->type.str() + (r->layout ? r->layout->str() : ""));
  // Floats compare by their bits: NaN is not < itself, which would break the map's ordering.
  std::map<std::string, Attribute> attrs = op.attrs;
  for (auto &[name, value] : attrs)
    if (auto *d = std::get_if<double>(&value)) {
      uint64_t bits;
      std::memcpy(&bits, d, sizeof bits);
      value = std::string("\x01float:") + std::to_string(bits);
    }
  return {op.code, {op.operands.begin(), op.operands.end()}, attrs, types};
}

class Eliminator {
public:
  explicit Eliminator(Function &fn) : fn_(fn) {}
  void run() { visit(fn_.body); }

private:
  Function &fn_;
  std::vector<std::map<Key, Operation *>> scopes_;

  Operation *find(const Key &key) {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
      if (auto hit = it->find(key); hit != it->end()) return hit->second;
    return nullptr;
  }

  void visit(Block &block) {
    scopes_.emplace_back();
    for (auto it = block.ops.begin(); it != block.ops.end();) {
      Operation &op = **it;
      for (auto &region : op.regions) visit(*region);
      if (!isPure(op)) {
        ++it;
        continue;
      }
      Key key = keyOf(op);
      if (Operation *earlier = find(key)) {
        for (size_t i = 0; i < op.results.size(); ++i)
          replaceAllUsesWith(fn_.body, op.result(i), earlier->result(i));
        it = block.ops.erase(it);
        continue;
      }
      scopes_.back()[key] = &op;
      ++it;
    }
    scopes_.pop_back();
  }
};

} // namespace

void eliminateCommonSubexpressions(Function &fn) { Eliminator(fn).run(); }

} // namespace tessera::passes
