#include "compiler/cli/Locations.h"

#include <cstdlib>
#include <stdexcept>
#include <system_error>

namespace fs = std::filesystem;

namespace tessera::cli {

fs::path executablePath() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe;
}

bool runsFromPythonPackage() {
  fs::path exe = executablePath();
  std::error_code ec;
  return !exe.empty() && fs::exists(exe.parent_path().parent_path() / "__init__.py", ec);
}

std::vector<fs::path> bundledKernelDirs() {
  std::vector<fs::path> dirs;
  if (const char *env = std::getenv("TESSERA_KERNELS_DIR"); env && *env) return {fs::path(env)}; // an override
  if (fs::path exe = executablePath(); !exe.empty()) {
    fs::path above = exe.parent_path().parent_path(); // bin/.. : the package, the prefix or the build tree
    dirs.push_back(above / "kernels" / "src");
    dirs.push_back(above / "share" / "tessera" / "kernels");
    dirs.push_back(above.parent_path() / "kernels"); // <checkout>/build/bin/tessera, copied builds included
  }
#ifdef TESSERA_SOURCE_DIR
  dirs.push_back(fs::path(TESSERA_SOURCE_DIR) / "kernels");
#endif
  return dirs;
}

fs::path bundledManifest() {
  std::string tried;
  for (const fs::path &dir : bundledKernelDirs()) {
    std::error_code ec;
    if (fs::is_regular_file(dir / "manifest.txt", ec)) return dir / "manifest.txt";
    tried += (tried.empty() ? "" : ", ") + dir.string();
  }
  throw std::runtime_error("no manifest named and no bundled kernels/manifest.txt found (looked in " + tried +
                           "); name one or set TESSERA_KERNELS_DIR");
}

} // namespace tessera::cli
