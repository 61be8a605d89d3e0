// Compiling without launching: tessera._C.compile (tessera.compile and
// JITFunction.warmup end here), kernel_parameters (how Python splits a
// kernel's arguments into runtime ones and constexprs), the CompiledKernel
// class, and the version.
#include "Bindings.h"

#include "dsl/AST.h"
#include "compiler/codegen/Nvrtc.h"

#include <pybind11/stl.h>

namespace tessera::python {

namespace {

// Same rule as the specialiser: `tl.constexpr`, `constexpr`, or a string
// annotation mentioning constexpr.
bool isConstexprAnnotation(const ast::Expr *e) {
  if (!e) return false;
  switch (e->kind) {
  case ast::ExprKind::Attribute:
    return static_cast<const ast::Attribute *>(e)->attr == "constexpr";
  case ast::ExprKind::Name:
    return static_cast<const ast::Name *>(e)->id == "constexpr";
  case ast::ExprKind::Constant: {
    auto *c = static_cast<const ast::Constant *>(e);
    return c->type == ast::Constant::Type::String &&
           c->stringValue.find("constexpr") != std::string::npos;
  }
  default:
    return false;
  }
}

std::string joinSignature(py::handle signature) {
  if (py::isinstance<py::str>(signature)) return signature.cast<std::string>();
  if (py::isinstance<py::dict>(signature))
    throw py::type_error("signature must be a string like \"*fp32:16,i32\" or a list of such entries, "
                         "not a dict");
  std::string out;
  for (py::handle entry : signature) {
    if (!py::isinstance<py::str>(entry))
      throw py::type_error("signature entries must be strings like \"*fp32:16\" or \"i32\"");
    appendJoined(out, ",", entry.cast<std::string>());
  }
  return out;
}

py::dict asmOf(const CompiledEntry &entry) {
  const CompiledKernel *stages = &entry.kernel.compiled();
  CompiledKernel recompiled;
  if (entry.kernel.fromCache() && stages->ir.empty()) {
    // The disk cache keeps only the PTX: compile again for the other stages.
    CompileOptions options;
    options.numWarps = entry.numWarps;
    options.numStages = entry.numStages;
    options.maxRegisters = entry.maxRegisters;
    options.fpFusion = entry.fpFusion;
    options.arch = entry.kernel.arch();
    options.backend = entry.kernel.compiled().backend;
    py::gil_scoped_release nogil;
    recompiled = compileKernel(entry.file, entry.kernel.name(), entry.kernel.signature(), entry.constexprs,
                               options, Stage::PTX);
    stages = &recompiled;
  }
  const CompiledKernel &c = *stages;
  py::dict out;
  // The AST of the whole (reduced) file the kernel came from.
  out["ast"] = py::str(ast::printAST(ast::parseModule(entry.file, /*recoverFunctionBodies=*/true)));
  out["ir"] = py::str(c.ir);
  out["ir-opt"] = py::str(c.irOpt);
  out["llvm"] = py::str(c.llvmIR);
  out["cuda"] = py::str(c.cuda); // the NVRTC back-end's CUDA C++ ("" with the LLVM back-end)
  out["ptx"] = py::str(entry.kernel.ptx()); // the PTX the kernel runs
  return out;
}

py::dict attributesOf(const rt::LoadedKernel &k) {
  const rt::FunctionAttributes &a = k.attributes();
  py::dict out;
  out["device"] = k.device();
  out["n_regs"] = a.registers;
  out["n_spills"] = a.localBytes; // local memory per thread (spills and local arrays)
  out["shared_static"] = a.staticSharedBytes;
  out["shared_dynamic"] = k.sharedBytes();
  out["const_bytes"] = a.constBytes;
  out["max_threads_per_block"] = a.maxThreadsPerBlock;
  out["max_dynamic_shared"] = a.maxDynamicSharedBytes;
  out["ptx_version"] = a.ptxVersion;
  out["binary_version"] = a.binaryVersion;
  out["num_warps"] = k.numWarps();
  return out;
}

} // namespace

std::shared_ptr<const SourceFile> makeSourceFile(std::string text, std::string path,
                                                 uint32_t firstLine) {
  auto file = std::make_shared<SourceFile>();
  file->text = std::move(text);
  file->path = path.empty() ? std::string("<source>") : std::move(path);
  file->firstLine = firstLine == 0 ? 1 : firstLine;
  return file;
}

std::vector<ParamInfo> kernelParameters(const std::shared_ptr<const SourceFile> &file,
                                        const std::string &kernelName) {
  ast::Module module = ast::parseModule(file, /*recoverFunctionBodies=*/true);
  for (const auto &s : module.body) {
    if (s->kind != ast::StmtKind::FunctionDef) continue;
    auto *fn = static_cast<const ast::FunctionDef *>(s.get());
    if (fn->name != kernelName) continue;
    std::vector<ParamInfo> params;
    for (const ast::Param &p : fn->params)
      params.push_back({p.name, isConstexprAnnotation(p.annotation.get()), p.defaultValue != nullptr});
    return params;
  }
  std::string known;
  for (const std::string &n : jitFunctionNames(module)) appendJoined(known, ", ", n);
  raiseError(*file, SourceLoc{},
             "no @jit function named '" + kernelName + "' in this file" +
                 (known.empty() ? std::string(" (it defines none)") : " (it defines: " + known + ")"));
}

void registerCompile(py::module_ &m) {
  m.def("version", &versionString, "\"tessera X.Y.Z (LLVM 19.1.7)\"");
  m.def("is_supported_arch", [](const std::string &arch) { return isSupportedArch(arch); });
  m.def("parse_signature",
        [](const std::string &text) { return signatureText(parseSignature(text)); },
        "Normalises a signature string (ValueError naming a bad entry).");

  m.def(
      "kernel_parameters",
      [](std::string source, std::string path, uint32_t firstLine, const std::string &kernelName) {
        py::list out;
        for (const ParamInfo &p : kernelParameters(makeSourceFile(std::move(source), std::move(path), firstLine),
                                                   kernelName))
          out.append(py::make_tuple(p.name, p.isConstexpr, p.hasDefault));
        return out;
      },
      py::arg("source"), py::arg("path"), py::arg("first_line"), py::arg("kernel_name"),
      "[(name, is_constexpr, has_default)] for each parameter of the kernel, in order.");

  py::class_<CompiledEntry, std::shared_ptr<CompiledEntry>>(m, "CompiledKernel")
      .def_property_readonly("name", [](const CompiledEntry &e) { return e.kernel.name(); })
      .def_property_readonly("num_warps", [](const CompiledEntry &e) { return e.kernel.numWarps(); })
      .def_property_readonly("num_stages", [](const CompiledEntry &e) { return e.numStages; })
      .def_property_readonly("shared", [](const CompiledEntry &e) { return e.kernel.sharedBytes(); })
      .def_property_readonly("arch", [](const CompiledEntry &e) { return e.kernel.arch(); })
      .def_property_readonly("backend", [](const CompiledEntry &e) { return e.kernel.compiled().backend; },
                             "The back-end that made the PTX: 'llvm' or 'nvrtc'")
      .def_property_readonly("from_cache", [](const CompiledEntry &e) { return e.kernel.fromCache(); },
                             "True when the PTX came from the disk cache (no compile ran)")
      .def_property_readonly("path", [](const CompiledEntry &e) { return e.file->path; })
      .def_property_readonly("ptx", [](const CompiledEntry &e) { return e.kernel.ptx(); },
                             "The PTX the kernel runs (no other stage is compiled again for it)")
      .def_property_readonly("maxnreg",
                             [](const CompiledEntry &e) {
                               return e.maxRegisters ? py::object(py::int_(e.maxRegisters)) : py::object(py::none());
                             })
      .def_property_readonly("enable_fp_fusion",
                             [](const CompiledEntry &e) {
                               return e.fpFusion >= 0 ? py::object(py::bool_(e.fpFusion != 0)) : py::object(py::none());
                             },
                             "The launch option as given; None: TESSERA_FP_FUSION decided (default on)")
      .def_property_readonly("signature",
                             [](const CompiledEntry &e) { return signatureText(e.kernel.signature()); })
      .def_property_readonly("constexprs",
                             [](const CompiledEntry &e) {
                               py::dict out;
                               for (const auto &[k, v] : e.constexprs) out[py::str(k)] = fromConstexpr(v);
                               return out;
                             })
      .def_property_readonly("params",
                             [](const CompiledEntry &e) {
                               py::list out;
                               for (const ParamInfo &p : e.params)
                                 out.append(py::make_tuple(p.name, p.isConstexpr, p.hasDefault));
                               return out;
                             })
      .def("asm", &asmOf, "{'ast', 'ir', 'ir-opt', 'llvm', 'ptx'} as text")
      .def(
          "load",
          [](const CompiledEntry &e, int device) {
            const rt::LoadedKernel *k = nullptr;
            {
              py::gil_scoped_release nogil;
              k = &e.kernel.load(device);
            }
            return attributesOf(*k);
          },
          py::arg("device") = rt::kCurrentDevice,
          "Links the PTX to a cubin and loads it on the device (once per device); returns the "
          "function's attributes (n_regs, n_spills, ...).")
      .def(
          "cubin",
          [](const CompiledEntry &e, int device) {
            std::vector<char> bytes = e.kernel.cubin(device);
            return py::bytes(bytes.data(), bytes.size());
          },
          py::arg("device") = rt::kCurrentDevice, "The cubin linked for the device (b'' before load()).")
      .def(
          "assemble",
          [](const CompiledEntry &e, const std::string &deviceArch) {
            py::gil_scoped_release nogil; // ptxas runs as a subprocess: threads compile in parallel
            return e.kernel.assembleFor(deviceArch);
          },
          py::arg("device_arch"),
          "Runs ptxas now for devices of device_arch ('sm_90'), without a GPU, and keeps the cubin in "
          "the kernel cache, so that loading on such a device only loads it. False when the PTX JIT is "
          "not ptxas or the kernel is not cached.")
      .def(
          "launch",
          [](const std::shared_ptr<CompiledEntry> &e, py::handle grid, py::tuple args, py::handle stream) {
            launchCompiled(e, grid, args, stream);
          },
          py::arg("grid"), py::arg("args"), py::arg("stream") = py::none())
      .def(
          "run_triton_order",
          [](const std::shared_ptr<CompiledEntry> &e, py::args a) {
            // Triton's CompiledKernel.run(grid_0, grid_1, grid_2, stream, function, packed_metadata,
            // launch_metadata, launch_enter_hook, launch_exit_hook, *args): what torch's Inductor calls.
            constexpr size_t kFixed = 9;
            if (a.size() < kFixed)
              throw py::type_error(e->kernel.name() + ".run() takes grid_0, grid_1, grid_2, stream, function, "
                                   "packed_metadata, launch_metadata, launch_enter_hook, launch_exit_hook and the "
                                   "kernel's arguments; " + std::to_string(a.size()) + " given");
            py::tuple grid = py::make_tuple(a[0], a[1], a[2]);
            py::handle launchMetadata = a[6], enter = a[7], exitHook = a[8];
            py::tuple args = py::reinterpret_steal<py::tuple>(PyTuple_GetSlice(a.ptr(), kFixed, a.size()));
            if (!args) throw py::error_already_set();
            if (!enter.is_none()) enter(launchMetadata);
            launchCompiled(e, grid, args, a[3]);
            if (!exitHook.is_none()) exitHook(launchMetadata);
          },
          "Launches with Triton's CompiledKernel.run argument order (the compatibility mode's run, "
          "docs/torch-compile.md): the grid, the stream, three values it does not need, the launch "
          "metadata, the enter and exit hooks (called with it when not None), then every parameter or the "
          "runtime ones.");

  m.def(
      "compile",
      [](std::string source, std::string path, uint32_t firstLine, const std::string &kernelName,
         py::handle signature, py::handle constexprs, unsigned numWarps, unsigned numStages,
         std::string arch, std::string backend, unsigned maxRegisters, int fpFusion, bool debug,
         const std::string &assembleFor) {
        if (!isBackendName(backend))
          throw py::value_error("backend must be 'llvm' or 'nvrtc', got '" + backend + "'");
        auto entry = std::make_shared<CompiledEntry>();
        entry->file = makeSourceFile(std::move(source), std::move(path), firstLine);
        entry->params = kernelParameters(entry->file, kernelName);
        if (!constexprs.is_none()) {
          for (auto item : py::reinterpret_borrow<py::dict>(constexprs)) {
            std::string name = py::str(item.first);
            entry->constexprs[name] = toConstexpr(item.second, kernelName, name);
          }
        }
        std::vector<ArgSpec> specs = signatureWithTuples(entry->file, kernelName, joinSignature(signature),
                                                         entry->constexprs);
        CompileOptions options;
        options.numWarps = numWarps;
        options.numStages = numStages;
        options.arch = arch.empty() ? targetArch(rt::kCurrentDevice) : arch;
        options.backend = backend;
        options.maxRegisters = maxRegisters;
        options.fpFusion = fpFusion;
        options.debug = debug;
        entry->numWarps = numWarps;
        entry->numStages = numStages;
        entry->maxRegisters = maxRegisters;
        entry->fpFusion = fpFusion;
        entry->backend = backend;
        {
          py::gil_scoped_release nogil; // parallel compiles from threads; disk cache I/O
          entry->kernel =
              compileCached(entry->file, kernelName, std::move(specs), entry->constexprs, options, nullptr, assembleFor);
        }
        return entry;
      },
      py::arg("source"), py::arg("path"), py::arg("first_line"), py::arg("kernel_name"),
      py::arg("signature"), py::arg("constexprs") = py::none(), py::arg("num_warps") = 4,
      py::arg("num_stages") = 3, py::arg("arch") = "sm_90a", py::arg("backend") = "", py::arg("maxnreg") = 0,
      py::arg("fp_fusion") = -1, py::arg("debug") = false, py::arg("assemble_for") = "",
      "Compiles one specialisation to PTX without a GPU (arch '' = the current GPU's; backend "
      "'llvm', 'nvrtc' or '' for TESSERA_BACKEND; fp_fusion -1: TESSERA_FP_FUSION decides, 0 off, 1 on; "
      "debug: tl.device_assert checked, as TESSERA_DEBUG; assemble_for: the device architecture whose "
      "assemble() comes next: on a cache miss ptxas starts while the kernel compiles).");

  m.def(
      "nvrtc_status",
      [] {
        const codegen::NvrtcStatus &s = codegen::nvrtcStatus();
        py::dict out;
        out["available"] = s.available;
        out["library"] = s.library;
        out["version"] = py::make_tuple(s.major, s.minor);
        out["error"] = s.error;
        return out;
      },
      "Whether NVRTC (the nvrtc back-end's compiler) loads: {available, library, version, error}.");
  m.def("add_nvrtc_search_directory", &codegen::addNvrtcSearchDirectory, py::arg("dir"),
        "One more folder to look for libnvrtc in (before NVRTC is first used).");
  m.def(
      "nvrtc_compile",
      [](const std::string &source, const std::string &name, const std::string &arch, bool fmad) {
        py::gil_scoped_release nogil;
        return codegen::nvrtcCompileToPtx(source, name, arch, fmad);
      },
      py::arg("source"), py::arg("name"), py::arg("arch") = "sm_90a", py::arg("fmad") = true,
      "CUDA C++ to PTX with NVRTC as the nvrtc back-end calls it (RuntimeError with NVRTC's log); "
      "fmad: contraction, as the fp_fusion compile option.");
  m.def(
      "default_backend", [] { return resolveBackend(CompileOptions{}); },
      "The back-end used when none is asked for: TESSERA_BACKEND, else 'llvm'.");
}

} // namespace tessera::python
