// The host interpreter (compiler/interp/) from C++: element encodings,
// kernels compiled from source and run on host buffers, hand-built IR, the
// errors it reports, and that it knows every op of Ops.def.
#include "compiler/driver/Compiler.h"
#include "compiler/driver/Interpret.h"
#include "compiler/interp/Interpreter.h"
#include "compiler/interp/Values.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

using namespace tessera;
using namespace tessera::ir;

namespace {

std::shared_ptr<const SourceFile> source(std::string text) {
  auto f = std::make_shared<SourceFile>();
  f->path = "kernel.py";
  f->text = std::move(text);
  return f;
}

template <typename T> interp::ArgValue buffer(std::vector<T> &v, bool writable = true) {
  return interp::ArgValue::buffer(v.data(), v.size() * sizeof(T), writable);
}

interp::ArgValue i32(int32_t v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  return interp::ArgValue::scalar(bits);
}

ArgSpec spec(const char *text) { return parseSignature(text).at(0); }

const char *kAdd = R"(import tessera
import tessera.language as tl

@tessera.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)
)";

} // namespace

TEST(InterpreterValues, HalfAndBFloat16RoundToNearestEven) {
  using namespace interp;
  EXPECT_EQ(halfToDouble(doubleToHalf(1.0)), 1.0);
  EXPECT_EQ(doubleToHalf(65504.0), 0x7bff);
  EXPECT_EQ(doubleToHalf(65519.0), 0x7bff);      // rounds down to the largest finite
  EXPECT_EQ(doubleToHalf(65520.0), 0x7c00);      // ties to even: inf
  EXPECT_EQ(doubleToHalf(-0.0), 0x8000);
  EXPECT_EQ(doubleToHalf(std::ldexp(1.0, -24)), 0x0001); // the smallest subnormal
  EXPECT_EQ(doubleToHalf(std::ldexp(1.0, -25)), 0x0000); // a tie: to even (0)
  EXPECT_EQ(doubleToHalf(1.0 + std::ldexp(1.0, -11)), 0x3c00);                       // tie, even stays
  EXPECT_EQ(doubleToHalf(1.0 + 3 * std::ldexp(1.0, -11)), 0x3c02);                   // tie, rounds up to even
  EXPECT_TRUE(std::isnan(halfToDouble(doubleToHalf(NAN))));
  // NaN payloads survive a decode/encode round trip (bitcasts through f16/bf16 keep their bits).
  for (uint16_t bits : {0x7c01, 0xfe00, 0x7fff, 0x7d55}) EXPECT_EQ(doubleToHalf(halfToDouble(bits)), bits);
  for (uint16_t bits : {0x7f81, 0xffc0, 0x7fff}) EXPECT_EQ(doubleToBFloat16(bfloat16ToDouble(bits)), bits);
  EXPECT_EQ(doubleToBFloat16(1.0), 0x3f80);
  EXPECT_EQ(doubleToBFloat16(1.0 + std::ldexp(1.0, -8)), 0x3f80);                    // tie to even
  EXPECT_EQ(doubleToBFloat16(1.0 + 3 * std::ldexp(1.0, -8)), 0x3f82);
  EXPECT_EQ(bfloat16ToDouble(0xff80), -INFINITY);
  // Double rounding would get this one wrong: the value is just above a half-way point of f16.
  double justAbove = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  EXPECT_EQ(doubleToHalf(justAbove), 0x3c01);
}

TEST(InterpreterValues, Fp8SaturatesLikeSatfinite) {
  using namespace interp;
  EXPECT_EQ(fp8E4M3ToDouble(doubleToFp8E4M3(448.0)), 448.0);
  EXPECT_EQ(fp8E4M3ToDouble(doubleToFp8E4M3(1e6)), 448.0);
  EXPECT_EQ(fp8E4M3ToDouble(doubleToFp8E4M3(-INFINITY)), -448.0);
  EXPECT_TRUE(std::isnan(fp8E4M3ToDouble(0x7f)));
  EXPECT_EQ(fp8E5M2ToDouble(doubleToFp8E5M2(57344.0)), 57344.0);
  EXPECT_EQ(fp8E5M2ToDouble(doubleToFp8E5M2(1e9)), 57344.0);
  EXPECT_EQ(fp8E5M2ToDouble(0x7c), INFINITY);
  EXPECT_EQ(fp8E4M3ToDouble(doubleToFp8E4M3(0.1)), 0.1015625);
}

TEST(InterpreterValues, IntegersWrapToTheirWidth) {
  using namespace interp;
  EXPECT_EQ(wrapInt(0xff, ScalarType::I8), -1);
  EXPECT_EQ(wrapInt(0x1ff, ScalarType::U8), 255);
  EXPECT_EQ(wrapInt(3, ScalarType::I1), 1);
  EXPECT_EQ(wrapInt(0x80000000u, ScalarType::I32), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(decodeElement(0x3c00, Type(ScalarType::F16)).f, 1.0);
  EXPECT_EQ(encodeElement(decodeElement(0x02, Type(ScalarType::I1)), Type(ScalarType::I1)), 1u);
}

TEST(Interpreter, KnowsEveryOpOfOpsDef) {
  // desc_load (and the TMA pipeline's ops made from it, the producer warpgroup's and ping-pong's
  // consumer_group included) need a
  // tensor-descriptor argument kind in the interpreter (docs/tma.md, limits):
  // they stop with an error naming the op until then. inline_asm's PTX runs only on the GPU.
  auto expected = [](OpCode code) {
    return code != OpCode::InlineAsm && code != OpCode::DescLoad && code != OpCode::DescStore && code != OpCode::MbarrierAlloc && code != OpCode::AsyncTmaCopy &&
           code != OpCode::MbarrierWait && code != OpCode::MbarrierArrive && code != OpCode::WarpSpecialize &&
           code != OpCode::ConsumerGroup;
  };
#define OP(name, text, traits) \
  EXPECT_EQ(interp::supports(OpCode::name), expected(OpCode::name)) << "the interpreter and '" << text << "'";
#include "compiler/ir/Ops.def"
#undef OP
}

TEST(Interpreter, VectorAddFromSource) {
  const int n = 1000;
  std::vector<float> x(n), y(n), out(n, -1.f);
  for (int i = 0; i < n; ++i) x[i] = 0.5f * i, y[i] = 1.0f - i;
  InterpretableKernel k(source(kAdd), "add", {spec("*fp32"), spec("*fp32"), spec("*fp32"), spec("i32")},
                        {{"BLOCK", ConstexprValue::ofInt(256)}});
  EXPECT_EQ(k.parameterNames(), (std::vector<std::string>{"x_ptr", "y_ptr", "out_ptr", "n"}));
  k.run({4, 1, 1}, {buffer(x), buffer(y), buffer(out), i32(n)});
  for (int i = 0; i < n; ++i) ASSERT_EQ(out[i], x[i] + y[i]) << i;
  EXPECT_EQ(k.ir().find("layout"), std::string::npos) << "the interpreter runs IR before layout assignment";
}

TEST(Interpreter, OutOfBoundsLoadNamesTheLineTheElementAndTheArgument) {
  std::vector<float> x(16), y(16), out(32);
  InterpretableKernel k(source(kAdd), "add", {spec("*fp32"), spec("*fp32"), spec("*fp32"), spec("i32")},
                        {{"BLOCK", ConstexprValue::ofInt(16)}});
  try {
    k.run({2, 1, 1}, {buffer(x), buffer(y), buffer(out), i32(20)});
    FAIL() << "expected an out-of-bounds error";
  } catch (const interp::InterpreterError &e) {
    EXPECT_EQ(std::string(e.what()),
              "kernel.py:8:5: error: out-of-bounds load: element 0 of the block reads bytes [64, 68) of argument "
              "'x_ptr' (64 bytes) (program (1, 0, 0); 4 of the block's 16 elements are out of bounds)\n"
              "    x = tl.load(x_ptr + offs, mask=mask)\n"
              "    ^");
    EXPECT_EQ(e.loc().line, 8u);
  }
}

TEST(Interpreter, ReadOnlyBuffersRejectStores) {
  std::vector<float> x(16), y(16), out(16);
  InterpretableKernel k(source(kAdd), "add", {spec("*fp32"), spec("*fp32"), spec("*fp32"), spec("i32")},
                        {{"BLOCK", ConstexprValue::ofInt(16)}});
  EXPECT_THROW(k.run({1, 1, 1}, {buffer(x), buffer(y), buffer(out, false), i32(16)}), CompileError);
  EXPECT_NO_THROW(k.run({1, 1, 1}, {buffer(x, false), buffer(y, false), buffer(out), i32(16)}));
}

TEST(Interpreter, IntegerDivisionIsCDivision) {
  const char *text = R"(import tessera.language as tl
from tessera import jit

@jit
def k(a_ptr, b_ptr, q_ptr, r_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    tl.store(q_ptr + offs, a // b)
    tl.store(r_ptr + offs, a % b)
)";
  std::vector<int32_t> a = {-7, 7, -7, 7}, b = {2, -2, -2, 2}, q(4), r(4);
  interpretKernel(source(text), "k", parseSignature("*i32,*i32,*i32,*i32"), {{"BLOCK", ConstexprValue::ofInt(4)}},
                  {1, 1, 1}, {buffer(a), buffer(b), buffer(q), buffer(r)});
  EXPECT_EQ(q, (std::vector<int32_t>{-3, -3, 3, 3}));
  EXPECT_EQ(r, (std::vector<int32_t>{-1, 1, -1, 1}));
}

TEST(Interpreter, WhileLoopAndIfFromSource) {
  const char *text = R"(import tessera.language as tl
from tessera import jit

@jit
def collatz(out_ptr, start):
    x = start
    steps = 0
    while x != 1:
        if x % 2 == 0:
            x = x // 2
        else:
            x = 3 * x + 1
        steps += 1
    tl.store(out_ptr, steps)
)";
  std::vector<int32_t> out(1);
  InterpretableKernel k(source(text), "collatz", parseSignature("*i32,i32"), {});
  k.run({1, 1, 1}, {buffer(out), i32(27)});
  EXPECT_EQ(out[0], 111);
  InterpretableKernel raw(source(text), "collatz", parseSignature("*i32,i32"), {}, {4, /*optimize=*/false});
  raw.run({1, 1, 1}, {buffer(out), i32(6)});
  EXPECT_EQ(out[0], 8);
}

// Hand-built IR: a pointer whose origin is unknown (an int turned into a
// pointer) is checked against every argument's buffer.
TEST(Interpreter, PointersOfUnknownOriginMustLieInSomeBuffer) {
  Function fn;
  fn.name = "k";
  fn.params.push_back({"out", Type::ptr(ScalarType::I64)});
  fn.params.push_back({"addr", Type(ScalarType::I64)});
  Value *out = fn.body.addArgument(Type::ptr(ScalarType::I64), "out");
  Value *addr = fn.body.addArgument(Type(ScalarType::I64), "addr");
  Builder b(&fn.body);
  b.setLoc({3, 7});
  Value *p = b.op(OpCode::Cast, {addr}, Type::ptr(ScalarType::I64));
  Value *v = b.op(OpCode::Load, {p}, Type(ScalarType::I64), {{"has_mask", int64_t(0)}, {"has_other", int64_t(0)}});
  b.create(OpCode::Store, {out, v}, {}, {{"has_mask", int64_t(0)}});
  b.create(OpCode::Return, {}, {});
  ASSERT_EQ(verify(fn), "");
  std::vector<int64_t> data = {0, 41, 42};
  uint64_t address = reinterpret_cast<uint64_t>(&data[2]);
  interp::run(fn, {}, {buffer(data), interp::ArgValue::scalar(address)});
  EXPECT_EQ(data[0], 42);
  try {
    interp::run(fn, {}, {buffer(data), interp::ArgValue::scalar(address + 8)});
    FAIL();
  } catch (const interp::InterpreterError &e) {
    EXPECT_NE(std::string(e.what()).find("<source>:3:7: error: out-of-bounds load: the load reads 8 bytes at "
                                         "address 0x"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("inside no argument's buffer"), std::string::npos);
  }
}

TEST(Interpreter, ReduceSumMaxMinOnBlocks) {
  Function fn;
  fn.name = "k";
  fn.params.push_back({"out", Type::ptr(ScalarType::F32)});
  Value *out = fn.body.addArgument(Type::ptr(ScalarType::F32), "out");
  Builder b(&fn.body);
  Type f32(ScalarType::F32), block = f32.withShape({4, 8});
  Value *r = b.op(OpCode::MakeRange, {}, Type(ScalarType::I32).withShape({32}), {{"start", int64_t(0)}, {"end", int64_t(32)}});
  Value *x = b.op(OpCode::Reshape, {b.op(OpCode::Cast, {r}, f32.withShape({32}))}, block);
  Value *rows = b.op(OpCode::Reduce, {x}, f32.withShape({4}), {{"axis", int64_t(1)}, {"kind", std::string("sum")}});
  Value *all = b.op(OpCode::Reduce, {rows}, f32, {{"axis", int64_t(0)}, {"kind", std::string("max")}});
  b.create(OpCode::Store, {out, all}, {}, {{"has_mask", int64_t(0)}});
  b.create(OpCode::Return, {}, {});
  ASSERT_EQ(verify(fn), "");
  std::vector<float> result(1);
  interp::run(fn, {}, {buffer(result)});
  EXPECT_EQ(result[0], 24 + 25 + 26 + 27 + 28 + 29 + 30 + 31);
}

TEST(Interpreter, WrongArgumentCountIsInvalidArgument) {
  Function fn;
  fn.name = "k";
  fn.body.ops.clear();
  Builder b(&fn.body);
  b.create(OpCode::Return, {}, {});
  EXPECT_THROW(interp::run(fn, {}, {interp::ArgValue::scalar(0)}), std::invalid_argument);
  EXPECT_NO_THROW(interp::run(fn, {2, 2, 2}, {}));
}
