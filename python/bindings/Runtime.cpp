// The runtime as Python sees it: whether there is a driver, devices and their
// properties, synchronisation, and loading PTX (tests of compiled output).
// Nothing here touches the driver until called.
#include "Bindings.h"

#include "runtime/Driver.h"
#include "runtime/Jit.h"

#include <pybind11/stl.h>

namespace tessera::python {

void registerRuntime(py::module_ &m) {
  m.def("driver_available", &rt::driverAvailable, "libcuda loaded and initialised (never raises)");
  m.def(
      "driver_status",
      [] {
        const rt::DriverStatus &s = rt::driverStatus();
        py::dict out;
        out["library_loaded"] = s.libraryLoaded;
        out["ready"] = s.ready;
        out["version"] = s.version;
        out["error"] = s.error;
        return out;
      },
      "{'library_loaded', 'ready', 'version', 'error'} (never raises)");
  m.def("driver_version", &rt::driverVersion);
  m.def("device_count", &rt::deviceCount);
  m.def("current_device", &rt::currentDevice);
  m.def("set_current_device", &rt::setCurrentDevice, py::arg("device"));
  m.def(
      "device_properties",
      [](int device) {
        const rt::DeviceProperties &p = rt::deviceProperties(device);
        py::dict out;
        out["ordinal"] = p.ordinal;
        out["name"] = p.name;
        out["major"] = p.major;
        out["minor"] = p.minor;
        out["arch"] = p.arch();
        out["multiprocessor_count"] = p.smCount;
        out["max_threads_per_block"] = p.maxThreadsPerBlock;
        out["max_shared_mem"] = p.sharedPerBlockOptin; // Triton's name: the opt-in limit
        out["shared_per_block"] = p.sharedPerBlock;
        out["shared_per_multiprocessor"] = p.sharedPerMultiprocessor;
        out["max_num_regs"] = p.registersPerBlock;
        out["warpSize"] = p.warpSize;
        out["total_memory"] = p.totalMemory;
        return out;
      },
      py::arg("device") = rt::kCurrentDevice);
  m.def("target_arch", [](int device) { return targetArch(device); }, py::arg("device") = rt::kCurrentDevice,
        "The arch tessera compiles for on the device: sm_90a on H100/H200, sm_80 on A100, ...");
  m.def("synchronize", &rt::synchronizeDevice, py::arg("device") = rt::kCurrentDevice,
        py::call_guard<py::gil_scoped_release>());
  m.def(
      "load_ptx",
      [](const std::string &ptx, const std::string &name, int numWarps, unsigned sharedBytes,
         const std::string &arch, int device) {
        py::dict out;
        int registers = 0, local = 0, binary = 0, ptxVersion = 0;
        {
          py::gil_scoped_release nogil;
          rt::LoadedKernel k;
          if (arch.empty()) { // as kernels load (TESSERA_JIT)
            std::vector<char> cubin;
            k = rt::loadPtx(rt::jitPlan(), ptx, name, numWarps, sharedBytes, device, &cubin);
          } else {
            k = rt::loadPtxKernel(ptx, name, numWarps, sharedBytes, arch, device);
          }
          registers = k.attributes().registers;
          local = k.attributes().localBytes;
          binary = k.attributes().binaryVersion;
          ptxVersion = k.attributes().ptxVersion;
        }
        out["n_regs"] = registers;
        out["n_spills"] = local;
        out["binary_version"] = binary;
        out["ptx_version"] = ptxVersion;
        return out;
      },
      py::arg("ptx"), py::arg("name"), py::arg("num_warps") = 4, py::arg("shared") = 0,
      py::arg("arch") = "", py::arg("device") = rt::kCurrentDevice,
      "Compiles PTX to SASS as kernels are (TESSERA_JIT: ptxas, whole or link), or with arch= by the "
      "driver's linker for that arch, and loads it (then unloads it); returns the function's attributes.");
  m.def(
      "jit_mode", [] { return rt::jitPlan().describe(); },
      "How kernels' PTX becomes SASS now (TESSERA_JIT): 'ptxas VERSION (PATH)', 'whole' or 'link'.");
}

} // namespace tessera::python
