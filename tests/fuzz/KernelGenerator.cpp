// fuzz_pipeline's kernel generator (KernelGenerator.h). It tracks the shape
// and (approximately) the dtype of every value it defines so that most
// kernels are well typed, and now and then makes a bad combination on
// purpose: those must come back as located diagnostics.
//
// Every byte read is a choice, in program order: reordering, adding or
// dropping a read changes the kernel that each corpus entry stands for
// (rewrite the seeds with make_pipeline_corpus.py after such a change).
#include "tests/fuzz/KernelGenerator.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tessera::fuzz {
namespace {

// ------------------------------------------------------------------ bytes

// The fuzzer's bytes as a stream of choices; past the end every choice is 0.
class Choices {
public:
  Choices(const uint8_t *data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return pos_ >= size_; }
  uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  unsigned pick(unsigned n) { return n ? byte() % n : 0; }
  bool chance(unsigned percent) { return pick(100) < percent; }
  template <class T, size_t N> const T &of(const T (&options)[N]) { return options[pick(N)]; }

private:
  const uint8_t *data_;
  size_t size_;
  size_t pos_ = 0;
};

// ------------------------------------------------------------------ types

enum class DT { I1, I8, I16, I32, I64, U8, U32, F16, BF16, F32, F64, F8E4, F8E5 };

struct DTInfo {
  const char *tl;  // tl.<name>
  const char *sig; // signature spelling
  bool isFloat;
  int bits;
  bool isSigned;
};

const DTInfo &info(DT t) {
  static const DTInfo table[] = {
      {"int1", "i1", false, 1, false},     {"int8", "i8", false, 8, true},
      {"int16", "i16", false, 16, true},   {"int32", "i32", false, 32, true},
      {"int64", "i64", false, 64, true},   {"uint8", "u8", false, 8, false},
      {"uint32", "u32", false, 32, false}, {"float16", "fp16", true, 16, true},
      {"bfloat16", "bf16", true, 16, true}, {"float32", "fp32", true, 32, true},
      {"float64", "fp64", true, 64, true}, {"float8e4nv", "fp8e4nv", true, 8, true},
      {"float8e5", "fp8e5", true, 8, true},
  };
  return table[static_cast<int>(t)];
}

bool isFloat(DT t) { return info(t).isFloat; }
bool isInt(DT t) { return !isFloat(t); }

// Triton's promotion, closely enough to keep most generated kernels well
// typed (a wrong guess only turns into a diagnostic).
DT promote(DT a, DT b) {
  if (a == b) return a;
  if (isFloat(a) || isFloat(b)) {
    if (!isFloat(a)) return b;
    if (!isFloat(b)) return a;
    if (info(a).bits != info(b).bits) return info(a).bits > info(b).bits ? a : b;
    return DT::F32; // f16 with bf16
  }
  if (a == DT::I1) return b;
  if (b == DT::I1) return a;
  if (info(a).bits != info(b).bits) return info(a).bits > info(b).bits ? a : b;
  return info(a).isSigned ? b : a; // same width: unsigned wins
}

using Shape = std::vector<int64_t>;

int64_t numel(const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string shapeTuple(const Shape &s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

// Numpy broadcasting; nullopt-like empty result with ok=false when the shapes clash.
bool broadcastShapes(const Shape &a, const Shape &b, Shape &out) {
  size_t rank = std::max(a.size(), b.size());
  out.assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return false;
    out[i] = std::max(da, db);
  }
  return true;
}

struct Var {
  std::string name;
  Shape shape; // empty: a scalar
  DT dt;
};

// ------------------------------------------------------------------ generator

class KernelGenerator {
public:
  explicit KernelGenerator(Choices &in) : in_(in) {}

  GeneratedKernel run() {
    GeneratedKernel g;
    chooseConfig(g);
    prologue();
    for (int stmts = 0; !in_.empty() && stmts < 14; ++stmts) statement(0);
    epilogue();
    g.source = header() + body_;
    return g;
  }

private:
  Choices &in_;
  std::string body_;
  int indent_ = 1;
  int counter_ = 0;
  std::vector<Var> vars_;
  DT ptrType_[4] = {DT::F32, DT::F32, DT::F32, DT::F32}; // x, y, z (out), w (atomics)
  int64_t block_ = 64, bm_ = 16, bn_ = 16, dm_ = 16, dn_ = 16, dk_ = 16;
  bool usesCombine_ = false;

  static constexpr const char *kPtrNames[4] = {"x_ptr", "y_ptr", "z_ptr", "w_ptr"};

  // ---------------------------------------------------------------- config

  void chooseConfig(GeneratedKernel &g) {
    static const DT ptrTypes[] = {DT::F32, DT::F32, DT::F16, DT::BF16, DT::I32, DT::I64,
                                  DT::I8,  DT::U8,  DT::F64, DT::F16,  DT::I16, DT::F8E4};
    for (DT &t : ptrType_) t = in_.of(ptrTypes);
    static const unsigned warps[] = {1, 2, 4, 8};
    static const unsigned stages[] = {1, 2, 3};
    g.options.numWarps = in_.of(warps);
    g.options.numStages = in_.of(stages);
    uint8_t flags = in_.byte();
    g.options.arch = flags & 1 ? "sm_90a" : "sm_80";
    g.options.tensorCores = flags & 2 ? 1 : 0;
    g.options.debug = (flags & 0x1c) == 0x1c; // now and then: device asserts on

    static const int64_t blocks[] = {16, 32, 64, 128, 256, 32, 64, 1, 2, 512};
    static const int64_t dims[] = {1, 2, 4, 8, 16, 32, 64, 16, 32, 8};
    static const int64_t dotDims[] = {16, 32};
    block_ = in_.of(blocks);
    bm_ = in_.of(dims);
    bn_ = in_.of(dims);
    dm_ = in_.of(dotDims);
    dn_ = in_.of(dotDims);
    dk_ = in_.of(dotDims);
    if (flags & 0x20) block_ = 48; // not a power of two: tl.arange must say so
    while (bm_ * bn_ > 2048) bn_ /= 2;

    bool nHint = flags & 0x40;
    bool nIs64 = flags & 0x80;
    g.signatureText.clear();
    for (DT t : ptrType_) {
      tessera::ArgSpec a;
      a.type = tessera::ir::Type::ptr(*tessera::ir::parseScalarType(info(t).sig));
      a.divisibility = 16;
      g.signature.push_back(a);
      g.signatureText += std::string("*") + info(t).sig + ":16,";
    }
    tessera::ArgSpec n;
    n.type = tessera::ir::Type(nIs64 ? tessera::ir::ScalarType::I64 : tessera::ir::ScalarType::I32);
    n.divisibility = nHint ? 16 : 1;
    g.signature.push_back(n);
    g.signatureText += std::string(nIs64 ? "i64" : "i32") + (nHint ? ":16," : ",");
    tessera::ArgSpec s;
    s.type = tessera::ir::Type(tessera::ir::ScalarType::F32);
    g.signature.push_back(s);
    g.signatureText += "fp32";

    g.constexprs["BLOCK"] = tessera::ConstexprValue::ofInt(block_);
    g.constexprs["BM"] = tessera::ConstexprValue::ofInt(bm_);
    g.constexprs["BN"] = tessera::ConstexprValue::ofInt(bn_);
    g.constexprs["DM"] = tessera::ConstexprValue::ofInt(dm_);
    g.constexprs["DN"] = tessera::ConstexprValue::ofInt(dn_);
    g.constexprs["DK"] = tessera::ConstexprValue::ofInt(dk_);
    // The kernel source refers to n's type through the pool below.
    nType_ = nIs64 ? DT::I64 : DT::I32;
  }
  DT nType_ = DT::I32;

  std::string header() const {
    std::string h = "import tessera\nimport tessera.language as tl\n\n";
    if (usesCombine_)
      h += "@tessera.jit\ndef _combine(a, b):\n    return a + b\n\n";
    h += "@tessera.jit\n"
         "def k(x_ptr, y_ptr, z_ptr, w_ptr, n, s, BLOCK: tl.constexpr, BM: tl.constexpr,\n"
         "      BN: tl.constexpr, DM: tl.constexpr, DN: tl.constexpr, DK: tl.constexpr):\n";
    return h;
  }

  // ---------------------------------------------------------------- output

  void line(const std::string &text) {
    body_.append(size_t(indent_) * 4, ' ');
    body_ += text;
    body_ += '\n';
  }

  std::string fresh() { return "v" + std::to_string(counter_++); }

  Var &define(const std::string &expr, Shape shape, DT dt) {
    Var v{fresh(), std::move(shape), dt};
    line(v.name + " = " + expr);
    vars_.push_back(v);
    return vars_.back();
  }

  // ---------------------------------------------------------------- pool

  const Var &anyVar() { return vars_[in_.pick(vars_.size())]; }

  template <class Pred> const Var *findVar(Pred pred) {
    std::vector<const Var *> ok;
    for (const Var &v : vars_)
      if (pred(v)) ok.push_back(&v);
    if (ok.empty()) return nullptr;
    return ok[in_.pick(ok.size())];
  }

  // A partner for a binary op with `a`: mostly one that broadcasts with it.
  const Var &partner(const Var &a) {
    if (in_.chance(8)) return anyVar();
    Shape out;
    const Var *b = findVar([&](const Var &v) { return broadcastShapes(a.shape, v.shape, out); });
    return b ? *b : a;
  }

  std::string tlType(DT t) const { return std::string("tl.") + info(t).tl; }

  // Offsets (and their shape) addressing `shape` elements of a buffer.
  std::string offsetsFor(const Shape &shape) {
    if (shape.empty()) return "pid";
    if (shape.size() == 1) {
      if (shape[0] == block_ && in_.chance(50)) return "offs";
      return "tl.arange(0, " + std::to_string(shape[0]) + ")";
    }
    std::string out;
    int64_t stride = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      std::string idx = "tl.arange(0, " + std::to_string(shape[d]) + ")[";
      for (size_t e = 0; e < shape.size(); ++e) idx += std::string(e ? ", " : "") + (e == d ? ":" : "None");
      idx += "]";
      std::string term = stride == 1 ? idx : idx + " * " + std::to_string(stride);
      out = out.empty() ? term : term + " + " + out;
      stride *= shape[d];
    }
    return out;
  }

  std::string cacheKeywords(bool load) {
    std::string out;
    switch (in_.pick(8)) {
    case 0: out += load ? ", cache_modifier=\".cg\"" : ", cache_modifier=\".cs\""; break;
    case 1: out += load ? ", cache_modifier=\".ca\"" : ", cache_modifier=\".wt\""; break;
    case 2: out += ", eviction_policy=\"evict_last\""; break;
    case 3: out += ", eviction_policy=\"evict_first\""; break;
    case 4: if (load) out += ", volatile=True"; break;
    case 5: if (in_.chance(20)) out += ", cache_modifier=\".zz\""; break; // bad: a diagnostic
    default: break;
    }
    return out;
  }

  std::string maskFor(const std::string &offsets, const Shape &shape) {
    if (shape.empty()) return "";
    switch (in_.pick(4)) {
    case 0: return "";
    case 1: return ", mask=" + offsets + " < n";
    case 2: return shape.size() == 1 && shape[0] == block_ ? ", mask=mask" : ", mask=" + offsets + " < n";
    default: return ", mask=" + offsets + " < " + std::to_string(numel(shape) - 1);
    }
  }

  // ---------------------------------------------------------------- prologue / epilogue

  void prologue() {
    line("pid = tl.program_id(0)");
    vars_.push_back({"pid", {}, DT::I32});
    vars_.push_back({"n", {}, nType_});
    vars_.push_back({"s", {}, DT::F32});
    if (in_.chance(15)) {
      line("if pid >= n:");
      ++indent_;
      line("return");
      --indent_;
    }
    DT offsType = DT::I32;
    switch (in_.pick(5)) {
    case 1: line("pid = tl.program_id(1) * tl.num_programs(0) + pid"); break;
    default: break;
    }
    line("offs = pid * BLOCK + tl.arange(0, BLOCK)");
    switch (in_.pick(5)) {
    case 1: line("offs = tl.max_contiguous(tl.multiple_of(offs, BLOCK), BLOCK)"); break;
    case 2: line("offs = offs.to(tl.int64)"); offsType = DT::I64; break;
    case 3: line("offs = tl.multiple_of(offs, 8)"); break;
    default: break;
    }
    line("mask = offs < n");
    vars_.push_back({"offs", {block_}, offsType});
    vars_.push_back({"mask", {block_}, DT::I1});
    line("rm = tl.arange(0, BM)");
    line("rn = tl.arange(0, BN)");
    vars_.push_back({"rm", {bm_}, DT::I32});
    vars_.push_back({"rn", {bn_}, DT::I32});
    define("tl.load(x_ptr + offs, mask=mask, other=0)", {block_}, ptrType_[0]);
    if (in_.chance(50))
      define("tl.load(y_ptr + rm[:, None] * BN + rn[None, :])", {bm_, bn_}, ptrType_[1]);
  }

  void epilogue() {
    // Store the last few values so that dead-code elimination keeps the work.
    int stored = 0;
    for (size_t i = vars_.size(); i-- > 0 && stored < 3;) {
      const Var &v = vars_[i];
      if (v.name.rfind("v", 0) != 0) continue;
      store(v, 2);
      ++stored;
    }
  }

  void store(const Var &v, int ptr) {
    std::string value = v.name;
    Shape shape = v.shape;
    if (shape.size() > 1 && in_.chance(30)) {
      value = "tl.ravel(" + value + ")";
      shape = {numel(shape)};
    }
    std::string offsets = offsetsFor(shape);
    line(std::string("tl.store(") + kPtrNames[ptr] + " + " + offsets + ", " + value + maskFor(offsets, shape) +
         cacheKeywords(false) + ")");
  }

  // ---------------------------------------------------------------- statements

  void statement(int depth) {
    if (vars_.size() > 40) return;
    switch (in_.pick(22)) {
    case 0: case 1: binary(); break;
    case 2: unary(); break;
    case 3: cast(); break;
    case 4: where(); break;
    case 5: reduce(); break;
    case 6: scan(); break;
    case 7: broadcastOp(); break;
    case 8: shapeOp(); break;
    case 9: load(); break;
    case 10: store(anyVar(), in_.pick(4)); break;
    case 11: if (depth < 2) forLoop(depth); else binary(); break;
    case 12: if (depth < 2) ifElse(depth); else unary(); break;
    case 13: dot(depth); break;
    case 14: atomic(); break;
    case 15: binary(); break;
    case 16: math2(); break;
    case 17: full(); break;
    case 18: if (depth < 2) whileLoop(depth); else cast(); break;
    case 20: debugOp(); break;
    case 21: hintOp(); break;
    default: literalOp(); break;
    }
  }

  void binary() {
    const Var &a = anyVar();
    const Var &b = partner(a);
    static const char *arith[] = {"+", "-", "*", "/", "//", "%"};
    static const char *bits[] = {"&", "|", "^", "<<", ">>"};
    static const char *cmp[] = {"<", "<=", ">", ">=", "==", "!="};
    Shape shape;
    broadcastShapes(a.shape, b.shape, shape);
    std::string op;
    DT dt = promote(a.dt, b.dt);
    bool floats = isFloat(a.dt) || isFloat(b.dt);
    bool sloppy = in_.chance(4); // any operator, typed or not
    switch (in_.pick(4)) {
    case 0: case 1:
      op = in_.of(arith);
      if (floats && op == "//" && !sloppy) op = "/";
      if (op == "/" && isInt(dt)) dt = DT::F32;
      break;
    case 2:
      op = in_.of(bits);
      if (floats && !sloppy) op = "*";
      break;
    default:
      op = in_.of(cmp);
      dt = DT::I1;
      break;
    }
    Var copyA = a, copyB = b;
    define(copyA.name + " " + op + " " + copyB.name, shape, dt);
  }

  void literalOp() {
    Var a = anyVar();
    static const char *ops[] = {"+", "*", "-", "<", ">>", "%"};
    std::string op = in_.of(ops);
    bool fl = in_.chance(40);
    std::string lit = fl ? "1.5" : std::to_string(in_.pick(9));
    if (op == ">>") lit = std::to_string(in_.pick(5));
    if (op == ">>" && (fl || isFloat(a.dt))) op = "*";
    DT dt = a.dt;
    if (fl && isInt(dt)) dt = DT::F32;
    if (op == "<") dt = DT::I1;
    define(in_.chance(50) ? a.name + " " + op + " " + lit : lit + " " + op + " " + a.name, a.shape, dt);
  }

  void unary() {
    Var a = anyVar();
    static const char *floatFns[] = {"tl.exp", "tl.exp2", "tl.log", "tl.log2", "tl.sqrt", "tl.rsqrt",
                                     "tl.sin", "tl.cos", "tl.sigmoid", "tl.erf", "tl.floor", "tl.ceil",
                                     "tl.math.tanh", "tl.sqrt_rn", "tl.math.log1p", "tl.abs"};
    switch (in_.pick(5)) {
    case 0: define("-" + a.name, a.shape, a.dt); break;
    case 1:
      if (isInt(a.dt) || in_.chance(5)) { define("~" + a.name, a.shape, a.dt); break; } // floats: a diagnostic
      define("-" + a.name, a.shape, a.dt);
      break;
    case 2: define("tl.abs(" + a.name + ")", a.shape, a.dt); break;
    case 3:
      if (a.shape.size() >= 1 && a.shape.size() <= 2 && isFloat(a.dt) && in_.chance(50)) {
        define("tl.softmax(" + a.name + ")", a.shape, a.dt);
        break;
      }
      [[fallthrough]];
    default: {
      DT dt = isFloat(a.dt) ? a.dt : DT::F32;
      define(std::string(in_.of(floatFns)) + "(" + a.name + ")", a.shape, dt);
    }
    }
  }

  void math2() {
    Var a = anyVar();
    Var b = partner(a);
    Shape shape;
    broadcastShapes(a.shape, b.shape, shape);
    DT dt = promote(a.dt, b.dt);
    switch (in_.pick(6)) {
    case 0: define("tl.maximum(" + a.name + ", " + b.name + ")", shape, dt); break;
    case 1: define("tl.minimum(" + a.name + ", " + b.name + ")", shape, dt); break;
    case 2: define("tl.fdiv(" + a.name + ", " + b.name + ")", shape, isFloat(dt) ? dt : DT::F32); break;
    case 3:
      if (isInt(dt) || in_.chance(5)) { define("tl.umulhi(" + a.name + ", " + b.name + ")", shape, dt); break; }
      define("tl.maximum(" + a.name + ", " + b.name + ")", shape, dt);
      break;
    case 4: define("tl.clamp(" + a.name + ", " + b.name + ", " + b.name + " + 4)", shape, dt); break;
    default: define("tl.fma(" + a.name + ", " + b.name + ", " + a.name + ")", shape, dt); break;
    }
  }

  void cast() {
    Var a = anyVar();
    static const DT targets[] = {DT::F32, DT::F16, DT::BF16, DT::I32, DT::I64, DT::I8, DT::U8,
                                 DT::I1,  DT::F64, DT::U32, DT::I16, DT::F8E4, DT::F8E5};
    DT to = in_.of(targets);
    switch (in_.pick(4)) {
    case 0: define("tl.cast(" + a.name + ", " + tlType(to) + ")", a.shape, to); break;
    case 1: {
      // A bitcast keeps the width; pick a type of the same width most of the time.
      if (!in_.chance(15))
        for (DT t : targets)
          if (info(t).bits == info(a.dt).bits && t != a.dt) to = t;
      define(a.name + ".to(" + tlType(to) + ", bitcast=True)", a.shape, to);
      break;
    }
    default: define(a.name + ".to(" + tlType(to) + ")", a.shape, to); break;
    }
  }

  void where() {
    Var c = anyVar();
    Var a = partner(c);
    Var b = partner(a);
    Shape ab, shape;
    broadcastShapes(a.shape, b.shape, ab);
    broadcastShapes(c.shape, ab, shape);
    std::string cond = c.dt == DT::I1 && in_.chance(70) ? c.name : c.name + " > 0";
    define("tl.where(" + cond + ", " + a.name + ", " + b.name + ")", shape, promote(a.dt, b.dt));
  }

  int axisFor(const Shape &s) {
    if (s.empty() || in_.chance(5)) return int(in_.pick(3)); // may be out of range
    return int(in_.pick(s.size()));
  }

  void reduce() {
    const Var *found = findVar([](const Var &v) { return !v.shape.empty(); });
    Var a = found && !in_.chance(5) ? *found : anyVar();
    int axis = axisFor(a.shape);
    bool keep = in_.chance(25);
    Shape out = a.shape;
    if (!out.empty() && size_t(axis) < out.size()) {
      if (keep) out[axis] = 1;
      else out.erase(out.begin() + axis);
    }
    std::string ax = ", axis=" + std::to_string(axis) + (keep ? ", keep_dims=True" : "");
    switch (in_.pick(8)) {
    case 0: case 1: define("tl.sum(" + a.name + ax + ")", out, a.dt == DT::I1 ? DT::I32 : a.dt); break;
    case 2: define("tl.max(" + a.name + ax + ")", out, a.dt); break;
    case 3: define("tl.min(" + a.name + ax + ")", out, a.dt); break;
    case 4: define("tl.argmax(" + a.name + ax + ")", out, DT::I32); break;
    case 5:
      if (isInt(a.dt) || in_.chance(5)) { define("tl.xor_sum(" + a.name + ax + ")", out, a.dt); break; }
      define("tl.min(" + a.name + ax + ")", out, a.dt);
      break;
    case 6:
      usesCombine_ = true;
      define("tl.reduce(" + a.name + ", " + std::to_string(axis) + ", _combine)", a.shape.empty() ? a.shape : out, a.dt);
      break;
    default: {
      // Reduce everything: axis=None.
      define("tl.sum(" + a.name + ")", {}, a.dt == DT::I1 ? DT::I32 : a.dt);
      break;
    }
    }
  }

  void scan() {
    const Var *found = findVar([](const Var &v) { return !v.shape.empty(); });
    Var a = found ? *found : anyVar();
    int axis = axisFor(a.shape);
    std::string rev = in_.chance(30) ? ", reverse=True" : "";
    switch (in_.pick(3)) {
    case 0: define("tl.cumsum(" + a.name + ", axis=" + std::to_string(axis) + rev + ")", a.shape, a.dt == DT::I1 ? DT::I32 : a.dt); break;
    case 1: define("tl.cumprod(" + a.name + ", " + std::to_string(axis) + rev + ")", a.shape, a.dt == DT::I1 ? DT::I32 : a.dt); break;
    default:
      usesCombine_ = true;
      define("tl.associative_scan(" + a.name + ", " + std::to_string(axis) + ", _combine" + rev + ")", a.shape, a.dt);
      break;
    }
  }

  void broadcastOp() {
    const Var *one = findVar([](const Var &v) { return v.shape.size() == 1; });
    if (!one) return binary();
    Var a = *one;
    const Var *other = findVar([](const Var &v) { return v.shape.size() == 1; });
    Var b = other ? *other : a;
    switch (in_.pick(4)) {
    case 0: define(a.name + "[:, None]", {a.shape[0], 1}, a.dt); break;
    case 1: define(a.name + "[None, :]", {1, a.shape[0]}, a.dt); break;
    case 2:
      define(a.name + "[:, None] " + (in_.chance(50) ? "+ " : "* ") + b.name + "[None, :]",
             {a.shape[0], b.shape[0]}, promote(a.dt, b.dt));
      break;
    default: {
      Shape to = {in_.chance(50) ? bm_ : a.shape[0], a.shape[0]};
      define("tl.broadcast_to(" + a.name + "[None, :], " + shapeTuple(to) + ")", to, a.dt);
      break;
    }
    }
  }

  // A reshape target: the same number of elements split into 1-3 dims.
  Shape reshapeOf(const Shape &s) {
    int64_t total = numel(s);
    size_t rank = 1 + in_.pick(3);
    Shape out;
    for (size_t i = 0; i + 1 < rank && total > 1; ++i) {
      int64_t d = int64_t(1) << in_.pick(4);
      while (d > 1 && total % d) d /= 2;
      out.push_back(d);
      total /= d;
    }
    out.push_back(total);
    return out;
  }

  void shapeOp() {
    const Var *found = findVar([](const Var &v) { return !v.shape.empty(); });
    if (!found) return unary();
    Var a = *found;
    Shape s = a.shape;
    switch (in_.pick(9)) {
    case 0:
      if (s.size() == 2) {
        define(in_.chance(50) ? "tl.trans(" + a.name + ")" : a.name + ".T", {s[1], s[0]}, a.dt);
        break;
      }
      if (s.size() > 2) std::swap(s[s.size() - 2], s[s.size() - 1]); // Triton: the last two dims swapped
      define("tl.trans(" + a.name + ")", s, a.dt);                     // rank 1: a diagnostic
      break;
    case 1: {
      if (s.size() == 2) { define("tl.permute(" + a.name + ", (1, 0))", {s[1], s[0]}, a.dt); break; }
      if (s.size() == 3) { define("tl.permute(" + a.name + ", (2, 0, 1))", {s[2], s[0], s[1]}, a.dt); break; }
      define("tl.ravel(" + a.name + ")", {numel(s)}, a.dt);
      break;
    }
    case 2: {
      Shape to = reshapeOf(s);
      define("tl.reshape(" + a.name + ", " + shapeTuple(to) + ")", to, a.dt);
      break;
    }
    case 3: {
      size_t ax = in_.pick(s.size() + 1);
      Shape to = s;
      to.insert(to.begin() + ax, 1);
      define("tl.expand_dims(" + a.name + ", " + std::to_string(ax) + ")", to, a.dt);
      break;
    }
    case 4: {
      Shape to = s;
      to.push_back(2);
      const Var *b = findVar([&](const Var &v) { return v.shape == s; });
      define("tl.join(" + a.name + ", " + (b ? b->name : a.name) + ")", to, b ? promote(a.dt, b->dt) : a.dt);
      break;
    }
    case 5: {
      if (s.back() == 2) {
        Shape to(s.begin(), s.end() - 1);
        std::string l = fresh(), r = fresh();
        line(l + ", " + r + " = tl.split(" + a.name + ")");
        vars_.push_back({l, to, a.dt});
        vars_.push_back({r, to, a.dt});
        break;
      }
      Shape to = s;
      to[0] *= 2;
      define("tl.cat(" + a.name + ", " + a.name + ", can_reorder=True)", to, a.dt);
      break;
    }
    case 6:
      define("tl.flip(" + a.name + (in_.chance(50) ? ", 0" : "") + ")", s, a.dt);
      break;
    case 7:
      define(a.name + ".reshape(" + std::to_string(numel(s)) + ")", {numel(s)}, a.dt);
      break;
    default: {
      // view: a 2-D tile of a 1-D value and back through a reduction.
      Shape to = reshapeOf(s);
      define("tl.view(" + a.name + ", " + shapeTuple(to) + ")", to, a.dt);
      break;
    }
    }
  }

  void full() {
    static const DT types[] = {DT::F32, DT::I32, DT::F16, DT::I64, DT::BF16, DT::I1};
    DT dt = in_.of(types);
    Shape shape;
    switch (in_.pick(4)) {
    case 0: shape = {block_}; break;
    case 1: shape = {bm_, bn_}; break;
    case 2: shape = {bm_}; break;
    default: shape = {bn_, bm_}; break;
    }
    if (in_.chance(50)) define("tl.zeros(" + shapeTuple(shape) + ", dtype=" + tlType(dt) + ")", shape, dt);
    else define("tl.full(" + shapeTuple(shape) + ", " + std::to_string(in_.pick(7)) + ", " + tlType(dt) + ")", shape, dt);
  }

  void debugOp() {
    Var a = anyVar();
    switch (in_.pick(4)) {
    case 0: line("tl.device_assert(" + a.name + " == " + a.name + ", \"fuzz\")"); break;
    case 1: line("tl.debug_barrier()"); break;
    case 2: line("tl.static_assert(BLOCK > 0)"); break;
    default: line("tl.device_print(\"v\", " + a.name + ")"); break;
    }
  }

  // Alignment and contiguity hints on an integer block (axis analysis, coalescing).
  void hintOp() {
    const Var *found = findVar([](const Var &v) { return v.shape.size() == 1 && isInt(v.dt) && v.dt != DT::I1; });
    if (!found) return literalOp();
    Var a = *found;
    static const char *divs[] = {"2", "4", "8", "16"};
    switch (in_.pick(3)) {
    case 0: define("tl.multiple_of(" + a.name + ", " + in_.of(divs) + ")", a.shape, a.dt); break;
    case 1: define("tl.max_contiguous(" + a.name + ", " + in_.of(divs) + ")", a.shape, a.dt); break;
    default: {
      // A vectorisable access: contiguous offsets, loaded and stored again.
      Var v = define(std::string("tl.load(x_ptr + tl.max_contiguous(tl.multiple_of(") + a.name + ", " + in_.of(divs) +
                         "), " + in_.of(divs) + ")" + maskFor(a.name, a.shape) + ")",
                     a.shape, ptrType_[0]);
      line("tl.store(z_ptr + " + a.name + ", " + v.name + maskFor(a.name, a.shape) + ")");
      break;
    }
    }
  }

  void load() {
    int ptr = in_.pick(4);
    Shape shape;
    switch (in_.pick(6)) {
    case 0: shape = {}; break;
    case 1: case 2: shape = {block_}; break;
    case 3: shape = {bm_, bn_}; break;
    case 4: shape = {bm_}; break;
    default: shape = {2, bm_, bn_ > 4 ? 4 : bn_}; break;
    }
    std::string offsets = offsetsFor(shape);
    std::string mask = maskFor(offsets, shape);
    std::string other;
    if (!mask.empty() && in_.chance(60)) other = isFloat(ptrType_[ptr]) && in_.chance(60) ? ", other=0.0" : ", other=1";
    define(std::string("tl.load(") + kPtrNames[ptr] + " + " + offsets + mask + other + cacheKeywords(true) + ")",
           shape, ptrType_[ptr]);
  }

  void atomic() {
    const Var &v = anyVar();
    Var val = v;
    std::string offsets = offsetsFor(val.shape);
    static const char *ops[] = {"atomic_add", "atomic_max", "atomic_min", "atomic_and",
                                "atomic_or",  "atomic_xor", "atomic_xchg", "atomic_add"};
    static const char *sems[] = {"", ", sem=\"relaxed\"", ", sem=\"acquire\"", ", sem=\"release\"",
                                 ", sem=\"acq_rel\""};
    static const char *scopes[] = {"", ", scope=\"cta\"", ", scope=\"gpu\"", ", scope=\"sys\""};
    std::string value = val.name;
    if (in_.chance(70)) value += ".to(" + tlType(ptrType_[3]) + ")";
    if (in_.chance(15)) {
      std::string cmp = "tl.full(" + (val.shape.empty() ? std::string("[]") : shapeTuple(val.shape)) + ", 1, " +
                        tlType(ptrType_[3]) + ")";
      if (val.shape.empty()) cmp = "1";
      define("tl.atomic_cas(w_ptr + " + offsets + ", " + cmp + ", " + value + std::string(in_.of(sems)) + ")",
             val.shape, ptrType_[3]);
      return;
    }
    std::string mask = maskFor(offsets, val.shape);
    define(std::string("tl.") + in_.of(ops) + "(w_ptr + " + offsets + ", " + value + mask + in_.of(sems) +
               in_.of(scopes) + ")",
           val.shape, ptrType_[3]);
  }

  // ---------------------------------------------------------------- dot

  void dot(int depth) {
    static const DT operandTypes[] = {DT::F16, DT::F16, DT::BF16, DT::F32, DT::I8, DT::F8E4, DT::F16, DT::F64};
    DT at = in_.of(operandTypes);
    DT bt = in_.chance(85) ? at : in_.of(operandTypes);
    DT acc = isInt(at) ? DT::I32 : at == DT::F64 ? DT::F64 : DT::F32;
    std::string extra;
    switch (in_.pick(6)) {
    case 0: extra = ", input_precision=\"tf32\""; break;
    case 1: extra = ", input_precision=\"ieee\""; break;
    case 2: // out_dtype is honoured for f16 (and fp8) operands only; f32/bf16 dots give f32, as in Triton
      if (at == DT::F16 || at == DT::F8E4) { extra = ", out_dtype=tl.float16"; acc = DT::F16; }
      break;
    case 3: extra = ", allow_tf32=False"; break;
    default: break;
    }
    // Operand offsets; now and then a K that does not match (a diagnostic).
    std::string bk = in_.chance(5) ? (dk_ == 16 ? "32" : "16") : "DK";
    std::string aOffs = "tl.arange(0, DM)[:, None] * DK + tl.arange(0, DK)[None, :]";
    std::string bOffs = "tl.arange(0, " + bk + ")[:, None] * DN + tl.arange(0, DN)[None, :]";
    std::string a = fresh(), b = fresh();
    bool loop = depth == 0 && in_.chance(50);
    if (!loop) {
      line(a + " = tl.load(x_ptr + " + aOffs + ").to(" + tlType(at) + ")");
      line(b + " = tl.load(y_ptr + " + bOffs + ").to(" + tlType(bt) + ")");
      std::string accArg;
      if (in_.chance(40)) {
        Var c = define("tl.zeros((DM, DN), dtype=" + tlType(acc) + ")", {dm_, dn_}, acc);
        accArg = ", " + c.name;
      }
      if (accArg.empty() && extra.empty() && in_.chance(30))
        define(a + " @ " + b, {dm_, dn_}, acc);
      else
        define("tl.dot(" + a + ", " + b + accArg + extra + ")", {dm_, dn_}, acc);
      return;
    }
    // The GEMM shape: pointer blocks advanced each K step, the accumulator
    // carried by the loop (the pipeline pass's pattern when num_stages > 1).
    Var c = define("tl.zeros((DM, DN), dtype=" + tlType(acc) + ")", {dm_, dn_}, acc);
    std::string ap = fresh(), bp = fresh(), kk = fresh();
    line(ap + " = x_ptr + " + aOffs);
    line(bp + " = y_ptr + " + bOffs);
    bool masked = in_.chance(50);
    line("for " + kk + " in range(0, " + (in_.chance(50) ? std::string("n") : std::to_string(1 + in_.pick(4)) + " * DK") +
         ", DK):");
    ++indent_;
    std::string am = masked ? ", mask=tl.arange(0, DK)[None, :] < n - " + kk + ", other=0.0" : "";
    std::string bm = masked ? ", mask=tl.arange(0, DK)[:, None] < n - " + kk + ", other=0.0" : "";
    line(a + " = tl.load(" + ap + am + ").to(" + tlType(at) + ")");
    line(b + " = tl.load(" + bp + bm + ").to(" + tlType(bt) + ")");
    if (in_.chance(50)) line(c.name + " = tl.dot(" + a + ", " + b + ", " + c.name + extra + ")");
    else line(c.name + " += tl.dot(" + a + ", " + b + extra + ")");
    line(ap + " += DK");
    line(bp + " += DK * DN");
    --indent_;
  }

  // ---------------------------------------------------------------- control flow

  // `target = <expression of target's shape and type>`, from the pool.
  void reassign(const Var &target) {
    Shape out;
    const Var *b = findVar([&](const Var &v) { return broadcastShapes(target.shape, v.shape, out) && out == target.shape; });
    std::string other = b ? b->name : "1";
    static const char *ops[] = {"+", "*", "-", "+"};
    std::string expr = target.name + " " + in_.of(ops) + " " + other;
    if (target.dt == DT::I1) expr = target.name + " ^ (" + other + " > 0)";
    line(target.name + " = (" + expr + ").to(" + tlType(target.dt) + ")");
  }

  void nested(int depth, size_t count) {
    for (size_t i = 0; i < count && !in_.empty(); ++i) statement(depth + 1);
  }

  // Names defined inside a branch or a loop body are not used after it.
  void dropAfter(size_t size) { vars_.resize(std::min(size, vars_.size())); }

  void forLoop(int depth) {
    Var carried = anyVar();
    std::string i = fresh();
    std::string range;
    switch (in_.pick(5)) {
    case 0: range = "range(0, " + std::to_string(1 + in_.pick(4)) + ")"; break;
    case 1: range = "range(0, n, " + std::to_string(1 + in_.pick(8)) + ")"; break;
    case 2: range = "tl.range(0, n, num_stages=" + std::to_string(1 + in_.pick(3)) + ")"; break;
    case 3: range = "tl.static_range(" + std::to_string(1 + in_.pick(3)) + ")"; break;
    default: range = "range(pid, n)"; break;
    }
    line("for " + i + " in " + range + ":");
    ++indent_;
    size_t mark = vars_.size();
    vars_.push_back({i, {}, range.rfind("tl.static_range", 0) == 0 ? DT::I32 : nType_});
    nested(depth, 1 + in_.pick(3));
    if (in_.chance(20)) {
      line("if " + i + " == 2:");
      ++indent_;
      line(in_.chance(50) ? "break" : "continue");
      --indent_;
    }
    reassign(carried);
    --indent_;
    dropAfter(mark);
  }

  void whileLoop(int depth) {
    Var carried = anyVar();
    std::string j = fresh();
    line(j + " = 0");
    line("while " + j + " < n:");
    ++indent_;
    size_t mark = vars_.size();
    line(j + " += " + std::to_string(1 + in_.pick(3)));
    nested(depth, 1 + in_.pick(2));
    reassign(carried);
    --indent_;
    dropAfter(mark);
  }

  void ifElse(int depth) {
    Var carried = anyVar();
    std::string cond;
    const Var *scalar = findVar([](const Var &v) { return v.shape.empty(); });
    switch (in_.pick(4)) {
    case 0: cond = "pid < n"; break;
    case 1: cond = "BLOCK > 32"; break; // a constexpr if
    case 2: cond = scalar ? scalar->name + " > 0" : "n > 1"; break;
    default: cond = "(pid % 2 == 0) and (n > 3)"; break;
    }
    if (in_.chance(3)) cond = "mask"; // a block condition: a diagnostic
    line("if " + cond + ":");
    ++indent_;
    size_t mark = vars_.size();
    nested(depth, 1 + in_.pick(2));
    reassign(carried);
    --indent_;
    dropAfter(mark);
    if (in_.chance(70)) {
      line("else:");
      ++indent_;
      nested(depth, 1 + in_.pick(2));
      reassign(carried);
      --indent_;
      dropAfter(mark);
    }
  }
};

} // namespace

GeneratedKernel generateKernel(const uint8_t *data, size_t size) {
  Choices choices(data, size);
  return KernelGenerator(choices).run();
}

} // namespace tessera::fuzz
