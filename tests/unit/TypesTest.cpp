#include "compiler/ir/Types.h"

#include <gtest/gtest.h>

using namespace tessera::ir;

TEST(Types, PrintsScalarsPointersAndBlocks) {
  EXPECT_EQ(Type(ScalarType::F32).str(), "f32");
  EXPECT_EQ(Type::ptr(ScalarType::F16).str(), "ptr<f16>");
  EXPECT_EQ(Type(ScalarType::F32).withShape({64, 32}).str(), "<64x32xf32>");
  EXPECT_EQ(Type::ptr(ScalarType::BF16).withShape({128}).str(), "<128xptr<bf16>>");
}

TEST(Types, ParsesTritonNames) {
  EXPECT_EQ(parseScalarType("fp32"), ScalarType::F32);
  EXPECT_EQ(parseScalarType("float16"), ScalarType::F16);
  EXPECT_EQ(parseScalarType("bf16"), ScalarType::BF16);
  EXPECT_EQ(parseScalarType("int64"), ScalarType::I64);
  EXPECT_EQ(parseScalarType("u8"), ScalarType::U8);
  EXPECT_FALSE(parseScalarType("fp33").has_value());
}

TEST(Types, BitWidthsAndSignedness) {
  EXPECT_EQ(bitWidth(ScalarType::BF16), 16u);
  EXPECT_EQ(bitWidth(ScalarType::I1), 1u);
  EXPECT_TRUE(isSigned(ScalarType::I32));
  EXPECT_FALSE(isSigned(ScalarType::U32));
  EXPECT_TRUE(isFloat(ScalarType::F8E4M3));
}
