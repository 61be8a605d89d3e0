// Tiling (layout assignment): attaches a Layout to every block value of the
// kernel, inserting convert_layout ops where two layouts meet.
#pragma once

#include "compiler/ir/IR.h"

#include <map>

namespace tessera::passes {

// The pass: the default anchors, then cheap conversions rematerialised.
void assignLayouts(ir::Function &fn);

// Layouts fixed in advance for loads and stores (by coalesce).
using LayoutSeeds = std::map<const ir::Operation *, ir::LayoutRef>;

// Forgets every layout and conversion, then propagates from the seeds (used by
// remove-layout-conversions).
void assignLayouts(ir::Function &fn, const LayoutSeeds &seeds);

} // namespace tessera::passes
