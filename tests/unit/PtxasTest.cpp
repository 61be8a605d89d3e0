// runtime/Ptxas.cpp and runtime/Jit.cpp without a GPU: finding ptxas, compiling
// PTX with it (also from several threads at once), its failures as one clear
// error, and the TESSERA_JIT plan. Needs the CUDA toolkit's ptxas, as the
// Python tests do (CUDA_HOME, else /usr/local/cuda).
#include "runtime/Driver.h"
#include "runtime/Jit.h"
#include "runtime/Ptxas.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

using namespace tessera::rt;

namespace {

const char *kPtx = R"(.version 8.0
.target sm_90a
.address_size 64
.visible .entry add_one(.param .u64 p) {
  .reg .b64 %rd<2>;
  .reg .f32 %f<3>;
  ld.param.u64 %rd1, [p];
  cvta.to.global.u64 %rd1, %rd1;
  ld.global.f32 %f1, [%rd1];
  add.f32 %f2, %f1, 0f3F800000;
  st.global.f32 [%rd1], %f2;
  ret;
}
)";

// Sets an environment variable for one scope, then puts back what was there.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const std::optional<std::string> &value) : name_(name) {
    if (const char *old = std::getenv(name)) old_ = old;
    if (value)
      setenv(name, value->c_str(), 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

private:
  const char *name_;
  std::optional<std::string> old_;
};

std::string script(const std::string &name, const std::string &body) {
  std::filesystem::path path = std::filesystem::temp_directory_path() / ("tessera-ptxas-test-" + name);
  std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path.string();
}

} // namespace

TEST(Ptxas, TheToolkitsPtxasIsFoundWithItsVersion) {
  ScopedEnv unset("TESSERA_PTXAS", std::nullopt);
  const PtxasTool *tool = findPtxas();
  ASSERT_NE(tool, nullptr) << "no ptxas: the CUDA toolkit is a required dependency";
  EXPECT_TRUE(std::regex_match(tool->version, std::regex(R"(\d+\.\d+\.\d+)"))) << tool->version;
}

TEST(Ptxas, CompilesPtxToACubin) {
  ScopedEnv unset("TESSERA_PTXAS", std::nullopt);
  const PtxasTool *tool = findPtxas();
  ASSERT_NE(tool, nullptr);
  std::vector<char> cubin = assemblePtx(*tool, kPtx, "sm_90a", "add_one");
  ASSERT_GT(cubin.size(), 4u);
  EXPECT_EQ(std::string(cubin.begin(), cubin.begin() + 4), "\x7f" "ELF");
}

TEST(Ptxas, ThreadsCompilingAtOnceEachGetTheirOwnCubin) {
  // The autotuner compiles configs on a thread pool: each ptxas run has a directory of its own.
  ScopedEnv unset("TESSERA_PTXAS", std::nullopt);
  const PtxasTool *tool = findPtxas();
  ASSERT_NE(tool, nullptr);
  const std::vector<char> want = assemblePtx(*tool, kPtx, "sm_90a", "add_one");
  std::vector<std::vector<char>> got(8);
  std::vector<std::thread> threads;
  for (auto &out : got) threads.emplace_back([&] { out = assemblePtx(*tool, kPtx, "sm_90a", "add_one"); });
  for (auto &t : threads) t.join();
  for (const auto &cubin : got) EXPECT_EQ(cubin, want);
}

TEST(Ptxas, BadPtxIsOneErrorWithPtxassOutput) {
  ScopedEnv unset("TESSERA_PTXAS", std::nullopt);
  const PtxasTool *tool = findPtxas();
  ASSERT_NE(tool, nullptr);
  try {
    assemblePtx(*tool, ".version 8.0\n.target sm_90a\n.address_size 64\nnot ptx at all\n", "sm_90a", "broken");
    FAIL() << "no error";
  } catch (const Error &e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("compiling kernel 'broken' for sm_90a failed with exit status"), std::string::npos)
        << message;
    EXPECT_NE(message.find("syntax error"), std::string::npos) << message; // ptxas's own words
  }
}

TEST(Ptxas, TesseraPtxasThatDoesNotRunIsAnError) {
  {
    ScopedEnv bad("TESSERA_PTXAS", std::string("/no/such/ptxas"));
    EXPECT_THROW(
        {
          try {
            findPtxas();
          } catch (const Error &e) {
            EXPECT_STREQ(e.what(), "TESSERA_PTXAS='/no/such/ptxas' is not a ptxas that runs "
                                   "(`/no/such/ptxas --version` failed or printed no version)");
            throw;
          }
        },
        Error);
  }
  ScopedEnv silent("TESSERA_PTXAS", script("silent", "exit 0"));
  EXPECT_THROW(findPtxas(), Error);
}

TEST(Ptxas, AStandInPtxasIsRunWithTheArchAndItsFailureQuoted) {
  const std::string path =
      script("fails", "if [ \"$1\" = \"--version\" ]; then echo 'Cuda compilation tools, V12.34.5'; exit 0; fi\n"
                      "echo \"ptxas fatal : asked for $1\"; exit 7");
  ScopedEnv standIn("TESSERA_PTXAS", path);
  const PtxasTool *tool = findPtxas();
  ASSERT_NE(tool, nullptr);
  EXPECT_EQ(tool->path, path);
  EXPECT_EQ(tool->version, "12.34.5");
  try {
    assemblePtx(*tool, kPtx, "sm_80", "k");
    FAIL() << "no error";
  } catch (const Error &e) {
    EXPECT_EQ(std::string(e.what()), "ptxas (" + path + ", 12.34.5) compiling kernel 'k' for sm_80 failed with "
                                     "exit status 7:\nptxas fatal : asked for -arch=sm_80");
  }
}

TEST(JitPlan, TesseraJitPicksTheMode) {
  ScopedEnv unset("TESSERA_PTXAS", std::nullopt);
  {
    ScopedEnv mode("TESSERA_JIT", std::nullopt);
    JitPlan plan = jitPlan();
    EXPECT_EQ(plan.mode, JitPlan::Ptxas);
    EXPECT_TRUE(plan.fallBackToWhole); // the default may fall back; asked for by name it may not
    EXPECT_EQ(plan.cubinCompiler(), "ptxas" + plan.ptxas->version);
  }
  {
    ScopedEnv mode("TESSERA_JIT", std::string("ptxas"));
    EXPECT_FALSE(jitPlan().fallBackToWhole);
  }
  {
    ScopedEnv mode("TESSERA_JIT", std::string("whole"));
    EXPECT_EQ(jitPlan().mode, JitPlan::Whole);
    EXPECT_EQ(jitPlan().describe(), "whole");
    EXPECT_EQ(jitPlan().cubinCompiler(), ""); // nothing to cache
  }
  {
    ScopedEnv mode("TESSERA_JIT", std::string("link"));
    EXPECT_EQ(jitPlan().mode, JitPlan::Link);
  }
  {
    ScopedEnv mode("TESSERA_JIT", std::string("fast"));
    EXPECT_THROW(
        {
          try {
            jitPlan();
          } catch (const Error &e) {
            EXPECT_STREQ(e.what(), "TESSERA_JIT must be 'ptxas', 'whole' or 'link', got 'fast'");
            throw;
          }
        },
        Error);
  }
}

TEST(Ptxas, ItsVersionIsRememberedInTheCacheUntilTheFileChanges) {
  // `ptxas --version` is a process spawn: a warm start reads the remembered answer instead.
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("tessera-ptxas-memo-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string calls = (dir / "calls").string();
  auto standIn = [&](const std::string &version) {
    return script("memo", "echo run >> " + calls + "\necho 'Cuda compilation tools, V" + version + "'");
  };
  auto runs = [&] {
    std::ifstream in(calls);
    return std::count(std::istreambuf_iterator<char>(in), {}, '\n');
  };
  ScopedEnv cacheDir("TESSERA_CACHE_DIR", (dir / "cache").string());
  ScopedEnv cacheOn("TESSERA_CACHE", std::nullopt);
  const std::string path = standIn("12.34.5");
  EXPECT_EQ(ptxasVersion(path), "12.34.5");
  EXPECT_EQ(ptxasVersion(path), "12.34.5");
  EXPECT_EQ(runs(), 1) << "the second ask ran ptxas again";
  standIn("12.35.0"); // upgraded in place: another mtime and ctime
  EXPECT_EQ(ptxasVersion(path), "12.35.0");
  EXPECT_EQ(runs(), 2);
  {
    ScopedEnv off("TESSERA_CACHE", std::string("off"));
    EXPECT_EQ(ptxasVersion(path), "12.35.0");
    EXPECT_EQ(runs(), 3) << "with the cache off nothing is remembered";
  }
  EXPECT_EQ(ptxasVersion((dir / "missing").string()), std::nullopt);
  fs::remove_all(dir);
}
