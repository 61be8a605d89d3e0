// The on-disk kernel cache: compiled kernels (PTX, metadata and the cubins
// linked from it, one per device architecture and driver) stored one file
// per key, so that a new process skips parsing, compiling and the PTX JIT.
// docs/runtime.md describes the format, the key and the variables:
//
//   TESSERA_CACHE=off            no disk cache (the in-memory one stays)
//   TESSERA_CACHE_DIR=DIR        default $XDG_CACHE_HOME/tessera, else ~/.cache/tessera
//   TESSERA_CACHE_MAX_BYTES=N    size cap (K/M/G suffixes), default 1G; least recently used go first
//   TESSERA_KEEP_STAGES=1        also write the IR, optimised IR, LLVM IR and PTX next to each entry
//
// Safe with many threads and processes at once: entries are written to a
// temporary file and renamed into place, readers see an old or a new entry,
// never a partial one. A corrupt or truncated entry fails its checksum, is
// reported once on stderr, removed and rebuilt. A directory that cannot be
// written is reported once; tessera then compiles without storing. The size
// cap is kept through a running total in DIR/kernels.usage (see store()).
//
// The environment is read on every cache operation (they only happen on an
// in-memory miss), so tests and tools may change it at run time.
#pragma once

#include "compiler/driver/Compiler.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::cache {

struct Config {
  bool enabled = true;
  std::string dir;                 // the cache root: DIR/kernels, DIR/autotune
  uint64_t maxBytes = 1ull << 30;  // cap on DIR/kernels
  bool keepStages = false;
};

// From the environment (see above). `enabled` is false for TESSERA_CACHE=off
// and when no directory can be named (no HOME and no XDG_CACHE_HOME).
Config configFromEnvironment();

// Parses "1048576", "512K", "64M", "1G" (powers of 1024); nullopt otherwise.
std::optional<uint64_t> parseByteSize(std::string_view text);

// The compiler's part of every key: "tessera 0.1.0 (build <GNU build-id of
// libtessera.so>), LLVM 19.1.7". Computed once per process. (makeKey adds
// libdevice's path, size and mtime, read on each call.)
const std::string &compilerFingerprint();
// The GNU build-id of libtessera.so (hex), or "<size>-<mtime>" of the file
// when it has none. Changes with every rebuild of the library.
const std::string &buildId();

// The BLAKE3-256 of `data` in hex: what keys and names entries (tessera/_source_cache.py's
// too). A cryptographic hash, like the SHA-256 it replaced, but 20 times as fast as LLVM's
// SHA-256 (17 vs 370 us for a 10 KB kernel file here): a warm start hashes the kernel's source.
std::string digestHex(std::string_view data);

// A cache key: `text` lists every input (the source as its digest), one per
// line; `digest` is the digest of `text` in hex and names the entry's file.
struct Key {
  std::string text;
  std::string digest;
  explicit operator bool() const { return !digest.empty(); }
};

// The key of compiling `kernelName` of `source` (the exact text handed to
// the compiler; its path and first line are not part of it) with this
// signature, these constexprs and options. Empty (operator bool false) when
// the compile must not be cached: TESSERA_DUMP_IR is set (the dumps are what
// the user wants) or options.stopAfterPass is set.
Key makeKey(std::string_view source, const std::string &kernelName,
            const std::vector<ArgSpec> &signature,
            const std::map<std::string, ConstexprValue> &constexprs, const CompileOptions &options);
// The same with `resolved` = resolveOptions(options) already read.
Key makeKey(std::string_view source, const std::string &kernelName,
            const std::vector<ArgSpec> &signature,
            const std::map<std::string, ConstexprValue> &constexprs, const CompileOptions &options,
            const ResolvedOptions &resolved);

// "*fp32:16,i32,i64:1" (the key's spelling of a signature).
std::string signatureKey(const std::vector<ArgSpec> &signature);

// One entry: the kernel's PTX and launch metadata, plus the cubins linked
// from it so far, each tagged with what the PTX JIT's output depends on.
struct Entry {
  std::string key;         // Key::text, checked on load
  std::string kernelName;
  std::string arch;        // what the PTX targets
  std::string signature;   // signatureKey
  unsigned numWarps = 4;
  unsigned numStages = 3;
  unsigned sharedBytes = 0;
  std::string ptx;
  std::vector<std::pair<std::string, std::string>> cubins; // cubinTag -> bytes
  const std::string *cubin(std::string_view tag) const;
  void setCubin(const std::string &tag, std::string bytes);
};

// "sm_90/cuda13000" or "sm_90/ptxas13.0.88": the device's compute capability and
// what turned the PTX into SASS (the driver's cuLink JIT, or a ptxas), with its version.
std::string cubinTag(const std::string &deviceArch, const std::string &compiler);

// The file format (docs/runtime.md): a 32-byte header (magic, format
// version, body size, xxh3-64 of the body) and named sections.
std::string encode(const Entry &entry);
// nullopt, with the reason in *why, when the bytes are not a whole, intact entry.
std::optional<Entry> decode(std::string_view bytes, std::string *why = nullptr);

// The stages kept with TESSERA_KEEP_STAGES=1, written next to the entry.
struct Stages {
  std::string ir, irOpt, llvmIR, ptx;
  std::string cuda; // the NVRTC back-end's CUDA C++ (.cu)
};

struct EntryInfo {
  std::string path;
  std::string digest;
  uint64_t bytes = 0;       // the entry and its stage files
  int64_t lastUsed = 0;     // mtime, seconds since the epoch
  std::optional<Entry> entry; // nullopt when corrupt (then `problem` says why)
  std::string problem;
};

struct Usage {
  uint64_t entries = 0;
  uint64_t bytes = 0;       // DIR/kernels
  uint64_t tuningFiles = 0; // DIR/autotune/*.json
  uint64_t tuningBytes = 0;
};

// Process-wide counters, for tests and `TESSERA_CACHE_STATS`.
struct Stats {
  uint64_t hits = 0, misses = 0, stores = 0, corrupt = 0, storeFailures = 0, evictions = 0;
  uint64_t sweeps = 0; // walks of DIR/kernels by store (the running total passed the cap, or was unknown)
};
Stats stats();

// The operations on one cache directory (stateless; cheap to construct).
class DiskCache {
public:
  explicit DiskCache(Config config = configFromEnvironment());
  const Config &config() const { return config_; }
  bool enabled() const { return config_.enabled; }

  std::string entryPath(const Key &key) const; // DIR/kernels/<2 hex>/<digest>.tsc

  // The entry for `key`, refreshing its last-used time. A corrupt entry is
  // reported (once per path and process), removed, and reads as a miss.
  std::optional<Entry> load(const Key &key);
  // Writes `entry` atomically (and `stages` when keepStages) and adds the
  // bytes it changed to the running total in DIR/kernels.usage (under a
  // flock). Only when that total passes the cap (or is missing) does it walk
  // DIR/kernels, evicting least recently used entries down to 90% of the cap
  // and writing the exact total back, so a store costs a few syscalls, not a
  // stat per entry. False when nothing was stored (the first failure for a
  // directory is reported once).
  bool store(const Key &key, const Entry &entry, const Stages *stages = nullptr);

  // Every entry, decoded. A directory that cannot be read is named in
  // *error (when given; the other entries are still listed).
  std::vector<EntryInfo> list(std::string *error = nullptr) const;
  Usage usage(std::string *error = nullptr) const;
  // Removes entries (and stage files) least recently used first until
  // DIR/kernels holds at most maxBytes; also stale temporary files.
  uint64_t evict(uint64_t maxBytes);
  // Removes every entry; with `tuning` the autotuning results too. Returns
  // the files removed; the first file or directory that could not be read
  // or removed goes to *error ("cannot remove PATH: Permission denied").
  uint64_t clear(bool tuning, std::string *error = nullptr);

  // Writes each (path, bytes) atomically and adds the bytes they change to
  // the running total of DIR/kernels, sweeping when it passes the cap.
  // store() calls it; so does whatever else writes there
  // (python/tessera/_source_cache.py). False (errno kept) when a file could
  // not be written.
  bool writeFiles(const std::vector<std::pair<std::string, std::string>> &files);

private:
  Config config_;
};

// A kernel's source entry (python/tessera/_source_cache.py), read in one call (a warm start's
// first step): DIR/kernels/<2 hex>/<digest>.src, the digest that of a line "<file name> <size>
// <mtime in ns>" per file of `ruleFiles` (the reduction's rules, stat'ed, not read), then `head`,
// then the bytes of the kernel's file `sourcePath`. `bytes` is nullopt when the entry is not there;
// a found entry's last-used time is refreshed (LRU eviction). nullopt: the cache is off, or a rule
// file or the kernel's file is unreadable (or empty).
struct SourceEntry {
  std::string path;
  std::optional<std::string> bytes;
};
std::optional<SourceEntry> readSourceEntry(const std::string &sourcePath, std::string_view head,
                                           const std::vector<std::string> &ruleFiles);

// Writes `bytes` to `path` through a temporary file in the same directory
// and rename(2), creating directories. False (errno kept) on failure.
bool writeFileAtomically(const std::string &path, std::string_view bytes);
// The temporary file of writeFileAtomically, not yet renamed ("" and errno on failure).
std::string writeTemporaryFile(const std::string &path, std::string_view bytes);

// One warning line on stderr ("tessera: warning: ...") per distinct `once` key per process.
void warnOnce(const std::string &once, const std::string &message);

} // namespace tessera::cache
