// Compile-time integers (dsl/ConstInt.h): Python's int operators, exact in
// 128 bits, nullopt where a result needs more.
#include "dsl/ConstInt.h"

#include <gtest/gtest.h>

using namespace tessera;

static std::string str(std::optional<ConstInt> v) { return v ? constIntToString(*v) : "overflow"; }

TEST(ConstInt, PrintsAndParsesTheWholeRange) {
  EXPECT_EQ(constIntToString(0), "0");
  EXPECT_EQ(constIntToString(-42), "-42");
  EXPECT_EQ(constIntToString(kConstIntMax), "170141183460469231731687303715884105727");
  EXPECT_EQ(constIntToString(kConstIntMin), "-170141183460469231731687303715884105728");
  EXPECT_EQ(str(parseConstInt("-170141183460469231731687303715884105728")),
            "-170141183460469231731687303715884105728");
  EXPECT_EQ(str(parseConstInt("18446744073709551616")), "18446744073709551616");
  EXPECT_FALSE(parseConstInt("170141183460469231731687303715884105728"));
  EXPECT_FALSE(parseConstInt("1e3"));
  EXPECT_FALSE(parseConstInt("-"));
}

TEST(ConstInt, FloorDivisionAndModuloArePythons) {
  EXPECT_EQ(str(constIntFloorDiv(-7, 2)), "-4");
  EXPECT_EQ(str(constIntFloorDiv(7, -2)), "-4");
  EXPECT_EQ(str(constIntFloorDiv(-7, -2)), "3");
  EXPECT_EQ(constIntToString(constIntMod(-7, 2)), "1");
  EXPECT_EQ(constIntToString(constIntMod(7, -2)), "-1");
  EXPECT_EQ(constIntToString(constIntMod(kConstIntMin, -1)), "0");
  EXPECT_FALSE(constIntFloorDiv(kConstIntMin, -1));
}

TEST(ConstInt, ResultsBeyond64BitsAreExact) {
  ConstInt p100 = *constIntPow(2, 100), p90 = *constIntPow(2, 90);
  EXPECT_EQ(str(constIntFloorDiv(p100, p90)), "1024");
  EXPECT_EQ(str(constIntFloorDiv(*constIntPow(10, 30), *constIntPow(10, 29))), "10");
  EXPECT_EQ(str(constIntSub(*constIntAdd(*constIntPow(2, 64), 5), *constIntPow(2, 64))), "5");
  EXPECT_EQ(str(constIntShl(1, 126)), "85070591730234615865843651857942052864");
  EXPECT_EQ(constIntToString(constIntShr(-*constIntPow(2, 100), 99)), "-2");
  EXPECT_EQ(constIntToString(constIntShr(-1, 500)), "-1");
}

TEST(ConstInt, OverflowIsReportedNotWrapped) {
  EXPECT_FALSE(constIntPow(2, 127));
  EXPECT_EQ(str(constIntPow(-2, 127)), constIntToString(kConstIntMin));
  EXPECT_FALSE(constIntPow(3, 81));
  EXPECT_FALSE(constIntMul(*constIntPow(2, 64), *constIntPow(2, 64)));
  EXPECT_FALSE(constIntAdd(kConstIntMax, 1));
  EXPECT_FALSE(constIntSub(kConstIntMin, 1));
  EXPECT_FALSE(constIntShl(1, 127));
  EXPECT_FALSE(constIntShl(3, 126));
  EXPECT_EQ(str(constIntShl(0, 1000)), "0");
}
