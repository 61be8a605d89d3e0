// load / store on host memory. Before touching memory every unmasked element
// is checked (the GPU does not check, the interpreter's main use): aligned,
// inside the buffer of the argument the pointer came from (any argument's
// buffer when its origin is unknown), and writable for stores. The first
// offending element is reported with the op's source location.
#include "compiler/interp/Executor.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>

namespace tessera::interp {

namespace {

inline const Scalar &at(const HostValue &v, size_t i) { return v.data.size() == 1 ? v.data[0] : v.data[i]; }
inline int32_t originAt(const HostValue &v, size_t i) {
  return v.origin.empty() ? -1 : v.origin.size() == 1 ? v.origin[0] : v.origin[i];
}

std::string signedText(int64_t v) { return std::to_string(v); }

class AccessChecker {
public:
  // what: "load", "store" or "atomic" (atomics read and write).
  AccessChecker(Executor &ex, const ir::Operation &op, std::string what)
      : ex_(ex), op_(op), ctx_(ex.context()), isStore_(what != "load"), what_(std::move(what)) {}

  // Checks every unmasked element; throws for the first bad one.
  void check(const HostValue &ptr, const HostValue *mask, unsigned bytes) {
    size_t same = 0, first = 0;
    std::string problem, kind, badWord;
    for (size_t i = 0; i < ptr.size(); ++i) {
      if (mask && at(*mask, i).u == 0) continue;
      std::optional<std::string> p = problemWith(at(ptr, i).u, originAt(ptr, i), bytes);
      if (!p) continue;
      if (same == 0) {
        first = i;
        problem = *p;
        kind = kindText_;
        badWord = badWord_;
      }
      if (kind == kindText_) ++same; // elements with the same kind of problem
    }
    if (!same) return;
    const bool block = ptr.type.isBlock();
    std::string msg = kind + ": " +
                      (block ? "element " + coordinateText(static_cast<int64_t>(first), ptr.type.shape) + " of the block"
                             : "the " + what_) +
                      problem + " (program " + ex_.programText();
    if (block && same > 1)
      msg += "; " + std::to_string(same) + " of the block's " + std::to_string(ptr.size()) + " elements are " + badWord;
    msg += ")";
    ex_.error(op_, msg);
  }

private:
  Executor &ex_;
  const ir::Operation &op_;
  const RunContext &ctx_;
  bool isStore_;
  std::string what_;
  std::string kindText_;
  const char *badWord_ = "";

  std::string argName(size_t k) const { return "'" + ctx_.fn.params[k].name + "'"; }

  std::string describe(size_t k) const {
    const ArgValue &a = ctx_.args[k];
    std::string out = "argument " + argName(k);
    uint64_t size = a.end - a.begin;
    std::string bytes = std::to_string(size) + " byte" + (size == 1 ? "" : "s");
    if (!a.description.empty()) out += ", " + a.description + " (" + bytes;
    else out += " (" + bytes;
    if (a.begin != a.bits) {
      out += " at byte offsets [" + signedText(static_cast<int64_t>(a.begin - a.bits)) + ", " +
             signedText(static_cast<int64_t>(a.end - a.bits)) + ")";
    }
    return out + ")";
  }

  std::string range(uint64_t address, unsigned bytes, size_t k) const {
    int64_t offset = static_cast<int64_t>(address - ctx_.args[k].bits);
    return "bytes [" + signedText(offset) + ", " + signedText(offset + bytes) + ")";
  }

  bool inside(uint64_t address, unsigned bytes, const ArgValue &a) const {
    return address >= a.begin && address <= a.end && a.end - address >= bytes;
  }

  std::optional<std::string> problemWith(uint64_t address, int32_t origin, unsigned bytes) {
    const char *verb = isStore_ ? " writes " : " reads ";
    std::optional<size_t> owner;
    if (origin >= 0 && static_cast<size_t>(origin) < ctx_.args.size()) {
      if (!inside(address, bytes, ctx_.args[origin])) {
        kindText_ = "out-of-bounds " + what_;
        badWord_ = "out of bounds";
        return verb + range(address, bytes, origin) + " of " + describe(origin);
      }
      owner = static_cast<size_t>(origin);
    } else {
      for (size_t k = 0; k < ctx_.args.size() && !owner; ++k)
        if (ctx_.fn.params[k].type.pointer && inside(address, bytes, ctx_.args[k])) owner = k;
      if (!owner) {
        kindText_ = "out-of-bounds " + what_;
        badWord_ = "out of bounds";
        char buf[32];
        std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(address));
        return std::string(verb) + std::to_string(bytes) + " bytes at address " + buf +
               ", which is inside no argument's buffer (the pointer was not computed from an argument)";
      }
    }
    if (address % bytes != 0) {
      kindText_ = "misaligned " + what_;
      badWord_ = "misaligned";
      return verb + range(address, bytes, *owner) + " of " + describe(*owner) + ", not a multiple of " +
             std::to_string(bytes) + " bytes (the GPU faults on misaligned accesses)";
    }
    if (isStore_ && !ctx_.args[*owner].writable) {
      kindText_ = what_ + " to read-only memory";
      badWord_ = "stores to read-only memory";
      return verb + range(address, bytes, *owner) + " of " + describe(*owner) + ", which is not writable";
    }
    return std::nullopt;
  }
};

} // namespace

HostValue evalLoad(Executor &ex, const ir::Operation &op) {
  const HostValue &ptr = ex.get(op.operand(0));
  const HostValue *mask = op.loadMask() ? &ex.get(op.loadMask()) : nullptr;
  const HostValue *other = op.loadOther() ? &ex.get(op.loadOther()) : nullptr;
  HostValue out(op.result()->type);
  const ir::Type elem = out.type.element();
  const unsigned bytes = memoryBytes(elem);
  AccessChecker(ex, op, "load").check(ptr, mask, bytes);
  for (size_t i = 0; i < out.size(); ++i) {
    if (mask && at(*mask, i).u == 0) {
      if (other) out.data[i] = at(*other, i); // else 0 (0.0 for floats)
      continue;
    }
    uint64_t bits = 0;
    std::memcpy(&bits, reinterpret_cast<const void *>(at(ptr, i).u), bytes); // little-endian host
    out.data[i] = decodeElement(bits, elem);
  }
  return out;
}

size_t stageStart(Executor &ex, const ir::Operation &op, const HostValue &buffer, const ir::Value *stage) {
  const int64_t s = ex.get(stage).data[0].i;
  if (s < 0 || s >= buffer.type.shape[0])
    ex.error(op, "stage " + std::to_string(s) + " is outside the buffer's " + std::to_string(buffer.type.shape[0]) +
                     " stages");
  return static_cast<size_t>(s * buffer.type.shape[1] * buffer.type.shape[2]);
}

// async_copy: the copy completes at once (the pipeline pass puts a wait and a
// barrier between a copy and the reads of its stage, so no program can tell).
void evalAsyncCopy(Executor &ex, const ir::Operation &op) {
  const HostValue &ptr = ex.get(op.operand(0));
  const bool pred = ex.get(op.operand(3)).data[0].u != 0;
  const HostValue *mask = op.hasAttr("has_mask") && op.intAttr("has_mask") ? &ex.get(op.operand(4)) : nullptr;
  HostValue &buffer = ex.getMutable(op.operand(1));
  const ir::Type elem = buffer.type.element();
  const unsigned bytes = memoryBytes(elem);
  const size_t tile = ptr.type.numElements(), start = stageStart(ex, op, buffer, op.operand(2));
  // transpose = 1: ptr is <cols x rows> of the stage, its (i, j) lands at (j, i).
  const bool transpose = op.hasAttr("transpose") && op.intAttr("transpose");
  const size_t ptrRows = static_cast<size_t>(ptr.type.shape[0]), ptrCols = static_cast<size_t>(ptr.type.shape[1]);
  if (pred) AccessChecker(ex, op, "load").check(ptr, mask, bytes);
  for (size_t i = 0; i < tile; ++i) {
    Scalar &dst = buffer.data[start + (transpose ? (i % ptrCols) * ptrRows + i / ptrCols : i)];
    if (!pred || (mask && at(*mask, i).u == 0)) {
      dst = decodeElement(0, elem); // zero fill
      continue;
    }
    uint64_t bits = 0;
    std::memcpy(&bits, reinterpret_cast<const void *>(at(ptr, i).u), bytes);
    dst = decodeElement(bits, elem);
  }
}

void evalStore(Executor &ex, const ir::Operation &op) {
  const HostValue &ptr = ex.get(op.operand(0));
  const HostValue &value = ex.get(op.operand(1));
  const HostValue *mask = op.storeMask() ? &ex.get(op.storeMask()) : nullptr;
  const ir::Type elem = op.operand(1)->type.element();
  const unsigned bytes = memoryBytes(elem);
  AccessChecker(ex, op, "store").check(ptr, mask, bytes);
  // Element order: row-major. Elements storing to one address: the last
  // wins (on the GPU the winner is unspecified).
  for (size_t i = 0; i < ptr.size(); ++i) {
    if (mask && at(*mask, i).u == 0) continue;
    uint64_t bits = encodeElement(at(value, i), elem);
    std::memcpy(reinterpret_cast<void *>(at(ptr, i).u), &bits, bytes);
  }
}

// Atomics run element by element in row-major order, each seeing the
// previous ones (on the GPU their order is unspecified); the result holds
// the old values (0 where masked off).
HostValue evalAtomic(Executor &ex, const ir::Operation &op) {
  const HostValue &ptr = ex.get(op.operand(0));
  const bool cas = op.code == ir::OpCode::AtomicCAS;
  const HostValue &first = ex.get(op.operand(1));            // val, or cmp for a CAS
  const HostValue *val = cas ? &ex.get(op.operand(2)) : &first;
  const HostValue *mask = !cas && op.hasAttr("has_mask") && op.intAttr("has_mask") ? &ex.get(op.operand(2)) : nullptr;
  HostValue out(op.result()->type);
  const ir::Type elem = out.type.element();
  const unsigned bytes = memoryBytes(elem);
  const std::string kind = cas ? "cas" : op.stringAttr("kind");
  AccessChecker(ex, op, "atomic").check(ptr, mask, bytes);
  const bool isFloat = elem.isFloatElement();
  const bool isSigned = ir::isSigned(elem.scalar) && kind != "umax" && kind != "umin";
  for (size_t i = 0; i < ptr.size(); ++i) {
    if (mask && at(*mask, i).u == 0) continue;
    void *address = reinterpret_cast<void *>(at(ptr, i).u);
    uint64_t bits = 0;
    std::memcpy(&bits, address, bytes);
    const Scalar old = decodeElement(bits, elem), v = at(*val, i);
    Scalar r = v;
    if (cas) {
      if (bits != encodeElement(at(first, i), elem)) r = old; // compares the bits, as atom.cas does
    } else if (kind == "add") {
      r = isFloat ? makeFloat(old.f + v.f, elem) : makeInt(static_cast<int64_t>(old.u + v.u), elem);
    } else if (kind == "max" || kind == "umax" || kind == "min" || kind == "umin") {
      const bool max = kind == "max" || kind == "umax";
      if (isFloat) r.f = max ? std::fmax(old.f, v.f) : std::fmin(old.f, v.f);
      else if (isSigned) r = (max ? old.i >= v.i : old.i <= v.i) ? old : v;
      else r = (max ? old.u >= v.u : old.u <= v.u) ? old : v;
    } else if (kind == "and" || kind == "or" || kind == "xor") {
      if (isFloat) ex.error(op, "atomic " + kind + " needs integers, got " + elem.str());
      uint64_t x = kind == "and" ? old.u & v.u : kind == "or" ? old.u | v.u : old.u ^ v.u;
      r.i = wrapInt(x, elem.scalar);
    } else if (kind != "xchg") {
      ex.error(op, "unknown atomic kind '" + kind + "'");
    }
    uint64_t newBits = encodeElement(r, elem);
    std::memcpy(address, &newBits, bytes);
    out.data[i] = old;
  }
  return out;
}

} // namespace tessera::interp
