#include "compiler/passes/CommonSubexpressionElimination.h"

#include <cstdint>
#include <cstring>
#include <map>
#include <tuple>
#include <vector>

namespace tessera::passes {

using namespace ir;

namespace {

// Only pure ops merge (Ops.def's traits): a load is not (a store between two loads may change
// what they read). The key does not compare regions, so ops with regions never merge.
bool isMergeable(const Operation &op) { return isPure(op) && op.regions.empty(); }

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
      if (!isMergeable(op)) {
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
