// The on-disk kernel cache (Cache.h; format and key in docs/runtime.md).
#include "runtime/Cache.h"

#include "compiler/codegen/Nvrtc.h"
#include "compiler/support/Environment.h"
#include "runtime/StepTimes.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/Support/BLAKE3.h>
#include <llvm/Support/xxhash.h>

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

namespace tessera::cache {

namespace fs = std::filesystem;

// A new CompileOptions field changes the generated code: it must be added to
// makeKey below (and then this size updated).
struct CompileOptionsFieldsInTheKey { unsigned numWarps, numStages; std::string arch, stopAfterPass; bool debug; int tensorCores; std::string backend; int fpFusion; unsigned maxRegisters; };
static_assert(sizeof(CompileOptions) == sizeof(CompileOptionsFieldsInTheKey),
              "CompileOptions changed: add the new field to the cache key in runtime/Cache.cpp");
// Likewise for what the environment decides (compareRuns, a benchmark switch, is left out on purpose).
struct ResolvedOptionsFieldsInTheKey { bool debug, tensorCores, fpFusion; std::string backend; bool wgmma, dumpIR, compareRuns; std::string libdevicePath; };
static_assert(sizeof(ResolvedOptions) == sizeof(ResolvedOptionsFieldsInTheKey),
              "ResolvedOptions changed: add the new field to the cache key in runtime/Cache.cpp");

namespace {

constexpr char kMagic[8] = {'T', 'S', 'R', 'C', 'A', 'C', 'H', 'E'};
constexpr uint32_t kFormat = 1;
constexpr size_t kHeaderBytes = 32; // magic, format, section count, body bytes, checksum
constexpr const char *kEntrySuffix = ".tsc";

struct Counters {
  std::atomic<uint64_t> hits{0}, misses{0}, stores{0}, corrupt{0}, storeFailures{0}, evictions{0}, sweeps{0};
};
Counters &counters() {
  static Counters c;
  return c;
}

std::mutex &unwritableMutex() {
  static std::mutex m;
  return m;
}
std::set<std::string> &unwritableDirs() { // directories a store already failed in
  static std::set<std::string> dirs;
  return dirs;
}

using env::truthy;

std::string hex(const uint8_t *bytes, size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = digits[bytes[i] >> 4];
    out[2 * i + 1] = digits[bytes[i] & 15];
  }
  return out;
}

uint64_t checksum(std::string_view body) { return llvm::xxh3_64bits(llvm::StringRef(body.data(), body.size())); }

template <typename T> void put(std::string &out, T value) {
  out.append(reinterpret_cast<const char *>(&value), sizeof value); // little-endian hosts only (x86-64, aarch64)
}
template <typename T> bool get(std::string_view &in, T &value) {
  if (in.size() < sizeof value) return false;
  std::memcpy(&value, in.data(), sizeof value);
  in.remove_prefix(sizeof value);
  return true;
}

void putSection(std::string &out, std::string_view name, std::string_view data) {
  put<uint32_t>(out, static_cast<uint32_t>(name.size()));
  out += name;
  put<uint64_t>(out, data.size());
  out += data;
}

std::string escapeLine(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string constexprKey(const ConstexprValue &v) {
  switch (v.kind) {
  case ConstexprValue::Kind::Int: return "int " + constIntToString(v.intValue);
  case ConstexprValue::Kind::Bool: return v.intValue ? "bool True" : "bool False";
  case ConstexprValue::Kind::None: return "None";
  case ConstexprValue::Kind::DType: return "dtype " + v.stringValue;
  case ConstexprValue::Kind::Enum: return "enum " + v.stringValue;
  case ConstexprValue::Kind::Tuple: {
    std::string out = "tuple " + std::to_string(v.elems.size()) + " (";
    for (size_t i = 0; i < v.elems.size(); ++i)
      out += (i < v.fields.size() ? "field " + v.fields[i] + " " : std::string()) + constexprKey(v.elems[i]) + "; ";
    return out + ")";
  }
  case ConstexprValue::Kind::Runtime: return "runtime"; // its type is a signature entry
  case ConstexprValue::Kind::String:
    return "str " + std::to_string(v.stringValue.size()) + " " + escapeLine(v.stringValue);
  case ConstexprValue::Kind::Float: {
    char buf[64];
    std::snprintf(buf, sizeof buf, "float %a", v.floatValue); // exact bits
    return buf;
  }
  }
  return "?";
}

// The object file this code is in: libtessera.so.
std::string ownLibraryPath(const void **base) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void *>(&ownLibraryPath), &info) && info.dli_fname) {
    *base = info.dli_fbase;
    return info.dli_fname;
  }
  *base = nullptr;
  return {};
}

struct BuildIdSearch {
  const void *base = nullptr;
  std::string id;
};

int findBuildId(struct dl_phdr_info *info, size_t, void *data) {
  auto *search = static_cast<BuildIdSearch *>(data);
  bool ours = false;
  for (int i = 0; i < info->dlpi_phnum && !ours; ++i)
    if (info->dlpi_phdr[i].p_type == PT_LOAD &&
        reinterpret_cast<const void *>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr - info->dlpi_phdr[i].p_offset) ==
            search->base)
      ours = true;
  if (!ours && reinterpret_cast<const void *>(info->dlpi_addr) != search->base) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const char *p = reinterpret_cast<const char *>(info->dlpi_addr + ph.p_vaddr);
    const char *end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      auto *note = reinterpret_cast<const ElfW(Nhdr) *>(p);
      const char *name = p + sizeof(ElfW(Nhdr));
      const char *desc = name + ((note->n_namesz + 3) & ~3u);
      if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0 &&
          desc + note->n_descsz <= end) {
        search->id = hex(reinterpret_cast<const uint8_t *>(desc), note->n_descsz);
        return 1;
      }
      p = desc + ((note->n_descsz + 3) & ~3u);
    }
  }
  return 1; // our object, without a build-id
}

std::string fileStamp(const std::string &path) {
  struct stat st{};
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return "absent";
  return std::to_string(st.st_size) + "-" + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec);
}

bool readWholeFile(int fd, std::string &out) {
  struct stat st{};
  if (::fstat(fd, &st) != 0) return false;
  out.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::read(fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  out.resize(done); // a file that shrank underneath us reads as truncated
  return true;
}

std::string stemOf(const fs::path &p) { // "<digest>" of "<digest>.tsc", "<digest>.ir", "<digest>.tsc.tmp.…"
  std::string name = p.filename().string();
  return name.substr(0, name.find('.'));
}

std::string kernelsDir(const Config &c) { return c.dir + "/kernels"; }
// The running total of DIR/kernels' bytes ("<bytes>\n"), and the flock that
// serialises its updates and the sweeps between processes.
std::string usagePath(const Config &c) { return c.dir + "/kernels.usage"; }

} // namespace

std::string digestHex(std::string_view data) {
  auto digest = llvm::BLAKE3::hash<32>(
      llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(data.data()), data.size()));
  return hex(digest.data(), digest.size());
}

// ------------------------------------------------------------ configuration

std::optional<uint64_t> parseByteSize(std::string_view text) {
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  uint64_t scale = 1;
  if (!text.empty()) {
    char s = static_cast<char>(std::toupper(static_cast<unsigned char>(text.back())));
    if (s == 'B') { text.remove_suffix(1); s = text.empty() ? 0 : static_cast<char>(std::toupper(static_cast<unsigned char>(text.back()))); }
    if (s == 'K') scale = 1ull << 10;
    else if (s == 'M') scale = 1ull << 20;
    else if (s == 'G') scale = 1ull << 30;
    else if (s == 'T') scale = 1ull << 40;
    if (scale != 1) text.remove_suffix(1);
  }
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (value > UINT64_MAX / scale) return std::nullopt;
  return value * scale;
}

Config configFromEnvironment() {
  Config c;
  if (const char *mode = std::getenv("TESSERA_CACHE"); mode && *mode && !truthy(mode)) c.enabled = false;
  if (const char *dir = std::getenv("TESSERA_CACHE_DIR"); dir && *dir) {
    c.dir = dir;
  } else if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg == '/') {
    c.dir = std::string(xdg) + "/tessera";
  } else {
    const char *home = std::getenv("HOME");
    if (!home || !*home)
      if (struct passwd *pw = ::getpwuid(::getuid())) home = pw->pw_dir;
    if (home && *home) c.dir = std::string(home) + "/.cache/tessera";
    else c.enabled = false;
  }
  while (c.dir.size() > 1 && c.dir.back() == '/') c.dir.pop_back();
  if (const char *cap = std::getenv("TESSERA_CACHE_MAX_BYTES"); cap && *cap) {
    if (auto bytes = parseByteSize(cap)) c.maxBytes = *bytes;
    else
      warnOnce(std::string("max-bytes:") + cap,
               std::string("TESSERA_CACHE_MAX_BYTES='") + cap +
                   "' is not a size (e.g. 1073741824, 512M, 2G); using 1G");
  }
  c.keepStages = truthy(std::getenv("TESSERA_KEEP_STAGES"));
  return c;
}

const std::string &buildId() {
  static const std::string id = [] {
    BuildIdSearch search;
    std::string path = ownLibraryPath(&search.base);
    if (search.base) dl_iterate_phdr(&findBuildId, &search);
    return search.id.empty() ? fileStamp(path) : search.id;
  }();
  return id;
}

const std::string &compilerFingerprint() {
  static const std::string text = "tessera " + std::string(TESSERA_VERSION) + " (build " + buildId() +
                                  "), LLVM " + TESSERA_LLVM_VERSION;
  return text;
}

// ------------------------------------------------------------------ keys

std::string signatureKey(const std::vector<ArgSpec> &signature) {
  std::string out;
  for (const ArgSpec &a : signature) {
    if (!out.empty()) out += ',';
    if (a.type.isTensorDesc()) { // tensordesc<bf16[128,64]>: the element type and the block shape
      out += "tensordesc<";
      out += ir::name(a.type.scalar);
      for (size_t i = 0; i < a.type.descBlock.size(); ++i)
        out += (i ? "," : "[") + std::to_string(a.type.descBlock[i]);
      out += "]>";
      continue;
    }
    if (a.type.pointer) out += '*';
    out += ir::name(a.type.scalar);
    if (a.equalsOne) out += ":1";
    else if (a.divisibility == 16) out += ":16";
  }
  return out;
}

Key makeKey(std::string_view source, const std::string &kernelName, const std::vector<ArgSpec> &signature,
            const std::map<std::string, ConstexprValue> &constexprs, const CompileOptions &options) {
  return makeKey(source, kernelName, signature, constexprs, options, resolveOptions(options));
}

Key makeKey(std::string_view source, const std::string &kernelName, const std::vector<ArgSpec> &signature,
            const std::map<std::string, ConstexprValue> &constexprs, const CompileOptions &options,
            const ResolvedOptions &resolved) {
  if (!options.stopAfterPass.empty() || resolved.dumpIR) return {};
  const std::string &libdevice = resolved.libdevicePath;
  Key key;
  std::string &t = key.text;
  t.reserve(512);
  t += "tessera kernel cache key, format " + std::to_string(kFormat) + "\n";
  t += "compiler: " + compilerFingerprint() + "\n";
  t += "libdevice: " + escapeLine(libdevice) + " " + fileStamp(libdevice) + "\n";
  t += "kernel: " + escapeLine(kernelName) + "\n";
  t += "source-blake3: " + digestHex(source) + "\n";
  t += "signature: " + signatureKey(signature) + "\n";
  for (const auto &[name, value] : constexprs) t += "constexpr " + escapeLine(name) + ": " + constexprKey(value) + "\n";
  t += "num_warps: " + std::to_string(options.numWarps) + "\n";
  t += "num_stages: " + std::to_string(options.numStages) + "\n";
  t += "arch: " + escapeLine(options.arch) + "\n";
  t += "maxnreg: " + std::to_string(options.maxRegisters) + "\n";
  // What the environment decided with the options (ResolvedOptions): device-side asserts,
  // tensor cores, contraction, Hopper's wgmma, the back-end (and NVRTC's version).
  t += std::string("debug: ") + (resolved.debug ? "1" : "0") + "\n";
  t += std::string("tensor_cores: ") + (resolved.tensorCores ? "1" : "0") + "\n";
  t += std::string("fp_fusion: ") + (resolved.fpFusion ? "1" : "0") + "\n";
  t += std::string("wgmma: ") + (resolved.wgmma ? "1" : "0") + "\n";
  if (!resolved.fp8RegisterA) t += "fp8_register_a: 0\n"; // TESSERA_WGMMA_FP8_REGISTER_A=0 (default keys unchanged)
  const std::string &backend = resolved.backend;
  t += "backend: " + backend;
  if (backend == "nvrtc") {
    const codegen::NvrtcStatus &nvrtc = codegen::nvrtcStatus();
    t += " " + std::to_string(nvrtc.major) + "." + std::to_string(nvrtc.minor);
  }
  t += "\n";
  key.digest = digestHex(t);
  return key;
}

std::string cubinTag(const std::string &deviceArch, const std::string &compiler) {
  return deviceArch + "/" + compiler;
}

// --------------------------------------------------------------- entries

const std::string *Entry::cubin(std::string_view tag) const {
  for (const auto &[t, bytes] : cubins)
    if (t == tag) return &bytes;
  return nullptr;
}

void Entry::setCubin(const std::string &tag, std::string bytes) {
  for (auto &[t, b] : cubins)
    if (t == tag) {
      b = std::move(bytes);
      return;
    }
  cubins.emplace_back(tag, std::move(bytes));
}

std::string encode(const Entry &e) {
  std::string meta = "kernel=" + escapeLine(e.kernelName) + "\narch=" + e.arch + "\nsignature=" + e.signature +
                     "\nnum_warps=" + std::to_string(e.numWarps) + "\nnum_stages=" + std::to_string(e.numStages) +
                     "\nshared=" + std::to_string(e.sharedBytes) + "\ncreated=" + std::to_string(std::time(nullptr)) +
                     "\n";
  std::string body;
  body.reserve(e.key.size() + meta.size() + e.ptx.size() + 64);
  putSection(body, "key", e.key);
  putSection(body, "meta", meta);
  putSection(body, "ptx", e.ptx);
  for (const auto &[tag, bytes] : e.cubins) {
    body.reserve(body.size() + bytes.size() + tag.size() + 32);
    putSection(body, "cubin/" + tag, bytes);
  }
  std::string out(kMagic, sizeof kMagic);
  out.reserve(kHeaderBytes + body.size());
  put<uint32_t>(out, kFormat);
  put<uint32_t>(out, static_cast<uint32_t>(3 + e.cubins.size()));
  put<uint64_t>(out, body.size());
  put<uint64_t>(out, checksum(body));
  out += body;
  return out;
}

std::optional<Entry> decode(std::string_view bytes, std::string *why) {
  auto fail = [&](std::string reason) -> std::optional<Entry> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  if (bytes.size() < kHeaderBytes)
    return fail("truncated: " + std::to_string(bytes.size()) + " bytes, shorter than the header");
  if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) return fail("not a tessera cache entry (bad magic)");
  std::string_view in = bytes.substr(sizeof kMagic);
  uint32_t format = 0, sections = 0;
  uint64_t bodyBytes = 0, sum = 0;
  get(in, format), get(in, sections), get(in, bodyBytes), get(in, sum);
  if (format != kFormat) return fail("unknown format version " + std::to_string(format));
  if (in.size() < bodyBytes)
    return fail("truncated: " + std::to_string(bytes.size()) + " of " + std::to_string(kHeaderBytes + bodyBytes) +
                " bytes");
  if (in.size() > bodyBytes) return fail("trailing bytes after the entry");
  if (checksum(in) != sum) return fail("checksum mismatch");

  Entry e;
  bool haveKey = false, haveMeta = false, havePtx = false;
  for (uint32_t s = 0; s < sections; ++s) {
    uint32_t nameBytes = 0;
    uint64_t dataBytes = 0;
    if (!get(in, nameBytes) || in.size() < nameBytes) return fail("malformed section header");
    std::string_view name = in.substr(0, nameBytes);
    in.remove_prefix(nameBytes);
    if (!get(in, dataBytes) || in.size() < dataBytes) return fail("malformed section");
    std::string_view data = in.substr(0, dataBytes);
    in.remove_prefix(dataBytes);
    if (name == "key") e.key = data, haveKey = true;
    else if (name == "ptx") e.ptx = data, havePtx = true;
    else if (name.starts_with("cubin/")) e.cubins.emplace_back(std::string(name.substr(6)), std::string(data));
    else if (name == "meta") {
      haveMeta = true;
      while (!data.empty()) {
        size_t eol = data.find('\n');
        std::string_view line = data.substr(0, eol);
        data = eol == std::string_view::npos ? std::string_view() : data.substr(eol + 1);
        size_t eq = line.find('=');
        if (eq == std::string_view::npos) continue;
        std::string_view k = line.substr(0, eq), v = line.substr(eq + 1);
        auto number = [&](unsigned &out) { std::from_chars(v.data(), v.data() + v.size(), out); };
        if (k == "kernel") e.kernelName = v;
        else if (k == "arch") e.arch = v;
        else if (k == "signature") e.signature = v;
        else if (k == "num_warps") number(e.numWarps);
        else if (k == "num_stages") number(e.numStages);
        else if (k == "shared") number(e.sharedBytes);
      }
    } // unknown sections: ignored (room to grow within a format)
  }
  if (!in.empty()) return fail("trailing bytes after the last section");
  if (!haveKey || !haveMeta || !havePtx) return fail("a section (key, meta or ptx) is missing");
  return e;
}

// ------------------------------------------------------------- the files

void warnOnce(const std::string &once, const std::string &message) {
  static std::mutex mutex;
  static std::set<std::string> said;
  std::lock_guard lock(mutex);
  if (said.insert(once).second) std::fprintf(stderr, "tessera: warning: %s\n", message.c_str());
}

std::string writeTemporaryFile(const std::string &path, std::string_view bytes) {
  static std::atomic<uint64_t> counter{0};
  fs::path target(path);
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::error_code ec;
    fs::create_directories(target.parent_path(), ec);
    const int mkdirError = ec ? ec.value() : 0;
    std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." +
                      std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id()) % 1000000) + "." +
                      std::to_string(counter.fetch_add(1));
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
      if (errno == ENOENT && !mkdirError) continue; // the directory vanished (a concurrent clear): once more
      if (errno == ENOENT) errno = mkdirError;       // why it is missing: EACCES, EROFS, ...
      return {};
    }
    size_t done = 0;
    bool ok = true;
    while (done < bytes.size()) {
      ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) { ok = false; break; }
      done += static_cast<size_t>(n);
    }
    int saved = errno;
    if (::close(fd) != 0 && ok) ok = false, saved = errno;
    if (ok) return tmp;
    ::unlink(tmp.c_str());
    errno = saved;
    return {};
  }
  return {};
}

bool writeFileAtomically(const std::string &path, std::string_view bytes) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::string tmp = writeTemporaryFile(path, bytes);
    if (tmp.empty()) return false;
    if (::rename(tmp.c_str(), path.c_str()) == 0) return true;
    int saved = errno;
    ::unlink(tmp.c_str());
    errno = saved;
    if (saved != ENOENT) return false; // ENOENT: a concurrent clear removed the directory; once more
  }
  return false;
}

Stats stats() {
  Counters &c = counters();
  return Stats{c.hits.load(), c.misses.load(), c.stores.load(), c.corrupt.load(), c.storeFailures.load(),
               c.evictions.load(), c.sweeps.load()};
}

DiskCache::DiskCache(Config config) : config_(std::move(config)) {}

std::string DiskCache::entryPath(const Key &key) const {
  return kernelsDir(config_) + "/" + key.digest.substr(0, 2) + "/" + key.digest + kEntrySuffix;
}

std::optional<Entry> DiskCache::load(const Key &key) {
  if (!config_.enabled || !key) return std::nullopt;
  const std::string path = entryPath(key);
  rt::StepTimer reading(rt::Step::EntryRead);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    counters().misses++;
    return std::nullopt;
  }
  std::string bytes;
  bool read = readWholeFile(fd, bytes);
  (void)::futimens(fd, nullptr); // last used: now (LRU eviction); fails harmlessly when read-only
  ::close(fd);
  reading.stop();
  std::string why;
  rt::StepTimer decoding(rt::Step::EntryDecode);
  std::optional<Entry> entry = read ? decode(bytes, &why) : std::nullopt;
  decoding.stop();
  if (!read) why = std::string("unreadable (") + std::strerror(errno) + ")";
  else if (entry && entry->key != key.text) entry.reset(), why = "it holds another key";
  if (!entry) {
    counters().corrupt++;
    counters().misses++;
    warnOnce("corrupt:" + path, "kernel cache entry " + path + " is corrupt (" + why +
                                    "); removing it and compiling the kernel again");
    ::unlink(path.c_str());
    return std::nullopt;
  }
  counters().hits++;
  return entry;
}

std::optional<SourceEntry> readSourceEntry(const std::string &sourcePath, std::string_view head,
                                           const std::vector<std::string> &ruleFiles) {
  const Config config = configFromEnvironment();
  if (!config.enabled) return std::nullopt;
  std::string text;
  for (const std::string &rule : ruleFiles) {
    struct stat st{};
    if (::stat(rule.c_str(), &st) != 0) return std::nullopt;
    const uint64_t mtimeNs = static_cast<uint64_t>(st.st_mtim.tv_sec) * 1000000000ull + st.st_mtim.tv_nsec;
    const size_t slash = rule.rfind('/'); // its name (not std::filesystem: its first use costs a warm start ~50 us)
    text.append(rule, slash == std::string::npos ? 0 : slash + 1);
    text += " " + std::to_string(st.st_size) + " " + std::to_string(mtimeNs) + "\n";
  }
  text += head;
  {
    const int fd = ::open(sourcePath.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    std::string source;
    const bool read = readWholeFile(fd, source);
    ::close(fd);
    if (!read || source.empty()) return std::nullopt;
    text += source;
  }
  const std::string digest = digestHex(text);
  SourceEntry out;
  out.path = kernelsDir(config) + "/" + digest.substr(0, 2) + "/" + digest + ".src";
  const int fd = ::open(out.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  std::string bytes;
  if (readWholeFile(fd, bytes)) out.bytes = std::move(bytes);
  (void)::futimens(fd, nullptr); // last used: now; fails harmlessly when read-only
  ::close(fd);
  return out;
}

bool DiskCache::store(const Key &key, const Entry &entry, const Stages *stages) {
  if (!config_.enabled || !key) return false;
  {
    std::lock_guard lock(unwritableMutex());
    if (unwritableDirs().count(config_.dir)) return false;
  }
  const std::string path = entryPath(key);
  std::vector<std::pair<std::string, std::string>> files = {{path, encode(entry)}};
  if (stages && config_.keepStages) {
    std::string stem = path.substr(0, path.size() - std::strlen(kEntrySuffix));
    const std::pair<const char *, const std::string *> stageFiles[] = {
        {".ir", &stages->ir}, {".ir-opt", &stages->irOpt}, {".ll", &stages->llvmIR}, {".ptx", &stages->ptx},
        {".cu", &stages->cuda}};
    for (const auto &[suffix, text] : stageFiles)
      if (!text->empty()) files.emplace_back(stem + suffix, *text);
  }
  bool ok = writeFiles(files);
  if (!ok) {
    int err = errno;
    counters().storeFailures++;
    {
      std::lock_guard lock(unwritableMutex());
      unwritableDirs().insert(config_.dir);
    }
    warnOnce("unwritable:" + config_.dir,
             "cannot write to the kernel cache in " + config_.dir + " (" + std::strerror(err) +
                 "); compiling without caching. Set TESSERA_CACHE_DIR to a writable directory, or "
                 "TESSERA_CACHE=off");
    return false;
  }
  counters().stores++;
  return true;
}

namespace {

struct Group { // one entry and its stage files
  std::vector<fs::path> files;
  uint64_t bytes = 0;
  int64_t lastUsed = 0;
  bool hasEntry = false;
};

// Every file under DIR/kernels, grouped by digest; stale temporary files
// (older than ten minutes: their writer died) are removed on the way.
std::map<std::string, Group> scan(const Config &config, uint64_t *removedTmp, std::string *error = nullptr) {
  std::map<std::string, Group> groups;
  const int64_t now = std::time(nullptr);
  auto addFile = [&](const fs::path &path) {
    struct stat st{};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;
    std::string name = path.filename().string();
    if (name.find(".tmp.") != std::string::npos) {
      if (now - st.st_mtim.tv_sec > 600 && ::unlink(path.c_str()) == 0 && removedTmp) ++*removedTmp;
      return;
    }
    Group &g = groups[stemOf(path)];
    g.files.push_back(path);
    g.bytes += static_cast<uint64_t>(st.st_size);
    if (name.ends_with(kEntrySuffix)) {
      g.hasEntry = true;
      g.lastUsed = st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
    } else if (!g.hasEntry) {
      g.lastUsed = std::max<int64_t>(g.lastUsed, st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec);
    }
  };
  // DIR/kernels/<2 hex>/files. A directory that cannot be read is skipped
  // (the rest is still counted) and the first one named in *error; a missing
  // one is an empty cache or a concurrent clear.
  auto walk = [&](const fs::path &dir, auto &&visit) {
    std::error_code ec;
    fs::directory_iterator it(dir, ec), end;
    for (; !ec && it != end; it.increment(ec)) visit(it->path());
    if (ec && ec != std::errc::no_such_file_or_directory && error && error->empty())
      *error = "cannot read " + dir.string() + ": " + ec.message();
  };
  walk(kernelsDir(config), [&](const fs::path &path) {
    std::error_code ec;
    if (fs::is_directory(fs::symlink_status(path, ec))) walk(path, addFile);
    else addFile(path);
  });
  return groups;
}

// Evicts least recently used groups, if the total passes `trigger`, until
// it is at most `target`; the total left goes to *left.
uint64_t evictGroups(const Config &config, uint64_t trigger, uint64_t target, uint64_t *left) {
  uint64_t removed = 0;
  std::map<std::string, Group> groups = scan(config, &removed);
  uint64_t total = 0;
  for (const auto &[digest, g] : groups) total += g.bytes;
  if (total > trigger) {
    std::vector<const Group *> order;
    for (const auto &[digest, g] : groups) order.push_back(&g);
    std::stable_sort(order.begin(), order.end(),
                     [](const Group *a, const Group *b) { return a->lastUsed < b->lastUsed; });
    for (const Group *g : order) {
      if (total <= target) break;
      for (const fs::path &f : g->files)
        if (::unlink(f.c_str()) == 0) ++removed; // ENOENT: another process evicted it first
      total -= g->bytes;
      counters().evictions++;
    }
  }
  if (left) *left = total;
  return removed;
}

} // namespace

uint64_t DiskCache::evict(uint64_t maxBytes) { return evictGroups(config_, maxBytes, maxBytes, nullptr); }

bool DiskCache::writeFiles(const std::vector<std::pair<std::string, std::string>> &files) {
  // The bytes go to temporary files first, outside the lock; the renames and
  // the stats of what they replace happen under it, so that two processes
  // replacing one file with different bytes cannot both count the same old size.
  std::vector<std::string> temporaries;
  auto dropTemporaries = [&] {
    int saved = errno;
    for (const std::string &tmp : temporaries) ::unlink(tmp.c_str());
    errno = saved;
  };
  for (const auto &[path, bytes] : files) {
    temporaries.push_back(writeTemporaryFile(path, bytes));
    if (temporaries.back().empty()) {
      temporaries.pop_back();
      dropTemporaries();
      return false;
    }
  }
  bool ok = true;
  int64_t added = 0;
  auto renameAll = [&] {
    for (size_t i = 0; i < files.size(); ++i) {
      const auto &[path, bytes] = files[i];
      struct stat st{};
      int64_t old = ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
      if (::rename(temporaries[i].c_str(), path.c_str()) == 0 || writeFileAtomically(path, bytes)) {
        added += static_cast<int64_t>(bytes.size()) - old; // (a failed rename: its directory was cleared)
        temporaries[i].clear();
      } else {
        ok = false;
      }
    }
    dropTemporaries();
  };
  int fd = ::open(usagePath(config_).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) { // no running total (DIR read-only but DIR/kernels not?): the walk on every store
    renameAll();
    counters().sweeps++;
    evict(config_.maxBytes);
    return ok;
  }
  // Without working locks (some network filesystems) the total is only
  // approximate; a wrong total costs an early sweep or a late one, which
  // writes the exact total back.
  bool locked = ::flock(fd, LOCK_EX) == 0;
  renameAll();
  int saved = errno;
  char text[32] = {};
  ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  uint64_t total = 0;
  bool known = false;
  if (n > 1 && text[n - 1] == '\n') {
    auto [end, err] = std::from_chars(text, text + n - 1, total);
    known = err == std::errc() && end == text + n - 1;
  }
  if (known) total = added < 0 && static_cast<uint64_t>(-added) > total ? 0 : total + added;
  if (!known || total > config_.maxBytes) {
    // Down to 90% of the cap, so that a full cache sweeps once per tenth of
    // its size stored, not on every store.
    counters().sweeps++;
    evictGroups(config_, config_.maxBytes, config_.maxBytes - config_.maxBytes / 10, &total);
  }
  std::string line = std::to_string(total) + "\n";
  if (::pwrite(fd, line.data(), line.size(), 0) == static_cast<ssize_t>(line.size()))
    (void)::ftruncate(fd, static_cast<off_t>(line.size()));
  if (locked) ::flock(fd, LOCK_UN);
  ::close(fd);
  errno = saved;
  return ok;
}

std::vector<EntryInfo> DiskCache::list(std::string *error) const {
  std::vector<EntryInfo> out;
  for (const auto &[digest, g] : scan(config_, nullptr, error)) {
    if (!g.hasEntry) continue;
    EntryInfo info;
    info.digest = digest;
    info.bytes = g.bytes;
    info.lastUsed = g.lastUsed / 1000000000LL;
    for (const fs::path &f : g.files)
      if (f.string().ends_with(kEntrySuffix)) info.path = f.string();
    int fd = ::open(info.path.c_str(), O_RDONLY | O_CLOEXEC);
    std::string bytes;
    if (fd >= 0 && readWholeFile(fd, bytes)) info.entry = decode(bytes, &info.problem);
    else info.problem = std::string("unreadable (") + std::strerror(errno) + ")";
    if (fd >= 0) ::close(fd);
    if (info.entry && digestHex(info.entry->key) != digest) {
      info.entry.reset();
      info.problem = "its key does not match its file name";
    }
    out.push_back(std::move(info));
  }
  std::sort(out.begin(), out.end(), [](const EntryInfo &a, const EntryInfo &b) {
    return a.lastUsed != b.lastUsed ? a.lastUsed > b.lastUsed : a.digest < b.digest;
  });
  return out;
}

Usage DiskCache::usage(std::string *error) const {
  Usage u;
  for (const auto &[digest, g] : scan(config_, nullptr, error)) {
    u.bytes += g.bytes;
    if (g.hasEntry) ++u.entries;
  }
  std::error_code ec;
  for (fs::directory_iterator it(config_.dir + "/autotune", ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code fileEc;
    if (it->path().extension() == ".json" && it->is_regular_file(fileEc)) {
      ++u.tuningFiles;
      u.tuningBytes += it->file_size(fileEc);
    }
  }
  return u;
}

uint64_t DiskCache::clear(bool tuning, std::string *error) {
  uint64_t removed = 0;
  auto problem = [&](const std::string &what, int err) {
    if (error && error->empty()) *error = what + ": " + std::strerror(err);
  };
  std::vector<std::string> roots = {kernelsDir(config_)};
  if (tuning) roots.push_back(config_.dir + "/autotune");
  for (const std::string &root : roots) {
    std::error_code ec;
    std::vector<fs::path> files;
    fs::recursive_directory_iterator it(root, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
      std::error_code fileEc;
      if (it->is_regular_file(fileEc)) files.push_back(it->path());
    }
    if (ec && ec != std::errc::no_such_file_or_directory)
      problem("cannot read " + (it != end ? it->path().string() : root), ec.value());
    for (const fs::path &f : files) {
      if (::unlink(f.c_str()) == 0) ++removed;
      else if (errno != ENOENT) problem("cannot remove " + f.string(), errno); // ENOENT: a concurrent clear
    }
  }
  // The running total is rebuilt by the next store's walk.
  const std::string usage = usagePath(config_);
  if (::unlink(usage.c_str()) != 0 && errno != ENOENT) problem("cannot remove " + usage, errno);
  return removed;
}

} // namespace tessera::cache
