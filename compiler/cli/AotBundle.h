// `tessera aot --emit cpp`: the C++ source/header pair of an ahead-of-time
// bundle (docs/cli.md, "C++ bundles"). The kernels come compiled (cubins for
// each architecture asked for, or PTX); this file only writes them out as C++
// with one typed launch function per kernel, which picks the variant whose
// specialisation the arguments fit (16-byte aligned pointers, ints that are
// multiples of 16 or equal to 1) and the image that fits the device.
//
// The generated code needs only cuda.h and the CUDA driver, which it opens at
// run time (dlopen of libcuda.so.1): no Python, no LLVM, no NVRTC, no tessera.
#pragma once

#include "dsl/Specializer.h"

#include <map>
#include <string>
#include <vector>

namespace tessera::cli {

// One compiled image of a variant.
struct AotImage {
  std::string arch;   // "sm_90a"
  bool cubin = true;  // else PTX, compiled by the driver on first use
  std::string bytes;  // the cubin, or the PTX text
  unsigned numWarps = 4; // launched (the compiler's count, a producer warpgroup included)
  unsigned sharedBytes = 0; // dynamic shared memory per block
};

// One specialisation of a launch function: a signature with its hints.
struct AotVariant {
  std::vector<ArgSpec> signature;
  std::string signatureText; // "*fp32:16,*fp32:16,i32"
  std::string origin;        // "manifest.txt:3", or "added: no hints" for the generic variant
  std::vector<AotImage> images; // one per architecture (and PTX)
};

// One typed launch function: a kernel with fixed constexprs and options whose
// variants differ only in their hints.
struct AotFunction {
  std::string name;     // the C++ name (manifest `as=NAME`, else the kernel's)
  std::string file;     // the kernel file, as the manifest names it
  std::string kernel;   // the @jit function (the PTX entry)
  std::vector<std::string> paramNames; // the runtime parameters, in order
  std::map<std::string, ConstexprValue> constexprs;
  unsigned numWarps = 4;
  unsigned maxRegisters = 0;
  std::vector<AotVariant> variants; // in dispatch order: the most hints first
};

struct AotBundle {
  std::string name;    // namespace and file names (a C++ identifier)
  std::string command; // the command line that made it, for the header's comment
  std::string version; // tessera's
  std::string imagesNote; // "cubins for sm_90a, sm_80 (ptxas 13.0.88)"
  std::vector<AotFunction> functions;
};

struct AotSources {
  std::string header; // NAME.h
  std::string source; // NAME.cpp
};

// Throws std::invalid_argument for a name the bundle cannot use (a C++
// keyword, two functions of one name, a clash with the bundle's own API).
AotSources generateBundle(const AotBundle &bundle);

// Whether `name` is one of the bundle's own (Grid, load, variant, ...), which a
// launch function cannot take.
bool isBundleApiName(const std::string &name);

// Whether `name` can name a C++ namespace or function: an identifier that is
// not a keyword.
bool isCppIdentifier(const std::string &name);

} // namespace tessera::cli
