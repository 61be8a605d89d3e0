// PTX -> cubin with the CUDA toolkit's ptxas, run as a subprocess (what
// Triton does). ptxas compiles the PTX as one program, as cuModuleLoadData
// on PTX does, but hands back the cubin, so it can be cached; the driver's
// cuLink* JIT compiles relocatable code (ptxas -c) and allocates registers
// differently (docs/runtime.md has the measurements).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::rt {

struct PtxasTool {
  std::string path;    // absolute, or a name found on PATH
  std::string version; // "13.0.88" (from ptxas --version)
};

// The ptxas the runtime runs: $TESSERA_PTXAS if set (an error, at the first
// use, when it does not run), else the first executable of $CUDA_HOME/bin,
// $CUDA_PATH/bin, /usr/local/cuda/bin and PATH. nullptr when there is none.
// Looked up once per process.
const PtxasTool *findPtxas();

// The version ptxas at `path` prints ("13.0.88"), or nullopt when it does not
// run or prints none. Asking costs a process spawn (3 to 10 ms, most of a warm
// start in a new process), so with the disk cache on the answer is remembered
// in DIR/tools/ together with the file's identity (device, inode, size, mtime,
// ctime), as ccache recognises a compiler: a ptxas replaced or upgraded in
// place is asked again.
std::optional<std::string> ptxasVersion(const std::string &path);

// Compiles `ptx` for `arch` ("sm_90a") to a cubin with `tool`. A failure is an
// rt::Error naming the kernel, the exit status and ptxas's output.
std::vector<char> assemblePtx(const PtxasTool &tool, std::string_view ptx, const std::string &arch,
                              const std::string &kernelName);

// assemblePtx() in two steps: ptxas started before its PTX exists, reading it from a pipe, so
// that its start (about 15 ms of CPU: a 38 MB program's page faults and initialisation, most of
// its time on a small kernel) overlaps the compile that makes the PTX. Destroyed unfinished
// (the compile failed), the process is killed and reaped. A child forked without exec while
// one is pending closes its copy of the pipe and leaves the process to the parent.
class EarlyPtxas {
public:
  // nullptr when ptxas cannot be started so (assemblePtx() then runs it as usual).
  static std::unique_ptr<EarlyPtxas> start(const PtxasTool &tool, const std::string &arch,
                                           const std::string &kernelName);
  ~EarlyPtxas();
  EarlyPtxas(const EarlyPtxas &) = delete;
  EarlyPtxas &operator=(const EarlyPtxas &) = delete;

  const std::string &arch() const { return arch_; }
  const PtxasTool &tool() const { return tool_; }
  // Hands ptxas the PTX and waits: the cubin, or the rt::Error assemblePtx() would throw.
  std::vector<char> finish(std::string_view ptx);

private:
  EarlyPtxas() = default;
  static void disownInChild();
  void forget(); // out of the pending runs disownInChild() sees
  struct Files;
  std::unique_ptr<Files> files_; // the private temporary directory: cubin and output
  PtxasTool tool_;
  std::string arch_, kernelName_;
  int pid_ = -1;
  int input_ = -1; // the pipe's writing end
};

} // namespace tessera::rt
