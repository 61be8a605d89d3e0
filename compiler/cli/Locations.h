// Where the `tessera` command finds what ships beside it, resolved from the
// executable's own location so that a copied build, an installed prefix and
// a wheel all work without environment variables:
//
//   build tree     <checkout>/build/bin/tessera   kernels: <checkout>/kernels/
//   cmake install  PREFIX/bin/tessera              kernels: PREFIX/share/tessera/kernels/
//   wheel          site-packages/tessera/bin/tessera  kernels: site-packages/tessera/kernels/src/
//
// $TESSERA_KERNELS_DIR, when set, is the only place looked at; the checkout the binary was built
// from (TESSERA_SOURCE_DIR at compile time) is the last resort.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace tessera::cli {

// The running executable (/proc/self/exe), empty when it cannot be read.
std::filesystem::path executablePath();

// True for the copy a wheel carries: <package>/bin/tessera beside the
// Python package's __init__.py.
bool runsFromPythonPackage();

// The folders that may hold the bundled kernels (kernels/*.py and
// manifest.txt), in the order they are tried.
std::vector<std::filesystem::path> bundledKernelDirs();

// The bundled manifest.txt: the first of bundledKernelDirs() that holds one;
// std::runtime_error naming every folder tried when none does.
std::filesystem::path bundledManifest();

} // namespace tessera::cli
