// tl.* debugging and hints: static_print (at compile time, to stderr),
// device_print and Python's print (on the device, like Triton's), device_assert
// (only with debug on: CompileOptions::debug, `--debug`, or TESSERA_DEBUG=1),
// assume, debug_barrier, and the pingpong_* turns of two warpgroups.
#include "dsl/BuiltinArgs.h"

#include <cstdio>

namespace tessera::spec {

using ir::OpCode;
using ir::ScalarType;
using CK = ConstexprValue::Kind;

std::optional<SValue> Specializer::callDebugBuiltin(const std::string &name, CallArgs &args) {
  SourceLoc loc = args.loc;
  auto none = [] { return SValue::constant(ConstexprValue::none()); };

  if (name == "lang.static_print") {
    std::string line;
    for (const SValue &v : args.args) {
      line += line.empty() ? "" : " ";
      line += v.isConst() ? (v.c.kind == CK::String ? v.c.stringValue : v.c.str()) : describe(v);
    }
    std::fprintf(stderr, "%s\n", line.c_str());
    return none();
  }
  if (name == "lang.device_print" || name == "print") {
    // device_print(prefix, *args, hex=False); print(*args) takes a leading string as the prefix.
    std::string prefix;
    size_t first = 0;
    if (!args.args.empty() && args.args[0].isConst() && args.args[0].c.kind == CK::String) {
      prefix = args.args[0].c.stringValue;
      first = 1;
    } else if (name == "lang.device_print") {
      error(args.argLocs.empty() ? loc : args.argLocs[0], "tl.device_print's first argument must be a string prefix");
    }
    bool hex = false;
    for (size_t k = 0; k < args.keywords.size(); ++k) {
      if (args.keywords[k].first == "hex") hex = requireInt(args.keywords[k].second, args.keywordLocs[k], "hex") != 0;
      else if (name == "print" && (args.keywords[k].first == "sep" || args.keywords[k].first == "end")) continue;
      else error(args.keywordLocs[k], "tl.device_print() got an unexpected keyword argument '" + args.keywords[k].first + "'");
    }
    std::map<std::string, ir::Attribute> attrs = {{"prefix", prefix}, {"hex", int64_t(hex)}};
    if (first == args.args.size()) {
      b_.create(OpCode::Print, {}, {}, attrs);
      return none();
    }
    for (size_t i = first; i < args.args.size(); ++i) {
      const SValue &v = args.args[i];
      if (v.isConst() && v.c.kind == CK::String) { // more text: part of the next prefix
        attrs["prefix"] = std::get<std::string>(attrs["prefix"]) + (prefix.empty() ? "" : " ") + v.c.stringValue;
        continue;
      }
      ir::Value *x = toIR(v, args.argLocs[i]);
      b_.create(OpCode::Print, {x}, {}, attrs);
    }
    return none();
  }
  if (name == "lang.device_assert") {
    Bound b = bind(*this, args, "tl.device_assert", {{"cond", true}, {"msg", false}, {"mask", false}});
    std::string msg = b.has(1) ? (b[1].isConst() && b[1].c.kind == CK::String ? b[1].c.stringValue : describe(b[1])) : "";
    if (b[0].isConst()) { // known now: a failing constant assert is a compile-time error only in debug mode
      return none();
    }
    if (!debugEnabled()) return none();
    ir::Value *cond = toBool(toIR(b[0], b.locs[0]));
    if (b.has(2)) { // elements outside the mask pass
      ir::Value *mask = toBool(toIR(b[2], b.locs[2]));
      auto shape = broadcastShapes(cond->type, mask->type, loc);
      cond = broadcastTo(cond, shape, b.locs[0]);
      mask = broadcastTo(mask, shape, b.locs[2]);
      cond = b_.op(OpCode::Or, {cond, b_.op(OpCode::Not, {mask}, mask->type)}, cond->type);
    }
    b_.create(OpCode::Assert, {cond}, {},
              {{"message", msg}, {"file", file().path}, {"line", int64_t(loc.line)}, {"func", std::string("kernel")}});
    return none();
  }
  if (name == "lang.assume") {
    Bound b = bind(*this, args, "tl.assume", {{"cond", true}});
    if (b[0].isConst()) return none();
    ir::Value *cond = toBool(toIR(b[0], b.locs[0]));
    b_.create(OpCode::Assume, {cond}, {});
    return none();
  }
  if (name == "lang.debug_barrier") {
    bind(*this, args, "tl.debug_barrier", {});
    b_.create(OpCode::Barrier, {}, {});
    return none();
  }
  // Two warpgroups (num_warps = 8) taking turns, as FlashAttention-3 schedules its
  // consumers: wait for this warpgroup's turn, issue (say) its wgmmas, pass the turn on.
  // start lets warpgroup 0 go first; end takes back the last pass.
  for (const char *kind : {"start", "wait", "pass", "end"})
    if (name == std::string("lang.pingpong_") + kind) {
      bind(*this, args, std::string("tl.pingpong_") + kind, {});
      b_.create(OpCode::Barrier, {}, {}, {{"pingpong", std::string(kind)}});
      return none();
    }
  return std::nullopt;
}

} // namespace tessera::spec
