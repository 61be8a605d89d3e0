// The AST's own code: the walks that long binary chains need (AST.h).
#include "dsl/AST.h"

namespace tessera::ast {

// A chain of a million terms would recurse a million deep through
// unique_ptr's destructor: detach each lhs before its parent goes.
BinOp::~BinOp() {
  ExprPtr next = std::move(lhs);
  while (next && next->kind == ExprKind::BinOp) {
    ExprPtr below = std::move(static_cast<BinOp &>(*next).lhs);
    next = std::move(below); // destroys the node above, whose lhs is now empty
  }
}

std::vector<const BinOp *> binOpSpine(const BinOp &top) {
  std::vector<const BinOp *> spine{&top};
  while (spine.back()->lhs->kind == ExprKind::BinOp)
    spine.push_back(static_cast<const BinOp *>(spine.back()->lhs.get()));
  return spine;
}

} // namespace tessera::ast
