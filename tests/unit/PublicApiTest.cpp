// include/tessera/tessera.h, the installed C++ API, on the CPU: compiling to
// PTX, the constexpr kinds it converts, its errors, and the disk cache calls.
// This file includes only the public header, as an installed user would
// (tests/install/ builds one against the installed package).
#include <tessera/tessera.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace {

const char *const kScale =
    "import tessera\nimport tessera.language as tl\n@tessera.jit\n"
    "def scale(x, n, B: tl.constexpr, F: tl.constexpr, T: tl.constexpr, D: tl.constexpr):\n"
    "    o = tl.arange(0, B)\n"
    "    v = tl.load(x + o, mask=o < n)\n"
    "    if T:\n"
    "        v = v * F\n"
    "    tl.store(x + o, v.to(D).to(tl.float32), mask=o < n)\n";

// A cache directory of its own, so that the tests neither read nor fill the user's.
class PublicApi : public ::testing::Test {
protected:
  void SetUp() override {
    char pattern[] = "/tmp/tessera-public-api-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    setenv("TESSERA_CACHE_DIR", dir_.c_str(), 1);
    unsetenv("TESSERA_CACHE");
  }
  void TearDown() override {
    unsetenv("TESSERA_CACHE_DIR");
    std::string command = "rm -rf '" + dir_ + "'";
    (void)std::system(command.c_str());
  }
  std::string dir_;
};

tessera::Constexprs scaleConstexprs() {
  return {{"B", tessera::ConstexprValue::ofInt(128)},
          {"F", tessera::ConstexprValue::ofFloat(2.5)},
          {"T", tessera::ConstexprValue::ofBool(true)},
          {"D", tessera::ConstexprValue::ofDType("float16")}};
}

TEST_F(PublicApi, CompilesToPtxWithoutAGpu) {
  std::string ptx = tessera::compileToPtx(kScale, "scale", "*fp32:16,i32", scaleConstexprs(), "sm_80");
  EXPECT_NE(ptx.find(".entry scale"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find(".target sm_80"), std::string::npos);
  EXPECT_NE(ptx.find("cvt.rn.f16.f32"), std::string::npos); // D = float16 reached the kernel
  EXPECT_NE(ptx.find("0f40200000"), std::string::npos);    // F = 2.5
}

TEST_F(PublicApi, CompileGivesAKernelAndUsesTheCache) {
  tessera::CompileOptions options;
  options.arch = "sm_90a";
  options.numWarps = 2;
  tessera::Kernel k = tessera::compile(kScale, "scale", "*fp32:16,i32", scaleConstexprs(), options);
  ASSERT_TRUE(k);
  EXPECT_EQ(k.name(), "scale");
  EXPECT_EQ(k.arch(), "sm_90a");
  EXPECT_EQ(k.numWarps(), 2u);
  EXPECT_FALSE(k.fromCache());
  EXPECT_NE(k.ptx().find(".entry scale"), std::string::npos);

  tessera::CacheUsage usage = tessera::cacheUsage();
  EXPECT_TRUE(usage.enabled);
  EXPECT_EQ(usage.directory, dir_);
  EXPECT_EQ(usage.entries, 1u);
  EXPECT_GT(usage.bytes, 0u);

  tessera::Kernel again = tessera::compile(kScale, "scale", "*fp32:16,i32", scaleConstexprs(), options);
  EXPECT_TRUE(again.fromCache());
  EXPECT_EQ(again.ptx(), k.ptx());

  EXPECT_GE(tessera::clearCache(), 1u);
  EXPECT_EQ(tessera::cacheUsage().entries, 0u);
}

TEST_F(PublicApi, TuplesAndStringsConvert) {
  const char *src = "import tessera\nimport tessera.language as tl\n@tessera.jit\n"
                    "def k(x, S: tl.constexpr, M: tl.constexpr):\n"
                    "    o = tl.arange(0, S[0] * S[1])\n"
                    "    if M == 'twice':\n"
                    "        tl.store(x + o, tl.load(x + o) * 2)\n";
  tessera::Constexprs c{{"S", tessera::ConstexprValue::ofTuple({tessera::ConstexprValue::ofInt(8),
                                                               tessera::ConstexprValue::ofInt(16)})},
                        {"M", tessera::ConstexprValue::ofString("twice")}};
  std::string ptx = tessera::compileToPtx(src, "k", "*fp32:16", c, "sm_80");
  EXPECT_NE(ptx.find(".entry k"), std::string::npos);
}

TEST_F(PublicApi, ErrorsAreStandardExceptions) {
  tessera::Constexprs bad = scaleConstexprs();
  bad["D"] = tessera::ConstexprValue::ofDType("float17");
  try {
    tessera::compileToPtx(kScale, "scale", "*fp32:16,i32", bad, "sm_80");
    FAIL() << "no error for an unknown dtype";
  } catch (const std::invalid_argument &e) {
    EXPECT_NE(std::string(e.what()).find("float17"), std::string::npos) << e.what();
  }
  EXPECT_THROW(tessera::compileToPtx(kScale, "scale", "*fp33,i32", scaleConstexprs(), "sm_80"),
               std::invalid_argument);
  EXPECT_THROW(tessera::compileToPtx(kScale, "scale", "*fp32,i32", scaleConstexprs(), ""),
               std::invalid_argument);
  // An error in the kernel: a runtime_error with the place and a caret.
  const char *broken = "import tessera\nimport tessera.language as tl\n@tessera.jit\n"
                       "def k(x):\n    tl.store(x, undefined_name)\n";
  try {
    tessera::compileToPtx(broken, "k", "*fp32", {}, "sm_80");
    FAIL() << "no error for an undefined name";
  } catch (const std::runtime_error &e) {
    std::string what = e.what();
    EXPECT_NE(what.find("<source>:5:"), std::string::npos) << what;
    EXPECT_NE(what.find("undefined_name"), std::string::npos) << what;
    EXPECT_NE(what.find('^'), std::string::npos) << what;
  }
}

TEST(PublicApiKernel, AnEmptyKernelSaysSo) {
  tessera::Kernel empty;
  EXPECT_FALSE(empty);
  EXPECT_THROW(empty.name(), std::logic_error);
  EXPECT_NE(tessera::version().find("tessera "), std::string::npos);
}

} // namespace
