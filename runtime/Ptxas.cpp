// ptxas as a subprocess: posix_spawn, no shell, files in a private temp
// directory (several threads may compile at once: the autotuner does).
#include "runtime/Ptxas.h"

#include "runtime/Cache.h"
#include "runtime/Driver.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>
#include <sstream>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace tessera::rt {

namespace {

namespace fs = std::filesystem;

// A directory of its own under $TMPDIR (or /tmp), removed with everything in it.
class TempDir {
public:
  TempDir() {
    const char *base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/tessera-ptxas-XXXXXX";
    if (!mkdtemp(pattern.data()))
      throw Error("cannot create a temporary directory for ptxas (" + pattern + "): " + std::strerror(errno));
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  std::string file(const char *name) const { return (path_ / name).string(); }

private:
  fs::path path_;
};

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  return text;
}

struct Exit {
  bool started = false;
  int spawnErrno = 0; // when !started
  int status = -1;    // exit status; 128 + N for signal N
};

// Runs argv[0] (a path) with stdout and stderr to `outputPath`.
Exit run(const std::vector<std::string> &argv, const std::string &outputPath) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, outputPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::vector<char *> args;
  for (const std::string &a : argv) args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  Exit exit;
  pid_t pid = 0;
  int error = posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0) {
    exit.spawnErrno = error;
    return exit;
  }
  exit.started = true;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return exit;
  exit.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return exit;
}

// Plain stat(2) and access(2), no std::filesystem: this runs on a warm start's first launch (the JIT
// plan), where std::filesystem's first use in the process costs tens of microseconds.
bool executable(const std::string &path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

// "dir/rest", one slash between them (as fs::path's operator/ joins them).
std::string joined(std::string dir, const char *rest) {
  while (!dir.empty() && dir.back() == '/') dir.pop_back();
  return dir + "/" + rest;
}

std::optional<std::string> searchDefaultPlaces() {
  for (const char *var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char *home = std::getenv(var); home && *home)
      if (std::string path = joined(home, "bin/ptxas"); executable(path)) return path;
  if (executable("/usr/local/cuda/bin/ptxas")) return std::string("/usr/local/cuda/bin/ptxas");
  if (const char *path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    for (std::string dir; std::getline(dirs, dir, ':');)
      if (!dir.empty())
        if (std::string candidate = joined(dir, "ptxas"); executable(candidate)) return candidate;
  }
  return std::nullopt;
}

// "Cuda compilation tools, release 13.0, V13.0.88" -> "13.0.88".
std::optional<std::string> versionOf(const std::string &path) {
  TempDir dir;
  const std::string out = dir.file("version.txt");
  Exit exit = run({path, "--version"}, out);
  if (!exit.started || exit.status != 0) return std::nullopt;
  std::smatch m;
  const std::string text = readFile(out);
  if (!std::regex_search(text, m, std::regex(R"(V(\d+\.\d+\.\d+))"))) return std::nullopt;
  return m[1].str();
}

// What tells one ptxas file from another without running it: "dev:ino size mtime ctime"
// (ctime too: a copy that keeps the mtime, cp -p, still changes it). Empty when it cannot be stat'ed.
std::string fileIdentity(const std::string &path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return {};
  return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + " " + std::to_string(st.st_size) + " " +
         std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + " " +
         std::to_string(st.st_ctim.tv_sec) + "." + std::to_string(st.st_ctim.tv_nsec);
}

// A small file's bytes with plain read(2) (empty when unreadable): the process's first
// std::ifstream initialises iostreams' locale, about 0.1 ms of a warm start.
std::string readSmallFile(const std::string &path) {
  std::string out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    out.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

// DIR/tools/ptxas-<FNV-1a of the path>.version; empty with the disk cache off.
std::string memoPath(const std::string &path) {
  const cache::Config config = cache::configFromEnvironment();
  if (!config.enabled) return {};
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : path) h = (h ^ c) * 1099511628211ull;
  char name[40];
  std::snprintf(name, sizeof name, "ptxas-%016llx.version", static_cast<unsigned long long>(h));
  return config.dir + "/tools/" + name;
}

} // namespace

std::optional<std::string> ptxasVersion(const std::string &path) {
  const std::string identity = fileIdentity(path);
  const std::string memo = identity.empty() ? std::string() : memoPath(path);
  // The memo: "<path>\n<identity>\n<version>\n"; any other content is asked again.
  const std::string expected = path + "\n" + identity + "\n";
  if (!memo.empty()) {
    const std::string text = readSmallFile(memo);
    if (text.size() > expected.size() + 1 && text.compare(0, expected.size(), expected) == 0 && text.back() == '\n')
      return text.substr(expected.size(), text.size() - expected.size() - 1);
  }
  std::optional<std::string> version = versionOf(path);
  if (version && !memo.empty()) (void)cache::writeFileAtomically(memo, expected + *version + "\n"); // best effort
  return version;
}

const PtxasTool *findPtxas() {
  // Keyed by TESSERA_PTXAS, so that a test changing it sees the change.
  static std::mutex mutex;
  static std::optional<std::string> lookedUpFor;
  static std::unique_ptr<PtxasTool> found;
  const char *env = std::getenv("TESSERA_PTXAS");
  const std::string wanted = env ? env : "";
  std::lock_guard<std::mutex> lock(mutex);
  if (lookedUpFor && *lookedUpFor == wanted) return found.get();
  found.reset();
  lookedUpFor.reset();
  std::optional<std::string> path = wanted.empty() ? searchDefaultPlaces() : std::optional<std::string>(wanted);
  if (path) {
    std::optional<std::string> version = ptxasVersion(*path);
    if (!version) {
      if (!wanted.empty())
        throw Error("TESSERA_PTXAS='" + wanted + "' is not a ptxas that runs (`" + wanted +
                    " --version` failed or printed no version)");
    } else {
      found = std::make_unique<PtxasTool>(PtxasTool{*path, *version});
    }
  }
  lookedUpFor = wanted;
  return found.get();
}

namespace {

// What a ptxas run that ended says: the cubin, or the error naming the kernel and ptxas's output.
std::vector<char> cubinOf(const PtxasTool &tool, const Exit &exit, const std::string &arch,
                          const std::string &kernelName, const std::string &cubin, const std::string &log) {
  const std::string what = "ptxas (" + tool.path + ", " + tool.version + ") compiling kernel '" + kernelName +
                           "' for " + arch;
  if (!exit.started) throw Error(what + " did not start: " + std::strerror(exit.spawnErrno));
  if (exit.status != 0) {
    std::string output = trimmed(readFile(log));
    throw Error(what + " failed with exit status " + std::to_string(exit.status) +
                (output.empty() ? std::string(" and printed nothing") : ":\n" + output));
  }
  std::string bytes = readFile(cubin);
  if (bytes.empty()) throw Error(what + " wrote no cubin");
  return std::vector<char>(bytes.begin(), bytes.end());
}

// Writes all of `data` to a pipe; false when the reader is gone (EPIPE, with SIGPIPE kept from
// the process: blocked in this thread while writing, and a pending one taken back).
bool writeAll(int fd, std::string_view data) {
  sigset_t pipeSignal, old;
  sigemptyset(&pipeSignal);
  sigaddset(&pipeSignal, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipeSignal, &old);
  bool ok = true;
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = false;
      break;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  if (!ok) {
    struct timespec zero{};
    while (sigtimedwait(&pipeSignal, nullptr, &zero) == SIGPIPE) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return ok;
}

} // namespace

struct EarlyPtxas::Files {
  TempDir dir;
};

namespace {

// The runs not finished, for the fork handler: a child forked without exec (another thread
// forking while a kernel compiles) would keep the pipe's writing end open, and ptxas would wait
// for its end as long as the child lives; its copies of the runs would kill the parent's ptxas.
constexpr int kMaxPending = 64;
std::atomic<EarlyPtxas *> pendingRuns[kMaxPending];

} // namespace

void EarlyPtxas::disownInChild() {
  for (std::atomic<EarlyPtxas *> &slot : pendingRuns) {
    if (EarlyPtxas *run = slot.load(std::memory_order_relaxed)) {
      if (run->input_ >= 0) ::close(run->input_);
      run->input_ = -1;
      run->pid_ = -1;
      slot.store(nullptr, std::memory_order_relaxed);
    }
  }
}

void EarlyPtxas::forget() {
  for (std::atomic<EarlyPtxas *> &slot : pendingRuns) {
    EarlyPtxas *self = this;
    if (slot.compare_exchange_strong(self, nullptr)) return;
  }
}

std::unique_ptr<EarlyPtxas> EarlyPtxas::start(const PtxasTool &tool, const std::string &arch,
                                              const std::string &kernelName) {
  static std::once_flag forkHandler;
  std::call_once(forkHandler, [] { pthread_atfork(nullptr, nullptr, &EarlyPtxas::disownInChild); });
  std::unique_ptr<EarlyPtxas> run(new EarlyPtxas());
  try {
    run->files_ = std::make_unique<Files>();
  } catch (const Error &) {
    return nullptr;
  }
  run->tool_ = tool;
  run->arch_ = arch;
  run->kernelName_ = kernelName;
  bool registered = false;
  for (std::atomic<EarlyPtxas *> &slot : pendingRuns) {
    EarlyPtxas *empty = nullptr;
    if (slot.compare_exchange_strong(empty, run.get())) {
      registered = true;
      break;
    }
  }
  if (!registered) return nullptr; // that many at once: ptxas runs as usual
  int ends[2];
  if (pipe2(ends, O_CLOEXEC) != 0) return nullptr;
  run->input_ = ends[1];
  const std::string cubin = run->files_->dir.file("kernel.cubin"), log = run->files_->dir.file("log.txt");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, ends[0], STDIN_FILENO); // dup2 clears CLOEXEC on stdin
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::vector<std::string> argv{tool.path, "-arch=" + arch, "-o", cubin, "/dev/stdin"};
  std::vector<char *> args;
  for (const std::string &a : argv) args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int error = posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(ends[0]);
  if (error != 0) return nullptr; // the destructor closes the pipe
  run->pid_ = pid;
  return run;
}

std::vector<char> EarlyPtxas::finish(std::string_view ptx) {
  if (pid_ < 0) throw Error("ptxas for kernel '" + kernelName_ + "' was finished already");
  (void)writeAll(input_, ptx); // a ptxas that is gone says why through its exit status and output
  ::close(input_);
  input_ = -1;
  Exit exit;
  exit.started = true;
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0)
    if (errno != EINTR) break;
  pid_ = -1;
  forget();
  exit.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return cubinOf(tool_, exit, arch_, kernelName_, files_->dir.file("kernel.cubin"), files_->dir.file("log.txt"));
}

EarlyPtxas::~EarlyPtxas() {
  forget();
  if (input_ >= 0) ::close(input_);
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

std::vector<char> assemblePtx(const PtxasTool &tool, std::string_view ptx, const std::string &arch,
                              const std::string &kernelName) {
  TempDir dir;
  const std::string input = dir.file("kernel.ptx"), cubin = dir.file("kernel.cubin"), log = dir.file("log.txt");
  {
    std::ofstream out(input, std::ios::binary);
    out.write(ptx.data(), static_cast<std::streamsize>(ptx.size()));
    if (!out) throw Error("cannot write the PTX of kernel '" + kernelName + "' to " + input + " for ptxas");
  }
  Exit exit = run({tool.path, "-arch=" + arch, "-o", cubin, input}, log);
  return cubinOf(tool, exit, arch, kernelName, cubin, log);
}

} // namespace tessera::rt
