// The disk kernel cache (runtime/Cache.h) without a GPU: the entry format
// round-trips and every truncation and bit flip is caught; keys change with
// every input but the source's path; stores are atomic under many threads;
// eviction keeps the cap, least recently used first; an unwritable
// directory is one warning and no stores.
#include "runtime/Cache.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>
#include <vector>

using namespace tessera;
using namespace tessera::cache;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "tessera-cache-test-XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

Config configIn(const fs::path &dir, uint64_t maxBytes = 1ull << 30) {
  Config c;
  c.dir = dir.string();
  c.maxBytes = maxBytes;
  return c;
}

Entry sampleEntry(const std::string &keyText = "key text\n", size_t ptxBytes = 300) {
  Entry e;
  e.key = keyText;
  e.kernelName = "add_kernel";
  e.arch = "sm_90a";
  e.signature = "*f32:16,*f32:16,i32";
  e.numWarps = 8;
  e.numStages = 2;
  e.sharedBytes = 4096;
  e.ptx = ".version 8.0\n.target sm_90a\n" + std::string(ptxBytes, 'p');
  e.setCubin("sm_90/cuda13000", std::string("\x7f" "ELF\0\1\2", 7) + std::string(64, 'c'));
  return e;
}

Key keyFor(const std::string &text) {
  std::vector<ArgSpec> sig(1);
  sig[0].type = ir::Type(ir::ScalarType::I32);
  CompileOptions o;
  return makeKey(text, "k", sig, {}, o);
}

} // namespace

TEST(CacheFormat, RoundTrips) {
  Entry e = sampleEntry();
  std::string bytes = encode(e);
  std::string why;
  std::optional<Entry> back = decode(bytes, &why);
  ASSERT_TRUE(back) << why;
  EXPECT_EQ(back->key, e.key);
  EXPECT_EQ(back->kernelName, "add_kernel");
  EXPECT_EQ(back->arch, "sm_90a");
  EXPECT_EQ(back->signature, e.signature);
  EXPECT_EQ(back->numWarps, 8u);
  EXPECT_EQ(back->numStages, 2u);
  EXPECT_EQ(back->sharedBytes, 4096u);
  EXPECT_EQ(back->ptx, e.ptx);
  ASSERT_EQ(back->cubins.size(), 1u);
  ASSERT_NE(back->cubin("sm_90/cuda13000"), nullptr);
  EXPECT_EQ(*back->cubin("sm_90/cuda13000"), *e.cubin("sm_90/cuda13000"));
  EXPECT_EQ(back->cubin("sm_80/cuda13000"), nullptr);
}

TEST(CacheFormat, EveryTruncationIsDetected) {
  std::string bytes = encode(sampleEntry());
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::string why;
    EXPECT_FALSE(decode(std::string_view(bytes).substr(0, n), &why)) << "truncated to " << n << " bytes";
    EXPECT_NE(why.find("truncated"), std::string::npos) << why;
  }
  EXPECT_FALSE(decode(bytes + "x"));
}

TEST(CacheFormat, EveryBitFlipIsDetected) {
  std::string bytes = encode(sampleEntry("k", 40));
  std::mt19937 rng(7);
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string flipped = bytes;
    flipped[i] = static_cast<char>(flipped[i] ^ (1 << (rng() % 8)));
    EXPECT_FALSE(decode(flipped)) << "a flipped bit in byte " << i << " went unnoticed";
  }
}

TEST(CacheKey, ChangesWithEveryInputButNotThePath) {
  std::vector<ArgSpec> sig(2);
  sig[0].type = ir::Type::ptr(ir::ScalarType::F32);
  sig[0].divisibility = 16;
  sig[1].type = ir::Type(ir::ScalarType::I32);
  std::map<std::string, ConstexprValue> cx = {{"BLOCK", ConstexprValue::ofInt(1024)}};
  CompileOptions o;
  const std::string src = "import tessera\n@tessera.jit\ndef k(x, n, BLOCK: tl.constexpr):\n    pass\n";
  Key base = makeKey(src, "k", sig, cx, o);
  ASSERT_TRUE(base);
  EXPECT_EQ(base.digest.size(), 64u);
  EXPECT_EQ(makeKey(src, "k", sig, cx, o).digest, base.digest); // deterministic
  EXPECT_NE(base.text.find("source-blake3: "), std::string::npos);
  EXPECT_EQ(base.text.find("def k"), std::string::npos); // the source itself is hashed, not copied

  std::vector<std::string> digests = {base.digest};
  digests.push_back(makeKey(src + " ", "k", sig, cx, o).digest);
  digests.push_back(makeKey(src, "k2", sig, cx, o).digest);
  auto sig2 = sig;
  sig2[1].divisibility = 16;
  digests.push_back(makeKey(src, "k", sig2, cx, o).digest);
  auto cx2 = cx;
  cx2["BLOCK"] = ConstexprValue::ofInt(512);
  digests.push_back(makeKey(src, "k", sig, cx2, o).digest);
  cx2["BLOCK"] = ConstexprValue::ofFloat(1024.0); // same number, other type
  digests.push_back(makeKey(src, "k", sig, cx2, o).digest);
  for (auto change : {+[](CompileOptions &c) { c.numWarps = 8; }, +[](CompileOptions &c) { c.numStages = 2; },
                      +[](CompileOptions &c) { c.arch = "sm_80"; }}) {
    CompileOptions o2 = o;
    change(o2);
    digests.push_back(makeKey(src, "k", sig, cx, o2).digest);
  }
  std::sort(digests.begin(), digests.end());
  EXPECT_EQ(std::unique(digests.begin(), digests.end()), digests.end()) << "two different inputs share a key";

  CompileOptions golden = o;
  golden.stopAfterPass = "canonicalize";
  EXPECT_FALSE(makeKey(src, "k", sig, cx, golden)) << "--stop-after compiles must not be cached";
}

TEST(CacheKey, ByteSizes) {
  EXPECT_EQ(parseByteSize("1024"), 1024u);
  EXPECT_EQ(parseByteSize("64K"), 64u << 10);
  EXPECT_EQ(parseByteSize("512m"), 512ull << 20);
  EXPECT_EQ(parseByteSize("2G"), 2ull << 30);
  EXPECT_EQ(parseByteSize("2GB"), 2ull << 30);
  EXPECT_FALSE(parseByteSize(""));
  EXPECT_FALSE(parseByteSize("lots"));
  EXPECT_FALSE(parseByteSize("-1"));
}

TEST(DiskCache, StoresLoadsAndDetectsCorruption) {
  TempDir dir;
  DiskCache disk(configIn(dir.path));
  Key key = keyFor("a");
  EXPECT_FALSE(disk.load(key));
  Entry e = sampleEntry(key.text);
  ASSERT_TRUE(disk.store(key, e));
  std::optional<Entry> back = disk.load(key);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->ptx, e.ptx);

  // Flip a byte in the middle of the file: reported, removed, a miss.
  std::string path = disk.entryPath(key);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(path) / 2));
    f.put('\x5a' ^ 0x7f);
  }
  uint64_t corruptBefore = stats().corrupt;
  testing::internal::CaptureStderr();
  EXPECT_FALSE(disk.load(key));
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("is corrupt"), std::string::npos) << err;
  EXPECT_EQ(stats().corrupt, corruptBefore + 1);
  EXPECT_FALSE(fs::exists(path)) << "the corrupt entry was not removed";

  // An entry whose stored key differs from the one asked for (a collision).
  Key other = keyFor("b");
  ASSERT_TRUE(writeFileAtomically(disk.entryPath(other), encode(sampleEntry("not b's key"))));
  testing::internal::CaptureStderr();
  EXPECT_FALSE(disk.load(other));
  EXPECT_NE(testing::internal::GetCapturedStderr().find("holds another key"), std::string::npos);
}

TEST(DiskCache, ThreadsStoringAndLoadingOneKeyNeverSeeAPartialEntry) {
  TempDir dir;
  DiskCache disk(configIn(dir.path));
  Key key = keyFor("shared");
  const uint64_t corruptBefore = stats().corrupt;
  std::atomic<int> bad{0}, loaded{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        if ((i + t) % 2) {
          disk.store(key, sampleEntry(key.text, 1000 + 100 * static_cast<size_t>(t)));
        } else if (std::optional<Entry> e = disk.load(key)) {
          ++loaded;
          if (e->ptx.size() < 1000 || e->kernelName != "add_kernel") ++bad;
        }
      }
    });
  for (std::thread &t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(loaded.load(), 0);
  EXPECT_EQ(stats().corrupt, corruptBefore) << "a reader saw a partial entry";
  for (const EntryInfo &i : disk.list()) EXPECT_TRUE(i.entry) << i.path << ": " << i.problem;
  size_t leftovers = 0;
  for (auto &f : fs::recursive_directory_iterator(dir.path))
    leftovers += f.path().string().find(".tmp.") != std::string::npos;
  EXPECT_EQ(leftovers, 0u) << "temporary files were left behind";
}

TEST(DiskCache, EvictionKeepsTheCapLeastRecentlyUsedFirst) {
  TempDir dir;
  const size_t entryBytes = encode(sampleEntry(keyFor("k0").text, 2000)).size();
  const uint64_t cap = 3 * entryBytes + entryBytes / 2; // room for three entries
  DiskCache disk(configIn(dir.path, cap));
  std::vector<Key> keys;
  for (int i = 0; i < 6; ++i) {
    keys.push_back(keyFor("k" + std::to_string(i)));
    ASSERT_TRUE(disk.store(keys.back(), sampleEntry(keys.back().text, 2000)));
    std::this_thread::sleep_for(std::chrono::milliseconds(20)); // distinct mtimes
    if (i == 2) ASSERT_TRUE(disk.load(keys[0])); // a hit makes k0 the most recently used
    if (i == 2) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_LE(disk.usage().bytes, cap) << "over the cap after storing entry " << i;
  }
  EXPECT_EQ(disk.usage().entries, 3u);
  EXPECT_TRUE(fs::exists(disk.entryPath(keys[5])));
  EXPECT_TRUE(fs::exists(disk.entryPath(keys[4])));
  EXPECT_FALSE(fs::exists(disk.entryPath(keys[1])));
  EXPECT_FALSE(fs::exists(disk.entryPath(keys[2])));
  EXPECT_EQ(disk.clear(false), 3u);
  EXPECT_EQ(disk.usage().entries, 0u);
}

TEST(DiskCache, AnUnwritableDirectoryIsOneWarningAndNoStores) {
  TempDir dir;
  fs::path file = dir.path / "a-file";
  std::ofstream(file) << "x";
  DiskCache disk(configIn(file / "cache")); // beneath a regular file: mkdir fails, even for root
  uint64_t failures = stats().storeFailures;
  testing::internal::CaptureStderr();
  EXPECT_FALSE(disk.store(keyFor("x"), sampleEntry()));
  EXPECT_FALSE(disk.store(keyFor("y"), sampleEntry()));
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("cannot write to the kernel cache"), std::string::npos) << err;
  EXPECT_EQ(err.find("cannot write", err.find("cannot write") + 1), std::string::npos) << "warned twice: " << err;
  EXPECT_EQ(stats().storeFailures, failures + 1);
  EXPECT_FALSE(disk.load(keyFor("x")));
}

TEST(DiskCache, ConfigurationFromTheEnvironment) {
  auto with = [](std::vector<std::pair<const char *, const char *>> vars) {
    for (const char *v : {"TESSERA_CACHE", "TESSERA_CACHE_DIR", "XDG_CACHE_HOME", "TESSERA_CACHE_MAX_BYTES",
                          "TESSERA_KEEP_STAGES"})
      ::unsetenv(v);
    for (auto [k, v] : vars) ::setenv(k, v, 1);
    return configFromEnvironment();
  };
  const char *home = std::getenv("HOME");
  std::string savedHome = home ? home : "";
  ::setenv("HOME", "/home/someone", 1);
  EXPECT_EQ(with({}).dir, "/home/someone/.cache/tessera");
  EXPECT_TRUE(with({}).enabled);
  EXPECT_EQ(with({}).maxBytes, 1ull << 30);
  EXPECT_EQ(with({{"XDG_CACHE_HOME", "/xdg"}}).dir, "/xdg/tessera");
  EXPECT_EQ(with({{"XDG_CACHE_HOME", "/xdg"}, {"TESSERA_CACHE_DIR", "/mine/"}}).dir, "/mine");
  EXPECT_FALSE(with({{"TESSERA_CACHE", "off"}}).enabled);
  EXPECT_TRUE(with({{"TESSERA_CACHE", "1"}}).enabled);
  EXPECT_EQ(with({{"TESSERA_CACHE_MAX_BYTES", "64M"}}).maxBytes, 64ull << 20);
  EXPECT_TRUE(with({{"TESSERA_KEEP_STAGES", "1"}}).keepStages);
  with({});
  if (home) ::setenv("HOME", savedHome.c_str(), 1);
}
