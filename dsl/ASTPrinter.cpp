// printAST: a stable S-expression dump of the AST (`--emit ast`).
//
// Statements go one per line, indented by two spaces per level, with the
// children of compound statements on the following lines and the closing
// parenthesis at the end of the last child. Expressions are printed inline:
//
//   (name x)  (const 1)  (const 2.5)  (const True)  (const None)  (const "s")
//   (attr VALUE name)            (subscript VALUE INDEX...)
//   (slice LOWER UPPER STEP)     missing parts print as _
//   (call FUNC ARG... (kw NAME VALUE)...)
//   (binop + LHS RHS)            (unary - X)   (unary not X)
//   (and A B...)  (or A B...)    (compare A < B <= C)
//   (ifexp THEN if COND else ELSE)
//   (tuple A...)  (list A...)
//
//   (expr E)   (assign TARGET... VALUE)   (augassign T += V)
//   (annassign T : ANN [= V])   (return [V])   (assert C [MSG])
//   (pass) (break) (continue)
//   (if C BODY... [(else BODY...)])        elif is an if inside the else
//   (for T in ITER BODY... [(else ...)])   (while C BODY... [(else ...)])
//   (def NAME (params P...) [(returns R)] [(decorators D...)] BODY...)
//     where P is NAME, (NAME : ANN), (NAME = DEFAULT) or (NAME : ANN = DEFAULT)
//   (import a.b as c, d)   (from a.b import c as d, e)
//
// Floats use the shortest representation that reads back to the same double
// (std::to_chars), always with a '.' or an exponent; strings are quoted with
// \" \\ \n \t \r escaped and any other byte outside printable ASCII as \xHH.
#include "dsl/AST.h"

#include <charconv>
#include <cmath>

namespace tessera::ast {

const char *spelling(BinaryOp op) {
  switch (op) {
  case BinaryOp::Add: return "+";
  case BinaryOp::Sub: return "-";
  case BinaryOp::Mul: return "*";
  case BinaryOp::Div: return "/";
  case BinaryOp::FloorDiv: return "//";
  case BinaryOp::Mod: return "%";
  case BinaryOp::Pow: return "**";
  case BinaryOp::MatMul: return "@";
  case BinaryOp::LShift: return "<<";
  case BinaryOp::RShift: return ">>";
  case BinaryOp::BitAnd: return "&";
  case BinaryOp::BitOr: return "|";
  case BinaryOp::BitXor: return "^";
  }
  return "?";
}

const char *spelling(UnaryOperator op) {
  switch (op) {
  case UnaryOperator::Neg: return "-";
  case UnaryOperator::Pos: return "+";
  case UnaryOperator::Not: return "not";
  case UnaryOperator::Invert: return "~";
  }
  return "?";
}

const char *spelling(CompareOp op) {
  switch (op) {
  case CompareOp::Eq: return "==";
  case CompareOp::NotEq: return "!=";
  case CompareOp::Lt: return "<";
  case CompareOp::LtE: return "<=";
  case CompareOp::Gt: return ">";
  case CompareOp::GtE: return ">=";
  case CompareOp::Is: return "is";
  case CompareOp::IsNot: return "is not";
  case CompareOp::In: return "in";
  case CompareOp::NotIn: return "not in";
  }
  return "?";
}

namespace {

std::string formatFloat(double v) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, ec == std::errc() ? end : buf);
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  return s;
}

std::string quote(const std::string &s) {
  static const char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (char ch : s) {
    unsigned char c = ch;
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\t': out += "\\t"; break;
    case '\r': out += "\\r"; break;
    default:
      if (c >= 0x20 && c < 0x7F) {
        out += ch;
      } else {
        out += "\\x";
        out += kHex[c >> 4];
        out += kHex[c & 0xF];
      }
    }
  }
  return out + "\"";
}

class Printer {
public:
  std::string out;

  void expr(const Expr *e) {
    if (!e) {
      out += "_";
      return;
    }
    switch (e->kind) {
    case ExprKind::Name:
      out += "(name " + static_cast<const Name *>(e)->id + ")";
      return;
    case ExprKind::Constant:
      constant(*static_cast<const Constant *>(e));
      return;
    case ExprKind::Attribute: {
      auto *a = static_cast<const Attribute *>(e);
      out += "(attr ";
      expr(a->value.get());
      out += " " + a->attr + ")";
      return;
    }
    case ExprKind::Subscript: {
      auto *s = static_cast<const Subscript *>(e);
      out += "(subscript ";
      expr(s->value.get());
      list(s->indices);
      out += ")";
      return;
    }
    case ExprKind::Slice: {
      auto *s = static_cast<const Slice *>(e);
      out += "(slice ";
      expr(s->lower.get());
      out += " ";
      expr(s->upper.get());
      out += " ";
      expr(s->step.get());
      out += ")";
      return;
    }
    case ExprKind::Call: {
      auto *c = static_cast<const Call *>(e);
      out += "(call ";
      expr(c->func.get());
      list(c->args);
      for (const Keyword &k : c->keywords) {
        out += " (kw " + k.name + " ";
        expr(k.value.get());
        out += ")";
      }
      out += ")";
      return;
    }
    case ExprKind::BinOp: {
      // (binop + (binop + a b) c), the chain's left operands in a loop.
      std::vector<const BinOp *> spine = binOpSpine(*static_cast<const BinOp *>(e));
      for (const BinOp *b : spine)
        out += std::string("(binop ") + spelling(b->op) + " ";
      expr(spine.back()->lhs.get());
      for (auto b = spine.rbegin(); b != spine.rend(); ++b) {
        out += " ";
        expr((*b)->rhs.get());
        out += ")";
      }
      return;
    }
    case ExprKind::UnaryOp: {
      auto *u = static_cast<const UnaryOp *>(e);
      out += std::string("(unary ") + spelling(u->op) + " ";
      expr(u->operand.get());
      out += ")";
      return;
    }
    case ExprKind::BoolOp: {
      auto *b = static_cast<const BoolOp *>(e);
      out += b->isAnd ? "(and" : "(or";
      list(b->values);
      out += ")";
      return;
    }
    case ExprKind::Compare: {
      auto *c = static_cast<const Compare *>(e);
      out += "(compare";
      for (size_t i = 0; i < c->operands.size(); ++i) {
        if (i > 0 && i - 1 < c->ops.size())
          out += std::string(" ") + spelling(c->ops[i - 1]);
        out += " ";
        expr(c->operands[i].get());
      }
      out += ")";
      return;
    }
    case ExprKind::IfExp: {
      auto *i = static_cast<const IfExp *>(e);
      out += "(ifexp ";
      expr(i->thenValue.get());
      out += " if ";
      expr(i->cond.get());
      out += " else ";
      expr(i->elseValue.get());
      out += ")";
      return;
    }
    case ExprKind::Tuple:
      out += "(tuple";
      list(static_cast<const Tuple *>(e)->elts);
      out += ")";
      return;
    case ExprKind::List:
      out += "(list";
      list(static_cast<const List *>(e)->elts);
      out += ")";
      return;
    case ExprKind::ListComp: {
      auto *c = static_cast<const ListComp *>(e);
      out += "(listcomp ";
      expr(c->elt.get());
      out += " for ";
      expr(c->target.get());
      out += " in ";
      expr(c->iter.get());
      for (const ExprPtr &cond : c->ifs) {
        out += " if ";
        expr(cond.get());
      }
      out += ")";
      return;
    }
    case ExprKind::Starred:
      out += "(starred ";
      expr(static_cast<const Starred *>(e)->value.get());
      out += ")";
      return;
    }
  }

  void constant(const Constant &c) {
    out += "(const ";
    switch (c.type) {
    case Constant::Type::Int: out += constIntToString(c.intValue); break;
    case Constant::Type::Float: out += formatFloat(c.floatValue); break;
    case Constant::Type::Bool: out += c.intValue ? "True" : "False"; break;
    case Constant::Type::None: out += "None"; break;
    case Constant::Type::String: out += quote(c.stringValue); break;
    }
    out += ")";
  }

  // " e1 e2 ..." (each preceded by a space).
  void list(const std::vector<ExprPtr> &exprs) {
    for (const ExprPtr &e : exprs) {
      out += " ";
      expr(e.get());
    }
  }

  void newline(int indent) {
    out += "\n";
    out.append(indent, ' ');
  }

  void body(const Body &stmts, int indent) {
    for (const StmtPtr &s : stmts) {
      newline(indent);
      stmt(*s, indent);
    }
  }

  void orelse(const Body &stmts, int indent) {
    if (stmts.empty())
      return;
    newline(indent);
    out += "(else";
    body(stmts, indent + 2);
    out += ")";
  }

  void stmt(const Stmt &s, int indent) {
    switch (s.kind) {
    case StmtKind::Expr:
      out += "(expr ";
      expr(static_cast<const ExprStmt &>(s).value.get());
      out += ")";
      return;
    case StmtKind::Assign: {
      auto &a = static_cast<const Assign &>(s);
      out += "(assign";
      list(a.targets);
      out += " ";
      expr(a.value.get());
      out += ")";
      return;
    }
    case StmtKind::AugAssign: {
      auto &a = static_cast<const AugAssign &>(s);
      out += "(augassign ";
      expr(a.target.get());
      out += std::string(" ") + spelling(a.op) + "= ";
      expr(a.value.get());
      out += ")";
      return;
    }
    case StmtKind::AnnAssign: {
      auto &a = static_cast<const AnnAssign &>(s);
      out += "(annassign ";
      expr(a.target.get());
      out += " : ";
      expr(a.annotation.get());
      if (a.value) {
        out += " = ";
        expr(a.value.get());
      }
      out += ")";
      return;
    }
    case StmtKind::If: {
      auto &i = static_cast<const If &>(s);
      out += "(if ";
      expr(i.cond.get());
      body(i.body, indent + 2);
      orelse(i.orelse, indent + 2);
      out += ")";
      return;
    }
    case StmtKind::For: {
      auto &f = static_cast<const For &>(s);
      out += "(for ";
      expr(f.target.get());
      out += " in ";
      expr(f.iter.get());
      body(f.body, indent + 2);
      orelse(f.orelse, indent + 2);
      out += ")";
      return;
    }
    case StmtKind::While: {
      auto &w = static_cast<const While &>(s);
      out += "(while ";
      expr(w.cond.get());
      body(w.body, indent + 2);
      orelse(w.orelse, indent + 2);
      out += ")";
      return;
    }
    case StmtKind::Break: out += "(break)"; return;
    case StmtKind::Continue: out += "(continue)"; return;
    case StmtKind::Pass: out += "(pass)"; return;
    case StmtKind::Raise: {
      auto &r = static_cast<const Raise &>(s);
      out += "(raise";
      if (r.exc) {
        out += " ";
        expr(r.exc.get());
      }
      out += ")";
      return;
    }
    case StmtKind::Return: {
      auto &r = static_cast<const Return &>(s);
      out += "(return";
      if (r.value) {
        out += " ";
        expr(r.value.get());
      }
      out += ")";
      return;
    }
    case StmtKind::Assert: {
      auto &a = static_cast<const Assert &>(s);
      out += "(assert ";
      expr(a.cond.get());
      if (a.msg) {
        out += " ";
        expr(a.msg.get());
      }
      out += ")";
      return;
    }
    case StmtKind::FunctionDef:
      functionDef(static_cast<const FunctionDef &>(s), indent);
      return;
    case StmtKind::Import: {
      auto &imp = static_cast<const Import &>(s);
      out += "(import ";
      for (size_t i = 0; i < imp.names.size(); ++i) {
        out += (i ? ", " : "") + imp.names[i].module;
        if (!imp.names[i].asName.empty())
          out += " as " + imp.names[i].asName;
      }
      out += ")";
      return;
    }
    case StmtKind::Try: {
      auto &t = static_cast<const Try &>(s);
      out += "(try";
      body(t.body, indent + 2);
      for (const Try::Handler &h : t.handlers) {
        newline(indent + 2);
        out += "(except";
        if (h.type) {
          out += " ";
          expr(h.type.get());
        }
        if (!h.name.empty()) out += " as " + h.name;
        body(h.body, indent + 4);
        out += ")";
      }
      orelse(t.orelse, indent + 2);
      if (!t.finalbody.empty()) {
        newline(indent + 2);
        out += "(finally";
        body(t.finalbody, indent + 4);
        out += ")";
      }
      out += ")";
      return;
    }
    case StmtKind::ImportFrom: {
      auto &imp = static_cast<const ImportFrom &>(s);
      out += "(from " + imp.module + " import ";
      for (size_t i = 0; i < imp.names.size(); ++i) {
        out += (i ? ", " : "") + imp.names[i].name;
        if (!imp.names[i].asName.empty())
          out += " as " + imp.names[i].asName;
      }
      out += ")";
      return;
    }
    }
  }

  void functionDef(const FunctionDef &f, int indent) {
    out += "(def " + f.name + " (params";
    for (const Param &p : f.params) {
      out += " ";
      if (!p.annotation && !p.defaultValue) {
        out += p.name;
        continue;
      }
      out += "(" + p.name;
      if (p.annotation) {
        out += " : ";
        expr(p.annotation.get());
      }
      if (p.defaultValue) {
        out += " = ";
        expr(p.defaultValue.get());
      }
      out += ")";
    }
    out += ")";
    if (f.returns) {
      out += " (returns ";
      expr(f.returns.get());
      out += ")";
    }
    if (!f.decorators.empty()) {
      newline(indent + 2);
      out += "(decorators";
      list(f.decorators);
      out += ")";
    }
    body(f.body, indent + 2);
    out += ")";
  }
};

} // namespace

std::string printAST(const Module &module) {
  Printer p;
  p.out = "(module";
  p.body(module.body, 2);
  p.out += ")\n";
  return p.out;
}

} // namespace tessera::ast
