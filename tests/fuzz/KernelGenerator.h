// The structured kernel generator of fuzz_pipeline (FuzzPipeline.cpp): it
// reads the fuzzer's bytes as a stream of choices and writes a well-formed
// tessera kernel `k` with its signature, constexprs and compile options
// (docs/fuzzing.md lists what it generates). The same bytes always give the
// same kernel: a corpus entry or a crash reproducer stands for one kernel.
#pragma once

#include "compiler/driver/Compiler.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tessera::fuzz {

// One generated kernel and what compileKernel needs besides its source.
struct GeneratedKernel {
  std::string source;
  std::vector<tessera::ArgSpec> signature;
  std::string signatureText; // the signature as `tessera compile --signature` spells it
  std::map<std::string, tessera::ConstexprValue> constexprs;
  tessera::CompileOptions options;
};

// Past the end of the bytes every choice is 0, so any input gives a kernel.
GeneratedKernel generateKernel(const uint8_t *data, size_t size);

} // namespace tessera::fuzz
