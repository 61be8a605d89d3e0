// Creation ops, ops that only move elements (splat, broadcast, expand_dims,
// reshape, and the layout-only convert_layout and hint), and reductions.
#include "compiler/interp/Executor.h"

#include <cmath>

namespace tessera::interp {

using ir::OpCode;
using ir::ScalarType;

HostValue evalCreation(Executor &ex, const ir::Operation &op) {
  HostValue out(op.result()->type);
  const ir::Type elem = out.type.element();
  Scalar s{0};
  switch (op.code) {
  case OpCode::Constant: {
    const ir::Attribute &value = op.attrs.at("value");
    const bool isDouble = std::holds_alternative<double>(value);
    if (!isDouble && !std::holds_alternative<int64_t>(value)) ex.error(op, "a constant needs an int or float value");
    const double asDouble = isDouble ? std::get<double>(value) : static_cast<double>(std::get<int64_t>(value));
    if (elem.isFloatElement()) {
      s = makeFloat(asDouble, elem);
    } else {
      // As codegen: a float attribute on an int type converts like a C cast.
      int64_t asInt = isDouble ? static_cast<int64_t>(asDouble) : std::get<int64_t>(value);
      if (elem.pointer) s.i = asInt;
      else if (elem.scalar == ScalarType::I1) s.u = asInt != 0;
      else s = makeInt(asInt, elem);
    }
    break;
  }
  case OpCode::ProgramId:
  case OpCode::NumPrograms: {
    int64_t axis = op.intAttr("axis");
    if (axis < 0 || axis > 2) ex.error(op, "axis must be 0, 1 or 2");
    const Grid &g = ex.context().grid;
    uint32_t v = op.code == OpCode::ProgramId ? ex.programId()[axis] : axis == 0 ? g.x : axis == 1 ? g.y : g.z;
    s = makeInt(static_cast<int64_t>(v), elem);
    break;
  }
  case OpCode::MakeRange: {
    int64_t start = op.intAttr("start");
    for (size_t i = 0; i < out.size(); ++i) out.data[i] = makeInt(start + static_cast<int64_t>(i), elem);
    return out;
  }
  default:
    ex.error(op, std::string("not a creation op: '") + ir::mnemonic(op.code) + "'");
  }
  for (Scalar &d : out.data) d = s;
  return out;
}

HostValue evalShape(Executor &ex, const ir::Operation &op) {
  const HostValue &in = ex.get(op.operand(0));
  const ir::Type &rt = op.result()->type;
  switch (op.code) {
  case OpCode::Splat: {
    HostValue out(rt);
    for (Scalar &d : out.data) d = in.data[0];
    if (rt.pointer)
      for (int32_t &o : out.origin) o = in.origin.empty() ? -1 : in.origin[0];
    return out;
  }
  case OpCode::Broadcast: {
    HostValue out(rt);
    const std::vector<int64_t> &from = in.type.shape, &to = rt.shape;
    if (from.size() != to.size()) ex.error(op, "broadcast changes the rank");
    // Input strides (row-major), 0 along the expanded dims.
    std::vector<int64_t> stride(to.size(), 0);
    int64_t s = 1;
    for (size_t d = from.size(); d-- > 0;) {
      stride[d] = from[d] == 1 ? 0 : s;
      s *= from[d];
    }
    std::vector<int64_t> coord(to.size(), 0);
    for (size_t i = 0; i < out.size(); ++i) {
      int64_t src = 0;
      for (size_t d = 0; d < to.size(); ++d) src += coord[d] * stride[d];
      out.data[i] = in.data[static_cast<size_t>(src)];
      if (rt.pointer) out.origin[i] = in.origin[static_cast<size_t>(src)];
      for (size_t d = to.size(); d-- > 0;) { // next row-major coordinate
        if (++coord[d] < to[d]) break;
        coord[d] = 0;
      }
    }
    return out;
  }
  case OpCode::ExpandDims: case OpCode::Reshape: case OpCode::ConvertLayout: case OpCode::Hint: {
    if (static_cast<size_t>(rt.numElements()) != in.size())
      ex.error(op, "the element count changes from " + std::to_string(in.size()) + " to " +
                       std::to_string(rt.numElements()));
    HostValue out = in;
    out.type = rt;
    return out;
  }
  default:
    ex.error(op, std::string("not a shape op: '") + ir::mnemonic(op.code) + "'");
  }
}

// --------------------------------------------------------------- reduce

namespace {

struct Combiner {
  enum Kind { Sum, Max, Min } kind;
  ir::Type elem;
  bool isFloat, isSigned;

  Scalar operator()(Scalar a, Scalar b) const {
    Scalar r;
    if (isFloat) {
      double v = kind == Sum ? a.f + b.f : kind == Max ? std::fmax(a.f, b.f) : std::fmin(a.f, b.f);
      r.f = roundFloat(v, elem.scalar); // f16 sums round after every add, as on the GPU
    } else if (kind == Sum) {
      r.i = wrapInt(a.u + b.u, elem.scalar);
    } else if (isSigned) {
      r = (kind == Max ? a.i >= b.i : a.i <= b.i) ? a : b;
    } else {
      r = (kind == Max ? a.u >= b.u : a.u <= b.u) ? a : b;
    }
    return r;
  }
};

} // namespace

HostValue evalReduce(Executor &ex, const ir::Operation &op) {
  const HostValue &in = ex.get(op.operand(0));
  HostValue out(op.result()->type);
  const std::vector<int64_t> &shape = in.type.shape;
  const int64_t axis = op.intAttr("axis");
  if (axis < 0 || axis >= static_cast<int64_t>(shape.size())) ex.error(op, "reduction axis out of range");
  if (in.type.pointer) ex.error(op, "cannot reduce a block of pointers");
  const std::string &kind = op.stringAttr("kind");
  Combiner combine{kind == "sum" ? Combiner::Sum : kind == "max" ? Combiner::Max : Combiner::Min,
                   in.type.element(), in.type.isFloatElement(), ir::isSigned(in.type.scalar)};
  if (kind != "sum" && kind != "max" && kind != "min") ex.error(op, "unknown reduction kind '" + kind + "'");

  size_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= static_cast<size_t>(shape[d]);
  for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) inner *= static_cast<size_t>(shape[d]);
  const size_t n = static_cast<size_t>(shape[axis]);
  std::vector<Scalar> line(n);
  for (size_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < inner; ++k) {
      for (size_t j = 0; j < n; ++j) line[j] = in.data[(o * n + j) * inner + k];
      // Pairwise (a tree, like the GPU's shuffles): neighbours first.
      for (size_t len = n; len > 1; len = (len + 1) / 2) {
        for (size_t j = 0; j + 1 < len; j += 2) line[j / 2] = combine(line[j], line[j + 1]);
        if (len % 2) line[len / 2] = line[len - 1];
      }
      out.data[o * inner + k] = line[0];
    }
  return out;
}

} // namespace tessera::interp
