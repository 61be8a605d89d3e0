// Hand-built kernels through tiling, LLVM lowering and PTX emission; the PTX
// is assembled with ptxas for sm_80 and sm_90a (a missing ptxas fails).
// TESSERA_TEST_PTX_DIR=dir also writes each kernel's PTX there (name_arch.ptx)
// for running them on a GPU; TESSERA_TEST_VERBOSE=1 prints ptxas -v.
#include "compiler/codegen/Codegen.h"
#include "compiler/ir/IR.h"
#include "compiler/passes/LayoutAssignment.h"
#include "compiler/support/Environment.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

using namespace tessera;
using namespace tessera::ir;

namespace {

const char *kPtxas = "/usr/local/cuda/bin/ptxas";

// Options as the driver gives them: libdevice from TESSERA_LIBDEVICE or CUDA_HOME.
codegen::CodegenOptions codegenOptions(std::string arch, bool optimize) {
  codegen::CodegenOptions o;
  o.arch = std::move(arch);
  o.optimize = optimize;
  o.libdevicePath = env::readCompilerEnvironment().libdevicePath;
  return o;
}

Type i1() { return Type(ScalarType::I1); }
Type i32() { return Type(ScalarType::I32); }
Type f32() { return Type(ScalarType::F32); }
Type ptrTo(ScalarType s) { return Type::ptr(s); }
using Attrs = std::map<std::string, Attribute>;

// Small helpers over ir::Builder so the kernels read like the Python.
class KernelBuilder {
public:
  KernelBuilder(std::string name, unsigned numWarps)
      : fn_(std::make_unique<Function>()), b(&fn_->body) {
    fn_->name = std::move(name);
    fn_->numWarps = numWarps;
  }
  Value *param(const std::string &name, Type t, int divisibility = 1) {
    fn_->params.push_back({name, t, divisibility, false});
    return fn_->body.addArgument(t, name);
  }
  Value *i(int64_t v, Type t = i32()) { return b.intConstant(v, t); }
  Value *f(double v, Type t = f32()) { return b.floatConstant(v, t); }
  Value *pid(int64_t axis = 0) { return b.op(OpCode::ProgramId, {}, i32(), {{"axis", axis}}); }
  Value *range(int64_t start, int64_t end) {
    return b.op(OpCode::MakeRange, {}, i32().withShape({end - start}), {{"start", start}, {"end", end}});
  }
  Value *splat(Value *v, std::vector<int64_t> shape) {
    return b.op(OpCode::Splat, {v}, v->type.withShape(std::move(shape)));
  }
  Value *bin(OpCode code, Value *x, Value *y) { return b.op(code, {x, y}, x->type); }
  Value *un(OpCode code, Value *x) { return b.op(code, {x}, x->type); }
  Value *cmp(const char *pred, Value *x, Value *y) {
    return b.op(OpCode::Cmp, {x, y}, i1().withShape(x->type.shape), {{"predicate", std::string(pred)}});
  }
  Value *cast(Value *x, ScalarType to) {
    return b.op(OpCode::Cast, {x}, Type(to).withShape(x->type.shape));
  }
  Value *addptr(Value *p, Value *offset) { return b.op(OpCode::AddPtr, {p, offset}, p->type); }
  Value *load(Value *ptr, Value *mask = nullptr, Value *other = nullptr) {
    std::vector<Value *> operands{ptr};
    if (mask) operands.push_back(mask);
    if (other) operands.push_back(other);
    Type t = Type(ptr->type.scalar).withShape(ptr->type.shape);
    return b.op(OpCode::Load, operands, t,
                {{"has_mask", int64_t{mask != nullptr}}, {"has_other", int64_t{other != nullptr}}});
  }
  void store(Value *ptr, Value *v, Value *mask = nullptr) {
    std::vector<Value *> operands{ptr, v};
    if (mask) operands.push_back(mask);
    b.create(OpCode::Store, operands, {}, {{"has_mask", int64_t{mask != nullptr}}});
  }
  Value *expand(Value *v, int64_t axis) {
    std::vector<int64_t> shape = v->type.shape;
    shape.insert(shape.begin() + axis, 1);
    return b.op(OpCode::ExpandDims, {v}, v->type.withShape(shape), {{"axis", axis}});
  }
  Value *broadcast(Value *v, std::vector<int64_t> shape) {
    return b.op(OpCode::Broadcast, {v}, v->type.withShape(std::move(shape)));
  }
  Value *reduce(Value *v, int64_t axis, const char *kind) {
    std::vector<int64_t> shape = v->type.shape;
    shape.erase(shape.begin() + axis);
    return b.op(OpCode::Reduce, {v}, v->type.withShape(shape), {{"axis", axis}, {"kind", std::string(kind)}});
  }
  std::unique_ptr<Function> finish() {
    b.setInsertionPointToEnd(&fn_->body);
    b.create(OpCode::Return, {}, {});
    return std::move(fn_);
  }

  std::unique_ptr<Function> fn_;
  Builder b;
};

// -------------------------------------------------------------- kernels

// out[i] = x[i] + y[i] for i < n, BLOCK elements per program.
std::unique_ptr<Function> vectorAdd(int64_t block = 1024, unsigned numWarps = 4) {
  KernelBuilder k("vector_add", numWarps);
  Value *x = k.param("x_ptr", ptrTo(ScalarType::F32), 16);
  Value *y = k.param("y_ptr", ptrTo(ScalarType::F32), 16);
  Value *out = k.param("out_ptr", ptrTo(ScalarType::F32), 16);
  Value *n = k.param("n", i32());
  Value *start = k.bin(OpCode::Mul, k.pid(), k.i(block));
  Value *offs = k.bin(OpCode::Add, k.splat(start, {block}), k.range(0, block));
  Value *mask = k.cmp("lt", offs, k.splat(n, {block}));
  Value *xv = k.load(k.addptr(k.splat(x, {block}), offs), mask);
  Value *yv = k.load(k.addptr(k.splat(y, {block}), offs), mask);
  k.store(k.addptr(k.splat(out, {block}), offs), k.bin(OpCode::Add, xv, yv), mask);
  return k.finish();
}

// One row per program: out = softmax(in[row, :n_cols]); `elem` is f32 or f16
// (16-bit data is computed in f32).
std::unique_ptr<Function> softmax(ScalarType elem, int64_t block = 1024, unsigned numWarps = 4) {
  KernelBuilder k("softmax", numWarps);
  Value *out = k.param("out_ptr", ptrTo(elem), 16);
  Value *in = k.param("in_ptr", ptrTo(elem), 16);
  Value *stride = k.param("stride", i32());
  Value *nCols = k.param("n_cols", i32());
  Value *rowOffset = k.bin(OpCode::Mul, k.pid(), stride);
  Value *cols = k.range(0, block);
  Value *mask = k.cmp("lt", cols, k.splat(nCols, {block}));
  Value *ninf = k.f(-std::numeric_limits<double>::infinity(), Type(elem).withShape({block}));
  Value *x = k.load(k.addptr(k.splat(k.addptr(in, rowOffset), {block}), cols), mask, ninf);
  if (elem != ScalarType::F32)
    x = k.cast(x, ScalarType::F32);
  Value *rowMax = k.reduce(x, 0, "max");
  Value *e = k.un(OpCode::Exp, k.bin(OpCode::Sub, x, k.splat(rowMax, {block})));
  Value *denominator = k.reduce(e, 0, "sum");
  Value *y = k.bin(OpCode::Div, e, k.splat(denominator, {block}));
  if (elem != ScalarType::F32)
    y = k.cast(y, elem);
  k.store(k.addptr(k.splat(k.addptr(out, rowOffset), {block}), cols), y, mask);
  return k.finish();
}

// dst[m, n] = src[m, n] for m < M, n < N, a BM x BN tile per program.
std::unique_ptr<Function> copy2d(int64_t bm = 64, int64_t bn = 64, unsigned numWarps = 4) {
  KernelBuilder k("copy2d", numWarps);
  Value *src = k.param("src", ptrTo(ScalarType::F16), 16);
  Value *dst = k.param("dst", ptrTo(ScalarType::F16), 16);
  Value *m = k.param("M", i32());
  Value *n = k.param("N", i32());
  Value *stride = k.param("stride", i32(), 16);
  Value *rows = k.bin(OpCode::Add, k.splat(k.bin(OpCode::Mul, k.pid(0), k.i(bm)), {bm}), k.range(0, bm));
  Value *cols = k.bin(OpCode::Add, k.splat(k.bin(OpCode::Mul, k.pid(1), k.i(bn)), {bn}), k.range(0, bn));
  Value *r2 = k.expand(rows, 1), *c2 = k.expand(cols, 0);
  Value *offs = k.bin(OpCode::Add, k.broadcast(k.bin(OpCode::Mul, r2, k.splat(stride, {bm, 1})), {bm, bn}),
                      k.broadcast(c2, {bm, bn}));
  Value *mask = k.bin(OpCode::And, k.broadcast(k.cmp("lt", r2, k.splat(m, {bm, 1})), {bm, bn}),
                      k.broadcast(k.cmp("lt", c2, k.splat(n, {1, bn})), {bm, bn}));
  Value *v = k.load(k.addptr(k.splat(src, {bm, bn}), offs), mask);
  k.store(k.addptr(k.splat(dst, {bm, bn}), offs), v, mask);
  return k.finish();
}

// out[r] = sum(x[r, :]) for a BM x BN block (kind sum/max/min, axis 1), or
// the column reduction out[c] = reduce(x[:, c]) with axis 0.
std::unique_ptr<Function> reduce2d(int64_t axis, const char *kind, ScalarType elem,
                                   int64_t bm = 32, int64_t bn = 128, unsigned numWarps = 4) {
  KernelBuilder k(std::string("reduce2d_") + kind, numWarps);
  Value *x = k.param("x", ptrTo(elem), 16);
  Value *out = k.param("out", ptrTo(elem), 16);
  Value *rows = k.range(0, bm), *cols = k.range(0, bn);
  Value *offs = k.bin(OpCode::Add, k.broadcast(k.bin(OpCode::Mul, k.expand(rows, 1), k.i(bn, i32().withShape({bm, 1}))), {bm, bn}),
                      k.broadcast(k.expand(cols, 0), {bm, bn}));
  Value *v = k.load(k.addptr(k.splat(x, {bm, bn}), offs));
  Value *r = k.reduce(v, axis, kind);
  Value *outOffs = axis == 1 ? rows : cols;
  int64_t extent = axis == 1 ? bm : bn;
  k.store(k.addptr(k.splat(out, {extent}), outOffs), r);
  return k.finish();
}

// out[j] = sum over i < n of x[i * B + j]: a loop carrying a block.
std::unique_ptr<Function> forAccumulate(int64_t block = 256, unsigned numWarps = 4) {
  KernelBuilder k("for_accumulate", numWarps);
  Value *x = k.param("x", ptrTo(ScalarType::F32), 16);
  Value *out = k.param("out", ptrTo(ScalarType::F32), 16);
  Value *n = k.param("n", i32());
  Value *offs = k.range(0, block);
  Value *acc0 = k.f(0.0, f32().withShape({block}));
  Operation *loop = k.b.create(OpCode::For, {k.i(0), n, k.i(1), acc0}, {acc0->type}, {}, 1);
  Block *body = loop->region(0);
  Value *iv = body->addArgument(i32(), "i");
  Value *acc = body->addArgument(acc0->type, "acc");
  k.b.setInsertionPointToEnd(body);
  Value *base = k.splat(k.bin(OpCode::Mul, iv, k.i(block)), {block});
  Value *v = k.load(k.addptr(k.splat(x, {block}), k.bin(OpCode::Add, base, offs)));
  k.b.create(OpCode::Yield, {k.bin(OpCode::Add, acc, v)}, {});
  k.b.setInsertionPointToEnd(&k.fn_->body);
  k.store(k.addptr(k.splat(out, {block}), offs), loop->result());
  return k.finish();
}

// out[i] = flag > 0 ? 1 : 2 (an if with block results), then, only if
// flag > 5, out[0] = 7 (an if without results or else branch).
std::unique_ptr<Function> ifOnScalar(int64_t block = 128, unsigned numWarps = 4) {
  KernelBuilder k("if_scalar", numWarps);
  Value *out = k.param("out", ptrTo(ScalarType::F32), 16);
  Value *flag = k.param("flag", i32());
  Operation *branch = k.b.create(OpCode::If, {k.cmp("gt", flag, k.i(0))}, {f32().withShape({block})}, {}, 2);
  k.b.setInsertionPointToEnd(branch->region(0));
  k.b.create(OpCode::Yield, {k.f(1.0, f32().withShape({block}))}, {});
  k.b.setInsertionPointToEnd(branch->region(1));
  k.b.create(OpCode::Yield, {k.f(2.0, f32().withShape({block}))}, {});
  k.b.setInsertionPointToEnd(&k.fn_->body);
  k.store(k.addptr(k.splat(out, {block}), k.range(0, block)), branch->result());
  Operation *late = k.b.create(OpCode::If, {k.cmp("gt", flag, k.i(5))}, {}, {}, 2);
  k.b.setInsertionPointToEnd(late->region(0));
  k.store(out, k.f(7.0));
  k.b.create(OpCode::Yield, {}, {});
  k.b.setInsertionPointToEnd(late->region(1));
  k.b.create(OpCode::Yield, {}, {});
  k.b.setInsertionPointToEnd(&k.fn_->body);
  return k.finish();
}

// out[0] = in[0] * 2 + (pid < 1 ? in[1] : 0): scalar loads and stores.
std::unique_ptr<Function> scalarMemory() {
  KernelBuilder k("scalar_memory", 1);
  Value *in = k.param("in", ptrTo(ScalarType::F32), 16);
  Value *out = k.param("out", ptrTo(ScalarType::I64), 16);
  Value *v = k.load(in);
  Value *w = k.load(k.addptr(in, k.i(1)), k.cmp("lt", k.pid(), k.i(1)), k.f(0.0));
  Value *sum = k.bin(OpCode::Add, k.bin(OpCode::Mul, v, k.f(2.0)), w);
  k.store(out, k.cast(sum, ScalarType::I64));
  return k.finish();
}

// Doubles x while its block sum stays below `limit`; out = x, count = steps.
std::unique_ptr<Function> whileLoop(int64_t block = 64, unsigned numWarps = 2) {
  KernelBuilder k("while_loop", numWarps);
  Value *x = k.param("x", ptrTo(ScalarType::F32), 16);
  Value *out = k.param("out", ptrTo(ScalarType::F32), 16);
  Value *count = k.param("count", ptrTo(ScalarType::I32), 16);
  Value *limit = k.param("limit", f32());
  Value *offs = k.range(0, block);
  Value *v0 = k.load(k.addptr(k.splat(x, {block}), offs));
  Operation *loop = k.b.create(OpCode::While, {v0, k.i(0)}, {v0->type, i32()}, {}, 2);
  Block *before = loop->region(0), *after = loop->region(1);
  Value *bv = before->addArgument(v0->type, "v");
  Value *bn = before->addArgument(i32(), "n");
  k.b.setInsertionPointToEnd(before);
  Value *keepGoing = k.cmp("lt", k.reduce(bv, 0, "sum"), limit);
  k.b.create(OpCode::Condition, {keepGoing, bv, bn}, {});
  Value *av = after->addArgument(v0->type, "v");
  Value *an = after->addArgument(i32(), "n");
  k.b.setInsertionPointToEnd(after);
  k.b.create(OpCode::Yield, {k.bin(OpCode::Add, av, av), k.bin(OpCode::Add, an, k.i(1))}, {});
  k.b.setInsertionPointToEnd(&k.fn_->body);
  k.store(k.addptr(k.splat(out, {block}), offs), loop->result(0));
  k.store(count, loop->result(1));
  return k.finish();
}

// A 16 x 64 block of bf16 -> reshape to 1024 -> exp2 (f32 inside) -> f64
// exp through libdevice -> back to f32: layouts change through shared memory.
std::unique_ptr<Function> reshapeAndMath() {
  KernelBuilder k("reshape_math", 4);
  Value *x = k.param("x", ptrTo(ScalarType::BF16), 16);
  Value *out = k.param("out", ptrTo(ScalarType::F32), 16);
  Value *offs2 = k.bin(OpCode::Add, k.broadcast(k.bin(OpCode::Mul, k.expand(k.range(0, 16), 1), k.i(64, i32().withShape({16, 1}))), {16, 64}),
                       k.broadcast(k.expand(k.range(0, 64), 0), {16, 64}));
  Value *v = k.un(OpCode::Exp2, k.load(k.addptr(k.splat(x, {16, 64}), offs2)));
  Value *flat = k.b.op(OpCode::Reshape, {v}, v->type.withShape({1024}));
  Value *wide = k.un(OpCode::Exp, k.cast(flat, ScalarType::F64));
  k.store(k.addptr(k.splat(out, {1024}), k.range(0, 1024)), k.cast(wide, ScalarType::F32));
  return k.finish();
}

// Row-wise softmax of a BM x BN tile: reduce -> expand_dims -> broadcast.
std::unique_ptr<Function> softmax2d(int64_t bm = 16, int64_t bn = 128, unsigned numWarps = 4) {
  KernelBuilder k("softmax2d", numWarps);
  Value *out = k.param("out", ptrTo(ScalarType::F32), 16);
  Value *in = k.param("in", ptrTo(ScalarType::F32), 16);
  Value *nRows = k.param("n_rows", i32());
  Value *nCols = k.param("n_cols", i32());
  Value *rows = k.bin(OpCode::Add, k.splat(k.bin(OpCode::Mul, k.pid(), k.i(bm)), {bm}), k.range(0, bm));
  Value *r2 = k.expand(rows, 1), *c2 = k.expand(k.range(0, bn), 0);
  Value *offs = k.bin(OpCode::Add, k.broadcast(k.bin(OpCode::Mul, r2, k.splat(nCols, {bm, 1})), {bm, bn}),
                      k.broadcast(c2, {bm, bn}));
  Value *mask = k.bin(OpCode::And, k.broadcast(k.cmp("lt", r2, k.splat(nRows, {bm, 1})), {bm, bn}),
                      k.broadcast(k.cmp("lt", c2, k.splat(nCols, {1, bn})), {bm, bn}));
  Value *ninf = k.f(-std::numeric_limits<double>::infinity(), f32().withShape({bm, bn}));
  Value *x = k.load(k.addptr(k.splat(in, {bm, bn}), offs), mask, ninf);
  Value *rowMax = k.broadcast(k.expand(k.reduce(x, 1, "max"), 1), {bm, bn});
  Value *e = k.un(OpCode::Exp, k.bin(OpCode::Sub, x, rowMax));
  Value *sum = k.broadcast(k.expand(k.reduce(e, 1, "sum"), 1), {bm, bn});
  k.store(k.addptr(k.splat(out, {bm, bn}), offs), k.bin(OpCode::Div, e, sum), mask);
  return k.finish();
}

// out[r] = sum(x[r, :]) + y[r] and positive[r] = out[r] > 0 (a bool block
// stored as bytes): the add needs the loaded y (replicated: 32 values on 128
// threads) converted through shared memory.
std::unique_ptr<Function> rowSumPlus(int64_t bm = 32, int64_t bn = 128) {
  KernelBuilder k("row_sum_plus", 4);
  Value *x = k.param("x", ptrTo(ScalarType::F32), 16);
  Value *y = k.param("y", ptrTo(ScalarType::F32), 16);
  Value *out = k.param("out", ptrTo(ScalarType::F32), 16);
  Value *positive = k.param("positive", ptrTo(ScalarType::I1), 16);
  Value *rows = k.range(0, bm), *cols = k.range(0, bn);
  Value *offs = k.bin(OpCode::Add, k.broadcast(k.bin(OpCode::Mul, k.expand(rows, 1), k.i(bn, i32().withShape({bm, 1}))), {bm, bn}),
                      k.broadcast(k.expand(cols, 0), {bm, bn}));
  Value *sums = k.reduce(k.load(k.addptr(k.splat(x, {bm, bn}), offs)), 1, "sum");
  Value *yv = k.load(k.addptr(k.splat(y, {bm}), rows));
  Value *total = k.bin(OpCode::Add, sums, yv);
  k.store(k.addptr(k.splat(out, {bm}), rows), total);
  k.store(k.addptr(k.splat(positive, {bm}), rows), k.cmp("gt", total, k.f(0.0, f32().withShape({bm}))));
  return k.finish();
}

// Integer semantics: signed div/rem/shr, unsigned shr, max, i32 -> f32.
std::unique_ptr<Function> integerOps(int64_t block = 256) {
  KernelBuilder k("integer_ops", 4);
  Value *x = k.param("x", ptrTo(ScalarType::I32), 16);
  Value *y = k.param("y", ptrTo(ScalarType::I32), 16);
  Value *out = k.param("out", ptrTo(ScalarType::I32), 16);
  Value *fout = k.param("fout", ptrTo(ScalarType::F32), 16);
  Value *offs = k.range(0, block);
  Value *a = k.load(k.addptr(k.splat(x, {block}), offs));
  Value *b = k.load(k.addptr(k.splat(y, {block}), offs));
  Value *three = k.i(3, i32().withShape({block}));
  Value *asUnsigned = k.cast(a, ScalarType::U32);
  Value *results[] = {k.bin(OpCode::Div, a, b), k.bin(OpCode::Rem, a, b), k.bin(OpCode::Shr, a, three),
                      k.cast(k.bin(OpCode::Shr, asUnsigned, k.cast(three, ScalarType::U32)), ScalarType::I32),
                      k.bin(OpCode::Max, a, b)};
  for (int64_t i = 0; i < 5; ++i) {
    Value *o = k.bin(OpCode::Add, offs, k.i(i * block, i32().withShape({block})));
    k.store(k.addptr(k.splat(out, {block}), o), results[i]);
  }
  k.store(k.addptr(k.splat(fout, {block}), offs), k.cast(a, ScalarType::F32));
  return k.finish();
}

// A 32 x 16 block in the layout of a 64 x 64 one (an unused constant sets the
// anchor), so rows wrap inside warps: row sums, then their total as a scalar.
std::unique_ptr<Function> reduceWrapped() {
  KernelBuilder k("reduce_wrapped", 4);
  Value *x = k.param("x", ptrTo(ScalarType::F32), 16);
  Value *rowsOut = k.param("row_sums", ptrTo(ScalarType::F32), 16);
  Value *totalOut = k.param("total", ptrTo(ScalarType::F32), 16);
  k.f(0.0, f32().withShape({64, 64}));
  Value *rows = k.range(0, 32), *cols = k.range(0, 16);
  Value *offs = k.bin(OpCode::Add, k.broadcast(k.bin(OpCode::Mul, k.expand(rows, 1), k.i(16, i32().withShape({32, 1}))), {32, 16}),
                      k.broadcast(k.expand(cols, 0), {32, 16}));
  Value *sums = k.reduce(k.load(k.addptr(k.splat(x, {32, 16}), offs)), 1, "sum");
  k.store(k.addptr(k.splat(rowsOut, {32}), rows), sums);
  k.store(totalOut, k.reduce(sums, 0, "sum"));
  return k.finish();
}

// ------------------------------------------------------------ harness

std::string runPtxas(const std::string &ptx, const std::string &arch, int &status) {
  char dir[] = "/tmp/tessera-ptxas-XXXXXX";
  if (!mkdtemp(dir)) {
    status = -1;
    return "mkdtemp failed";
  }
  std::string base = std::string(dir) + "/kernel";
  std::ofstream(base + ".ptx") << ptx;
  std::string command = std::string(kPtxas) + " -v -arch=" + arch + " " + base + ".ptx -o " +
                        base + ".cubin > " + base + ".log 2>&1";
  status = std::system(command.c_str());
  std::stringstream log;
  log << std::ifstream(base + ".log").rdbuf();
  std::system(("rm -rf " + std::string(dir)).c_str());
  return log.str();
}

struct Compiled {
  std::string laidOut;        // ir::print after tiling
  codegen::CodegenResult sm80, sm90a;
};

// Tiling, then codegen + ptxas for both arches; failures are test failures.
Compiled compileEverywhere(Function &fn) {
  Compiled c;
  EXPECT_EQ(verify(fn), "") << print(fn);
  passes::assignLayouts(fn);
  c.laidOut = print(fn);
  EXPECT_EQ(verify(fn), "") << c.laidOut;
  const char *verbose = std::getenv("TESSERA_TEST_VERBOSE");
  if (verbose && *verbose == '1')
    std::printf("--- %s after tiling\n%s", fn.name.c_str(), c.laidOut.c_str());
  for (const char *arch : {"sm_80", "sm_90a"}) {
    codegen::CodegenResult r = codegen::generate(fn, codegenOptions(arch, true), /*emitPTX=*/true);
    EXPECT_NE(r.ptx.find(".entry " + fn.name), std::string::npos) << r.ptx;
    EXPECT_NE(r.ptx.find(".reqntid " + std::to_string(32 * fn.numWarps) + ", 1, 1"), std::string::npos);
    EXPECT_EQ(access(kPtxas, X_OK), 0) << "ptxas is required at " << kPtxas;
    int status = 0;
    std::string log = runPtxas(r.ptx, arch, status);
    EXPECT_EQ(status, 0) << "ptxas failed for " << arch << ":\n" << log << "\n" << r.ptx;
    if (verbose && *verbose == '1')
      std::printf("--- %s %s (shared %u bytes)\n%s", fn.name.c_str(), arch, r.sharedBytes, log.c_str());
    if (const char *dir = std::getenv("TESSERA_TEST_PTX_DIR"))
      std::ofstream(std::string(dir) + "/" + fn.name + "_" + arch + ".ptx") << r.ptx;
    EXPECT_EQ(fn.sharedBytes, r.sharedBytes);
    (std::string(arch) == "sm_80" ? c.sm80 : c.sm90a) = std::move(r);
  }
  return c;
}

bool contains(const std::string &text, const std::string &what) {
  return text.find(what) != std::string::npos;
}

} // namespace

TEST(Codegen, VectorAdd) {
  auto fn = vectorAdd();
  Compiled c = compileEverywhere(*fn);
  EXPECT_TRUE(contains(c.laidOut, "#L0 = #blocked<spt=[4], tpw=[32], wpc=[4], order=[0]>"));
  EXPECT_TRUE(contains(c.laidOut, "<1024xptr<f32>> #L0"));
  EXPECT_EQ(c.sm90a.sharedBytes, 0u);
  EXPECT_TRUE(contains(c.sm90a.llvmIR, "ptx_kernel"));
  EXPECT_TRUE(contains(c.sm90a.llvmIR, "align 16"));
  EXPECT_TRUE(contains(c.sm90a.ptx, "ld.global.b32")); // predicated (masked) loads
  EXPECT_TRUE(contains(c.sm90a.ptx, "st.global.b32"));
  EXPECT_FALSE(contains(c.sm90a.ptx, "bar.sync"));
}

TEST(Codegen, SoftmaxF32) {
  auto fn = softmax(ScalarType::F32);
  Compiled c = compileEverywhere(*fn);
  EXPECT_TRUE(contains(c.sm90a.ptx, "shfl.sync.bfly"));
  EXPECT_TRUE(contains(c.sm90a.ptx, "ex2.approx.ftz.f32"));
  EXPECT_TRUE(contains(c.sm90a.ptx, "bar.sync"));
  EXPECT_EQ(c.sm90a.sharedBytes, 16u); // 4 warps x one f32 partial
}

TEST(Codegen, SoftmaxF16SmallBlockManyWarps) {
  auto fn = softmax(ScalarType::F16, 128, 8); // the tile (256) wraps over 128
  fn->name = "softmax_f16";
  Compiled c = compileEverywhere(*fn);
  EXPECT_TRUE(contains(c.sm80.ptx, "ld.global.b16"));
  EXPECT_TRUE(contains(c.sm80.ptx, "cvt.f32.f16"));
}

TEST(Codegen, MaskedCopy2D) {
  auto fn = copy2d();
  Compiled c = compileEverywhere(*fn);
  EXPECT_TRUE(contains(c.laidOut, "#blocked<spt=[1,4], tpw=[2,16], wpc=[4,1], order=[1,0]>"));
  EXPECT_TRUE(contains(c.laidOut, "#slice<dim=1"));
  EXPECT_FALSE(contains(c.laidOut, "convert_layout")); // index math is recomputed
  EXPECT_EQ(c.sm90a.sharedBytes, 0u);
  EXPECT_FALSE(contains(c.sm90a.ptx, "bar.sync"));
}

TEST(Codegen, RowSum) {
  auto fn = reduce2d(1, "sum", ScalarType::F32);
  Compiled c = compileEverywhere(*fn);
  EXPECT_TRUE(contains(c.laidOut, "<32xf32> #L"));
  EXPECT_TRUE(contains(c.laidOut, "#slice<dim=1"));
  EXPECT_TRUE(contains(c.sm90a.ptx, "shfl.sync.bfly"));
  // Warps never span a row of the 32x128 block and the store runs in the
  // sums' layout: no shared memory at all.
  EXPECT_EQ(c.sm90a.sharedBytes, 0u);
  EXPECT_FALSE(contains(c.laidOut, "convert_layout"));
}

TEST(Codegen, ColumnMaxOfIntegersAcrossWarps) {
  auto fn = reduce2d(0, "max", ScalarType::I32, 64, 32, 4);
  Compiled c = compileEverywhere(*fn);
  EXPECT_TRUE(contains(c.laidOut, "#slice<dim=0"));
  EXPECT_TRUE(contains(c.sm90a.ptx, "max.s32"));
  EXPECT_TRUE(contains(c.sm90a.ptx, "bar.sync"));
}

TEST(Codegen, RowMinAcrossLanesAndWarps) {
  // 4 x 256 with 4 warps: lanes and 2 warps span each row.
  auto fn = reduce2d(1, "min", ScalarType::F32, 4, 256, 4);
  Compiled c = compileEverywhere(*fn);
  EXPECT_TRUE(contains(c.laidOut, "#blocked<spt=[1,4], tpw=[1,32], wpc=[2,2], order=[1,0]>"));
  EXPECT_TRUE(contains(c.sm90a.ptx, "min.f32"));
  EXPECT_EQ(c.sm90a.sharedBytes, 4u * 2u * 4u); // 4 rows x 2 warps x f32 partials
}

TEST(Codegen, ForLoopCarriesABlock) {
  auto fn = forAccumulate();
  Compiled c = compileEverywhere(*fn);
  EXPECT_TRUE(contains(c.laidOut, "^(%5: i32, %6: <256xf32> #L0)"));
  EXPECT_TRUE(contains(c.sm90a.llvmIR, "phi float"));
}

TEST(Codegen, IfOnScalar) {
  auto fn = ifOnScalar();
  Compiled c = compileEverywhere(*fn);
  EXPECT_TRUE(contains(c.sm90a.ptx, "setp"));
}

TEST(Codegen, ScalarLoadsAndStores) {
  auto fn = scalarMemory();
  Compiled c = compileEverywhere(*fn);
  EXPECT_FALSE(contains(c.laidOut, "#L"));
  EXPECT_TRUE(contains(c.sm90a.ptx, "cvt.rzi.s64.f32"));
}

TEST(Codegen, WhileLoopWithReduction) {
  auto fn = whileLoop();
  Compiled c = compileEverywhere(*fn);
  EXPECT_TRUE(contains(c.sm90a.ptx, "shfl.sync.bfly"));
}

TEST(Codegen, ReshapeBf16AndLibdeviceF64) {
  auto fn = reshapeAndMath();
  Compiled c = compileEverywhere(*fn);
  EXPECT_TRUE(contains(c.laidOut, "reshape"));
  // Flattening the blocked tile keeps every thread's elements: registers are
  // picked, no shared memory (it took 1024 bf16 of it before, ShapeOpLayouts.h).
  EXPECT_EQ(c.sm90a.sharedBytes, 0u);
  EXPECT_FALSE(contains(c.sm90a.ptx, "__nv_exp")); // linked in and inlined
}

TEST(Codegen, WrappedVectorAddStoresOnce) {
  auto fn = vectorAdd(32, 4); // 128 threads, 32 elements
  fn->name = "vector_add_wrapped";
  Compiled c = compileEverywhere(*fn);
  EXPECT_TRUE(contains(c.laidOut, "#blocked<spt=[1], tpw=[32], wpc=[4], order=[0]>"));
  EXPECT_TRUE(contains(c.sm90a.ptx, "st.global.b32"));
}

TEST(Codegen, Softmax2D) {
  auto fn = softmax2d();
  Compiled c = compileEverywhere(*fn);
  EXPECT_FALSE(contains(c.laidOut, "convert_layout"));
  EXPECT_TRUE(contains(c.laidOut, "expand_dims"));
}

TEST(Codegen, ConvertOfReplicatedValueAndBoolStore) {
  auto fn = rowSumPlus();
  Compiled c = compileEverywhere(*fn);
  EXPECT_TRUE(contains(c.laidOut, "convert_layout"));
  EXPECT_EQ(c.sm90a.sharedBytes, 32u * 4u);
  EXPECT_TRUE(contains(c.sm90a.ptx, "st.global.u8"));
}

TEST(Codegen, IntegerSemantics) {
  auto fn = integerOps();
  Compiled c = compileEverywhere(*fn);
  EXPECT_TRUE(contains(c.sm90a.ptx, "div.s32"));
  EXPECT_TRUE(contains(c.sm90a.ptx, "shr.s32"));
  EXPECT_TRUE(contains(c.sm90a.ptx, "shr.u32"));
}

TEST(Codegen, SmallTileWrapsInTwoDimensions) {
  auto fn = copy2d(4, 16, 4); // tile 8 x 16 over a 4 x 16 block
  fn->name = "copy2d_small";
  Compiled c = compileEverywhere(*fn);
  EXPECT_TRUE(contains(c.laidOut, "#blocked<spt=[1,1], tpw=[2,16], wpc=[4,1], order=[1,0]>"));
}

TEST(Codegen, ReductionsOverWrappedLayouts) {
  auto fn = reduceWrapped();
  Compiled c = compileEverywhere(*fn);
  EXPECT_TRUE(contains(c.laidOut, "<32x16xf32> #L"));
  EXPECT_TRUE(contains(c.laidOut, "#blocked<spt=[1,4], tpw=[2,16], wpc=[4,1], order=[1,0]>"));
  EXPECT_TRUE(contains(c.sm90a.ptx, "shfl.sync.bfly"));
}

TEST(Codegen, UnsupportedThingsNameTheOp) {
  KernelBuilder k("fp8", 4);
  Value *x = k.param("x", ptrTo(ScalarType::F8E4M3), 16);
  k.b.setLoc({7, 3});
  k.store(x, k.cast(k.cast(k.load(x), ScalarType::F32), ScalarType::F8E4M3));
  auto fn = k.finish();
  passes::assignLayouts(*fn);
  try { // conversions to fp8 need sm_90 (cvt.*.e4m3x2)
    codegen::generate(*fn, codegenOptions("sm_80", true), true);
    FAIL() << "fp8 conversions should be rejected on sm_80";
  } catch (const std::runtime_error &e) {
    EXPECT_TRUE(contains(e.what(), "'cast' at 7:3")) << e.what();
    EXPECT_TRUE(contains(e.what(), "fp8")) << e.what();
  }
  auto add = vectorAdd();
  passes::assignLayouts(*add);
  EXPECT_THROW(codegen::generate(*add, codegenOptions("sm_75", true), true), std::runtime_error);
}

TEST(Codegen, UnoptimisedBuildStillAssembles) {
  std::vector<std::unique_ptr<Function>> kernels;
  kernels.push_back(softmax(ScalarType::F32, 256, 2));
  kernels.push_back(reshapeAndMath()); // libdevice without the O3 pipeline
  for (auto &fn : kernels) {
    passes::assignLayouts(*fn);
    codegen::CodegenResult r = codegen::generate(*fn, codegenOptions("sm_80", false), true);
    int status = 0;
    std::string log = runPtxas(r.ptx, "sm_80", status);
    EXPECT_EQ(status, 0) << log;
  }
}

// Codegen reads libdevice's path from its options (the driver resolves it from the
// environment); it never looks at TESSERA_LIBDEVICE itself.
TEST(Codegen, LibdeviceComesFromTheOptions) {
  auto fn = reshapeAndMath();
  passes::assignLayouts(*fn);
  codegen::CodegenOptions o = codegenOptions("sm_80", true);
  o.libdevicePath = "/nonexistent/libdevice.10.bc";
  try {
    codegen::generate(*fn, o, true);
    FAIL() << "a missing libdevice should be reported";
  } catch (const std::runtime_error &e) {
    EXPECT_TRUE(contains(e.what(), "/nonexistent/libdevice.10.bc")) << e.what();
  }
  o.libdevicePath.clear();
  try {
    codegen::generate(*fn, o, true);
    FAIL() << "an empty libdevice path should be reported";
  } catch (const std::runtime_error &e) {
    EXPECT_TRUE(contains(e.what(), "CodegenOptions::libdevicePath is empty")) << e.what();
  }
}
