// The disk cache (runtime/Cache.h) as Python sees it: its configuration, the
// versions in its keys, listing, usage, eviction, clearing, process-wide
// counters, and the entry format (for tests). Also the runtime's timing
// helpers the autotuner and the benchmarks use without torch.
#include "JitKernel.h"

#include "runtime/Cache.h"
#include "runtime/Driver.h"
#include "runtime/Stream.h"
#include "runtime/StepTimes.h"

#include <pybind11/stl.h>

#include <chrono>

namespace tessera::python {

namespace {

py::dict configDict(const cache::Config &c) {
  py::dict out;
  out["enabled"] = c.enabled;
  out["dir"] = c.dir;
  out["max_bytes"] = c.maxBytes;
  out["keep_stages"] = c.keepStages;
  return out;
}

py::dict entryDict(const cache::Entry &e) {
  py::dict out;
  out["key"] = e.key;
  out["kernel"] = e.kernelName;
  out["arch"] = e.arch;
  out["signature"] = e.signature;
  out["num_warps"] = e.numWarps;
  out["num_stages"] = e.numStages;
  out["shared"] = e.sharedBytes;
  out["ptx"] = e.ptx;
  py::dict cubins;
  for (const auto &[tag, bytes] : e.cubins) cubins[py::str(tag)] = py::bytes(bytes);
  out["cubins"] = cubins;
  return out;
}

cache::Entry entryFrom(const py::dict &d) {
  cache::Entry e;
  e.key = d["key"].cast<std::string>();
  e.kernelName = d["kernel"].cast<std::string>();
  e.arch = d.contains("arch") ? d["arch"].cast<std::string>() : "sm_90a";
  e.signature = d.contains("signature") ? d["signature"].cast<std::string>() : "";
  e.numWarps = d.contains("num_warps") ? d["num_warps"].cast<unsigned>() : 4;
  e.numStages = d.contains("num_stages") ? d["num_stages"].cast<unsigned>() : 3;
  e.sharedBytes = d.contains("shared") ? d["shared"].cast<unsigned>() : 0;
  e.ptx = d.contains("ptx") ? d["ptx"].cast<std::string>() : "";
  if (d.contains("cubins"))
    for (auto item : d["cubins"].cast<py::dict>())
      e.cubins.emplace_back(item.first.cast<std::string>(), item.second.cast<std::string>());
  return e;
}

} // namespace

void registerCache(py::module_ &m) {
  m.def(
      "step_times",
      [](bool reset) {
        py::dict out;
        const auto totals = rt::stepTimes();
        for (size_t i = 0; i < totals.size(); ++i)
          out[rt::stepName(static_cast<rt::Step>(i))] = static_cast<double>(totals[i]) * 1e-6;
        if (reset) rt::resetStepTimes();
        return out;
      },
      py::arg("reset") = false,
      "Milliseconds spent so far in each step of the launch path's in-memory misses (runtime/StepTimes.h): "
      "driver_init, specialize, target_arch, cache_key, entry_read, entry_decode, jit_plan, module_load, "
      "compile, assemble, result_object, first_launch, torch_fastpath. reset=True zeroes them after reading.");
  m.def(
      "digest_hex", [](py::bytes data) { return cache::digestHex(std::string_view(data)); }, py::arg("data"),
      "The BLAKE3-256 of `data` in hex: the disk cache's digest (runtime/Cache.h).");
  m.def(
      "source_entry_read",
      [](const std::string &sourcePath, const py::bytes &head, const std::vector<std::string> &ruleFiles) -> py::object {
        std::optional<cache::SourceEntry> e = cache::readSourceEntry(sourcePath, std::string_view(head), ruleFiles);
        if (!e) return py::none();
        return py::make_tuple(e->path, e->bytes ? py::object(py::bytes(*e->bytes)) : py::object(py::none()));
      },
      py::arg("source_path"), py::arg("head"), py::arg("rule_files"),
      "A kernel's source entry (tessera/_source_cache.py), in one call: (its path, its bytes or None), the "
      "path named by the digest of the rule files' names, sizes and mtimes, `head` and the kernel file's bytes; "
      "None with the cache off or a file unreadable (runtime/Cache.h, readSourceEntry).");
  m.def("cache_config", [] { return configDict(cache::configFromEnvironment()); },
        "The disk cache's settings from the environment: {enabled, dir, max_bytes, keep_stages}.");
  m.def(
      "cache_versions",
      [] {
        py::dict out;
        out["build_id"] = cache::buildId();
        out["compiler"] = cache::compilerFingerprint();
        out["version"] = versionString();
        return out;
      },
      "What the kernel cache keys carry besides the kernel's inputs.");
  // A warm start needs the build id alone (the compiler fingerprint costs tens of microseconds).
  m.attr("BUILD_ID") = cache::buildId();
  // A process's first BLAKE3 digest detects the CPU's SIMD extensions (cpuid: ~25 us in a VM, where
  // cpuid traps). Every launch path digests (the kernel's key, its source entry), so that one-time
  // cost is paid here, where the extension loads, not on a warm start's first launch.
  (void)cache::digestHex("");
  m.def(
      "cache_usage",
      [] {
        cache::DiskCache disk;
        cache::Usage u;
        {
          py::gil_scoped_release nogil;
          u = disk.usage();
        }
        py::dict out = configDict(disk.config());
        out["entries"] = u.entries;
        out["bytes"] = u.bytes;
        out["tuning_files"] = u.tuningFiles;
        out["tuning_bytes"] = u.tuningBytes;
        return out;
      });
  m.def("cache_list", [] {
    std::vector<cache::EntryInfo> infos;
    {
      py::gil_scoped_release nogil;
      infos = cache::DiskCache().list();
    }
    py::list out;
    for (const cache::EntryInfo &i : infos) {
      py::dict d;
      d["path"] = i.path;
      d["digest"] = i.digest;
      d["bytes"] = i.bytes;
      d["last_used"] = i.lastUsed;
      d["problem"] = i.problem;
      d["entry"] = i.entry ? py::object(entryDict(*i.entry)) : py::object(py::none());
      out.append(d);
    }
    return out;
  });
  m.def("cache_clear", [](bool tuning) { return cache::DiskCache().clear(tuning); }, py::arg("tuning") = false,
        py::call_guard<py::gil_scoped_release>(), "Removes every entry (and tuning results); returns the count.");
  m.def("cache_evict", [](uint64_t maxBytes) { return cache::DiskCache().evict(maxBytes); }, py::arg("max_bytes"),
        py::call_guard<py::gil_scoped_release>());
  m.def("cache_write", [](const std::string &path, const py::bytes &data) {
    std::string bytes = data;
    py::gil_scoped_release nogil;
    return cache::DiskCache().writeFiles({{path, std::move(bytes)}});
  }, py::arg("path"), py::arg("data"),
        "Writes a file into DIR/kernels (not an entry) atomically, counting it in the running total the size cap "
        "is kept by.");
  m.def("cache_stats", [] {
    cache::Stats s = cache::stats();
    py::dict out;
    out["hits"] = s.hits;
    out["misses"] = s.misses;
    out["stores"] = s.stores;
    out["corrupt"] = s.corrupt;
    out["store_failures"] = s.storeFailures;
    out["evictions"] = s.evictions;
    out["sweeps"] = s.sweeps;
    return out;
  }, "This process's disk-cache counters.");
  m.def("cache_encode", [](const py::dict &d) { return py::bytes(cache::encode(entryFrom(d))); },
        "An entry's bytes (tests of the format).");
  m.def("cache_decode", [](const py::bytes &b) -> py::object {
    std::string why;
    std::optional<cache::Entry> e = cache::decode(std::string(b), &why);
    if (!e) throw py::value_error(why);
    return entryDict(*e);
  });
  m.def("parse_byte_size", [](const std::string &s) -> py::object {
    auto v = cache::parseByteSize(s);
    return v ? py::object(py::int_(*v)) : py::object(py::none());
  });
  m.def("write_file_atomically", [](const std::string &path, const py::bytes &data) {
    std::string bytes = data;
    bool ok;
    {
      py::gil_scoped_release nogil;
      ok = cache::writeFileAtomically(path, bytes);
    }
    return ok;
  }, "Writes through a temporary file and rename(2) (the autotuner's results use it).");
  m.def("warn_once", &cache::warnOnce, py::arg("once"), py::arg("message"));

  py::class_<rt::EventTimer>(m, "EventTimer", "Two CUDA events around work on a stream (timing without torch).")
      .def(py::init<>())
      .def("start", [](rt::EventTimer &t, uintptr_t stream) { t.start(reinterpret_cast<CUstream>(stream)); },
           py::arg("stream") = 0)
      .def("stop", [](rt::EventTimer &t, uintptr_t stream) { t.stop(reinterpret_cast<CUstream>(stream)); },
           py::arg("stream") = 0)
      .def("elapsed_ms", &rt::EventTimer::elapsedMs, py::call_guard<py::gil_scoped_release>());

  // Host-side launch cost of a loaded kernel, from C++ (the floor the Python
  // path is compared with in bench/launch_overhead.py): `iterations` launches
  // of `compiled` with its arguments packed once, through rt::launch (what
  // cuLaunchKernel costs) or Kernel::launch (the C++ API); seconds per launch.
  m.def(
      "bench_bare_launch",
      [](const std::shared_ptr<CompiledEntry> &entry, py::tuple args, unsigned blocks, int iterations,
         uintptr_t stream, bool kernelApi) {
        const Kernel &kernel = entry->kernel;
        const std::vector<ArgSpec> &sig = kernel.signature();
        if (args.size() != sig.size()) throw py::value_error("bench_bare_launch: one argument per runtime parameter");
        std::vector<uint64_t> slots;
        std::vector<void *> pointers;
        for (size_t i = 0; i < sig.size(); ++i) {
          slots.push_back(convertArgument(args[i], sig[i], kernel.name(), "arg").bits);
          if (sig[i].type.isTensorDesc())
            slots.back() = reinterpret_cast<uint64_t>(
                encodedTensorMap(*tensorDescOf(args[i].ptr()), kernel.name(), "arg", i, sig.size()));
        }
        for (size_t i = 0; i < sig.size(); ++i)
          if (sig[i].type.isTensorDesc()) appendDescriptorFields(*tensorDescOf(args[i].ptr()), slots);
        for (size_t i = 0; i < slots.size(); ++i) // a descriptor's slot holds the address of its map
          pointers.push_back(i < sig.size() && sig[i].type.isTensorDesc()
                                 ? reinterpret_cast<void *>(static_cast<uintptr_t>(slots[i]))
                                 : static_cast<void *>(&slots[i]));
        py::gil_scoped_release nogil;
        const rt::LoadedKernel &loaded = kernel.load(rt::kCurrentDevice);
        auto start = std::chrono::steady_clock::now();
        const CUstream st = reinterpret_cast<CUstream>(stream);
        if (kernelApi) // the C++ API's path: Kernel::launch finds the loaded kernel itself
          for (int i = 0; i < iterations; ++i)
            kernel.launch(rt::Grid{blocks, 1, 1}, pointers.data(), st, Kernel::kAllParameters);
        else
          for (int i = 0; i < iterations; ++i) rt::launch(loaded, rt::Grid{blocks, 1, 1}, pointers.data(), st);
        auto end = std::chrono::steady_clock::now();
        return std::chrono::duration<double>(end - start).count() / iterations;
      },
      py::arg("compiled"), py::arg("args"), py::arg("blocks") = 1, py::arg("iterations") = 10000,
      py::arg("stream") = 0, py::arg("kernel_api") = false);
}

} // namespace tessera::python
