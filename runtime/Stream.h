// Streams and CUDA graphs. tessera launches on whatever CUstream the caller
// gives (torch's current stream, usually); these owning wrappers exist for
// tests and for callers without torch. Graph capture records launches made
// on a stream and replays them with one cuGraphLaunch, which is how the
// launch path's "capturable" promise is tested.
#pragma once

#include "runtime/CudaTypes.h"
#include "runtime/Device.h"

#include <functional>

namespace tessera::rt {

// An owned stream. Default-constructed: empty, and get() is the null
// (legacy default) stream; nothing touches the driver until create().
class Stream {
public:
  Stream() = default;
  // cuStreamCreate in the context of `device`; non-blocking streams do not
  // synchronise with the legacy default stream.
  static Stream create(int device = kCurrentDevice, bool nonBlocking = true);
  ~Stream();
  Stream(Stream &&other) noexcept;
  Stream &operator=(Stream &&other) noexcept;
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;

  CUstream get() const { return stream_; }
  int device() const { return device_; }
  void synchronize() const;

private:
  void release() noexcept;

  CUstream stream_ = nullptr;
  int device_ = -1;
};

// Times GPU work with two CUDA events (what the autotuner and the benchmarks
// use without torch): start() and stop() record on a stream, elapsedMs()
// waits for the stop event. Events are created on first start(), in the
// current context.
class EventTimer {
public:
  EventTimer() = default;
  ~EventTimer();
  EventTimer(const EventTimer &) = delete;
  EventTimer &operator=(const EventTimer &) = delete;
  void start(CUstream stream);
  void stop(CUstream stream);
  float elapsedMs() const;

private:
  CUevent start_ = nullptr, stop_ = nullptr;
  CUcontext context_ = nullptr;
};

// cuStreamSynchronize (null: the legacy default stream of the current context).
void synchronizeStream(CUstream stream);

enum class CaptureMode { Global, ThreadLocal, Relaxed };

// An instantiated CUDA graph (owns the graph and its executable).
class Graph {
public:
  Graph() = default;
  ~Graph();
  Graph(Graph &&other) noexcept;
  Graph &operator=(Graph &&other) noexcept;
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;

  explicit operator bool() const { return exec_ != nullptr; }
  void launch(CUstream stream) const; // cuGraphLaunch: replays the captured work
  CUgraph graph() const { return graph_; }
  CUgraphExec exec() const { return exec_; }

private:
  friend Graph endCapture(CUstream);
  void release() noexcept;

  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
};

// cuStreamBeginCapture on a non-default stream.
void beginCapture(CUstream stream, CaptureMode mode = CaptureMode::Global);
// cuStreamEndCapture, then cuGraphInstantiate.
Graph endCapture(CUstream stream);
// beginCapture, work(), endCapture; if work throws, the capture is ended
// and discarded (leaving the stream usable) and the exception propagates.
Graph captureGraph(CUstream stream, const std::function<void()> &work,
                   CaptureMode mode = CaptureMode::Global);

} // namespace tessera::rt
