// Remove-layout-conversions: drops the convert_layout ops that are not
// needed once loads and stores have their coalesced layouts.
#pragma once

#include "compiler/ir/IR.h"

#include <set>

namespace tessera::passes {

// The pass.
void removeLayoutConversions(ir::Function &fn);

// Replaces each conversion of cheap index math (make_range, splat,
// constants, broadcast/expand_dims and elementwise ops over them, at most a
// few ops) by that math recomputed in the wanted layout. Also run at the end
// of layout-assignment.
void rematerialiseConversions(ir::Function &fn);

// The ops recomputing `v` in another layout would clone; -1 when it is not
// cheap index math. `seen` avoids counting shared operands twice.
int rematerialisationCost(ir::Value *v, std::set<ir::Value *> &seen);

} // namespace tessera::passes
