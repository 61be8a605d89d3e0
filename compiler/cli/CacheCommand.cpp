// `tessera cache` (the disk cache of runtime/Cache.h) and `tessera tune`
// (the autotuner's command line, which is Python: python -m tessera.tune).
//
//   tessera cache info            where the cache is, its cap, size, entries, versions
//   tessera cache list            one line per entry (most recently used first)
//   tessera cache verify          checks every entry; exit status 1 if any is corrupt
//   tessera cache clear [--all]   removes the compiled kernels (--all: tuning results too)
//   tessera tune ...              see `tessera tune --help`
#include "compiler/cli/CommandLine.h"
#include "compiler/cli/Locations.h"
#include "compiler/driver/Compiler.h"
#include "runtime/Cache.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <stdexcept>
#include <cstring>
#include <string>
#include <vector>

namespace {

const char *kCacheNotes = R"(The cache lives in $TESSERA_CACHE_DIR, else $XDG_CACHE_HOME/tessera, else
~/.cache/tessera. TESSERA_CACHE=off disables it; TESSERA_CACHE_MAX_BYTES caps
it (default 1G); TESSERA_KEEP_STAGES=1 keeps the IR, LLVM IR and PTX next to
each entry. See docs/runtime.md.)";

std::string humanBytes(uint64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

// "tessera: error: cannot read DIR/kernels: Permission denied" on stderr; exit status 1.
int reportProblem(const std::string &problem) {
  std::fflush(stdout);
  std::fprintf(stderr, "tessera: error: %s\n", problem.c_str());
  return 1;
}

std::string timeText(int64_t seconds) {
  std::time_t t = static_cast<std::time_t>(seconds);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", std::localtime(&t));
  return buf;
}

int cacheInfo(const tessera::cache::DiskCache &disk) {
  const tessera::cache::Config &c = disk.config();
  std::string problem;
  tessera::cache::Usage u = disk.usage(&problem);
  std::printf("directory:  %s\n", c.dir.empty() ? "(none: no HOME)" : c.dir.c_str());
  std::printf("enabled:    %s\n", c.enabled ? "yes" : "no (TESSERA_CACHE=off)");
  std::printf("size cap:   %s (%llu bytes)\n", humanBytes(c.maxBytes).c_str(),
              static_cast<unsigned long long>(c.maxBytes));
  std::printf("kernels:    %llu entries, %s\n", static_cast<unsigned long long>(u.entries), humanBytes(u.bytes).c_str());
  std::printf("autotuning: %llu results, %s\n", static_cast<unsigned long long>(u.tuningFiles),
              humanBytes(u.tuningBytes).c_str());
  std::printf("keep stages: %s\n", c.keepStages ? "yes" : "no");
  std::printf("compiler:   %s\n", tessera::cache::compilerFingerprint().c_str());
  return problem.empty() ? 0 : reportProblem(problem + " (the counts above leave it out)");
}

int cacheList(const tessera::cache::DiskCache &disk, bool verifyOnly) {
  int bad = 0;
  std::string problem;
  for (const tessera::cache::EntryInfo &i : disk.list(&problem)) {
    if (!i.entry) {
      ++bad;
      std::printf("%.12s  CORRUPT (%s)  %s\n", i.digest.c_str(), i.problem.c_str(), i.path.c_str());
      continue;
    }
    if (verifyOnly) continue;
    const tessera::cache::Entry &e = *i.entry;
    std::string cubins;
    for (const auto &[tag, bytes] : e.cubins) cubins += (cubins.empty() ? "" : ",") + tag;
    std::printf("%.12s  %-24s %-7s %-40s w%-2u %10s  %s  %s\n", i.digest.c_str(), e.kernelName.c_str(),
                e.arch.c_str(), e.signature.c_str(), e.numWarps, humanBytes(i.bytes).c_str(),
                timeText(i.lastUsed).c_str(), cubins.empty() ? "(ptx only)" : cubins.c_str());
  }
  if (!problem.empty()) return reportProblem(problem + (verifyOnly ? " (not verified)" : " (not listed)"));
  if (verifyOnly) std::printf("%s\n", bad ? "some entries are corrupt" : "every entry is intact");
  return bad ? 1 : 0;
}

// Each of `tessera cache info|list|verify` takes no options; clear takes --all.
int cacheCommand(const char *name, const char *about, int argc, char **argv,
                 int (*run)(const tessera::cache::DiskCache &)) {
  tessera::cli::Command command(std::string("tessera cache ") + name, "", about);
  command.notes(kCacheNotes);
  if (!command.parse(argc, argv)) return 0;
  tessera::cache::DiskCache disk;
  return run(disk);
}

int cacheClear(int argc, char **argv) {
  bool all = false;
  tessera::cli::Command command("tessera cache clear", "[--all]", "Removes the compiled kernels from the cache.");
  command.flag({"--all"}, "remove the autotuning results too", [&] { all = true; }).notes(kCacheNotes);
  if (!command.parse(argc, argv)) return 0;
  tessera::cache::DiskCache disk;
  std::string problem;
  uint64_t n = disk.clear(all, &problem);
  if (!problem.empty())
    return reportProblem(problem + "; the cache was not cleared (removed " + std::to_string(n) + " file" +
                         (n == 1 ? "" : "s") + ")");
  std::printf("removed %llu file%s from %s\n", static_cast<unsigned long long>(n), n == 1 ? "" : "s",
              disk.config().dir.c_str());
  return 0;
}

} // namespace

int commandCache(int argc, char **argv) {
  static const std::vector<tessera::cli::Subcommand> subcommands = {
      {"info", "", "the cache directory, its size cap and use, and the versions in its keys",
       [](int argc, char **argv) {
         return cacheCommand("info", "Prints where the cache is, its size cap and use, and the versions in its keys.",
                             argc, argv, cacheInfo);
       }},
      {"list", "", "one line per compiled kernel, most recently used first",
       [](int argc, char **argv) {
         return cacheCommand("list",
                             "Prints one line per compiled kernel, most recently used first:\n"
                             "DIGEST  KERNEL  ARCH  SIGNATURE  num_warps  SIZE  LAST-USED  CUBINS",
                             argc, argv, [](const tessera::cache::DiskCache &d) { return cacheList(d, false); });
       }},
      {"verify", "", "reads every entry back; prints the corrupt ones and exits 1 if any",
       [](int argc, char **argv) {
         return cacheCommand("verify", "Reads every entry back; prints the corrupt ones and exits 1 if any.", argc,
                             argv, [](const tessera::cache::DiskCache &d) { return cacheList(d, true); });
       }},
      {"clear", "[--all]", "removes the compiled kernels; --all removes the autotuning results too", cacheClear},
  };
  return tessera::cli::dispatch("tessera cache", subcommands, kCacheNotes, argc, argv);
}

// The tuner needs Python (kernels are launched with torch tensors): run
// `python3 -m tessera.tune ARGS`. From a build tree: with this checkout's
// python/ on PYTHONPATH and this build's directory as TESSERA_BUILD_DIR, so
// that the matching extension is found. From a wheel (tessera/bin/tessera):
// as it is, with the interpreter the `tessera` entry point names in
// TESSERA_PYTHON, whose site-packages hold this package.
int commandTune(int argc, char **argv) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path exe = tessera::cli::executablePath();
  if (!tessera::cli::runsFromPythonPackage()) {
    if (!exe.empty() && !std::getenv("TESSERA_BUILD_DIR"))
      ::setenv("TESSERA_BUILD_DIR", exe.parent_path().parent_path().c_str(), 1);
#ifdef TESSERA_SOURCE_DIR
    fs::path python = fs::path(TESSERA_SOURCE_DIR) / "python";
    if (fs::exists(python / "tessera" / "tune.py", ec)) {
      std::string path = python.string();
      if (const char *old = std::getenv("PYTHONPATH"); old && *old) path += ":" + std::string(old);
      ::setenv("PYTHONPATH", path.c_str(), 1);
    }
#endif
  }
  // The directory the C++ side resolved, so that both sides agree.
  tessera::cache::Config config = tessera::cache::configFromEnvironment();
  if (!config.dir.empty() && !std::getenv("TESSERA_CACHE_DIR")) ::setenv("TESSERA_CACHE_DIR", config.dir.c_str(), 1);
  const char *interpreter = std::getenv("TESSERA_PYTHON");
  if (!interpreter || !*interpreter) interpreter = "python3";
  std::vector<char *> args = {const_cast<char *>(interpreter), const_cast<char *>("-m"),
                              const_cast<char *>("tessera.tune")};
  for (int i = 0; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  std::fflush(stdout);
  ::execvp(interpreter, args.data());
  std::fprintf(stderr, "tessera: error: 'tessera tune' runs `%s -m tessera.tune`, which could not be started (%s); "
                       "set TESSERA_PYTHON to a Python with tessera installed\n",
               interpreter, std::strerror(errno));
  return 1;
}
