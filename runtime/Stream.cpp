// Stream and CUDA-graph wrappers.
#include "runtime/Stream.h"

#include "runtime/DriverApi.h"

#include <utility>

namespace tessera::rt {

using detail::check;
using detail::driver;

Stream Stream::create(int device, bool nonBlocking) {
  const auto &api = driver();
  DeviceGuard guard(device);
  Stream s;
  s.device_ = guard.device();
  check(api.cuStreamCreate(&s.stream_, nonBlocking ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT),
        [&] { return "cuStreamCreate failed while creating a stream on device " +
                     std::to_string(s.device_); });
  return s;
}

Stream::~Stream() { release(); }

Stream::Stream(Stream &&other) noexcept { *this = std::move(other); }

Stream &Stream::operator=(Stream &&other) noexcept {
  if (this != &other) {
    release();
    stream_ = std::exchange(other.stream_, nullptr);
    device_ = std::exchange(other.device_, -1);
  }
  return *this;
}

void Stream::release() noexcept {
  CUstream stream = std::exchange(stream_, nullptr);
  if (!stream || detail::shuttingDown())
    return;
  try {
    (void)driver().cuStreamDestroy(stream); // never throw from a destructor
  } catch (...) {
  }
}

void Stream::synchronize() const { synchronizeStream(stream_); }

void synchronizeStream(CUstream stream) {
  const auto &api = driver();
  DeviceGuard guard(kCurrentDevice);
  check(api.cuStreamSynchronize(stream), "cuStreamSynchronize failed while waiting for a stream");
}

Graph::~Graph() { release(); }

Graph::Graph(Graph &&other) noexcept { *this = std::move(other); }

Graph &Graph::operator=(Graph &&other) noexcept {
  if (this != &other) {
    release();
    graph_ = std::exchange(other.graph_, nullptr);
    exec_ = std::exchange(other.exec_, nullptr);
  }
  return *this;
}

void Graph::release() noexcept {
  CUgraphExec exec = std::exchange(exec_, nullptr);
  CUgraph graph = std::exchange(graph_, nullptr);
  if ((!exec && !graph) || detail::shuttingDown())
    return;
  try {
    const auto &api = driver();
    if (exec)
      (void)api.cuGraphExecDestroy(exec);
    if (graph)
      (void)api.cuGraphDestroy(graph);
  } catch (...) {
  }
}

void Graph::launch(CUstream stream) const {
  const auto &api = driver();
  if (!exec_)
    throw Error("cannot launch an empty CUDA graph");
  check(api.cuGraphLaunch(exec_, stream), "cuGraphLaunch failed while replaying a CUDA graph");
}

EventTimer::~EventTimer() {
  if (!start_ || detail::shuttingDown()) return;
  try {
    const auto &api = driver();
    CUcontext current = nullptr;
    bool switched = api.cuCtxGetCurrent(&current) == CUDA_SUCCESS && current != context_ &&
                    api.cuCtxSetCurrent(context_) == CUDA_SUCCESS;
    (void)api.cuEventDestroy(start_);
    (void)api.cuEventDestroy(stop_);
    if (switched) (void)api.cuCtxSetCurrent(current);
  } catch (...) {
  }
}

void EventTimer::start(CUstream stream) {
  const auto &api = driver();
  if (!start_) {
    DeviceGuard guard(kCurrentDevice);
    context_ = guard.context();
    check(api.cuEventCreate(&start_, 0), "cuEventCreate failed while creating a timing event");
    check(api.cuEventCreate(&stop_, 0), "cuEventCreate failed while creating a timing event");
  }
  check(api.cuEventRecord(start_, stream), "cuEventRecord failed while starting a timer");
}

void EventTimer::stop(CUstream stream) {
  if (!stop_) throw Error("EventTimer::stop() before start()");
  check(driver().cuEventRecord(stop_, stream), "cuEventRecord failed while stopping a timer");
}

float EventTimer::elapsedMs() const {
  if (!stop_) throw Error("EventTimer::elapsedMs() before start() and stop()");
  const auto &api = driver();
  check(api.cuEventSynchronize(stop_), "cuEventSynchronize failed while reading a timer");
  float ms = 0;
  check(api.cuEventElapsedTime(&ms, start_, stop_), "cuEventElapsedTime failed while reading a timer");
  return ms;
}

void beginCapture(CUstream stream, CaptureMode mode) {
  const auto &api = driver();
  if (!stream)
    throw Error("cannot capture the legacy default stream into a CUDA graph; use a created stream");
  CUstreamCaptureMode cuMode = mode == CaptureMode::Global        ? CU_STREAM_CAPTURE_MODE_GLOBAL
                               : mode == CaptureMode::ThreadLocal ? CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
                                                                  : CU_STREAM_CAPTURE_MODE_RELAXED;
  check(api.cuStreamBeginCapture(stream, cuMode),
        "cuStreamBeginCapture failed while starting a CUDA graph capture");
}

Graph endCapture(CUstream stream) {
  const auto &api = driver();
  Graph g;
  check(api.cuStreamEndCapture(stream, &g.graph_),
        "cuStreamEndCapture failed while ending a CUDA graph capture");
  check(api.cuGraphInstantiateWithFlags(&g.exec_, g.graph_, 0),
        "cuGraphInstantiate failed while instantiating a captured CUDA graph");
  return g;
}

Graph captureGraph(CUstream stream, const std::function<void()> &work, CaptureMode mode) {
  beginCapture(stream, mode);
  try {
    work();
  } catch (...) {
    CUgraph partial = nullptr;
    const auto &api = driver();
    if (api.cuStreamEndCapture(stream, &partial) == CUDA_SUCCESS && partial)
      (void)api.cuGraphDestroy(partial);
    throw;
  }
  return endCapture(stream);
}

} // namespace tessera::rt
