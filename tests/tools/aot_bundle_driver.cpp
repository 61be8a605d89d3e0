// Drives a C++ bundle of `tessera aot --emit cpp` (tests/python/test_aot_cpp.py)
// through the fake CUDA driver: the test generates the bundle from
// tests/python/aot_manifest.txt (launch functions vector_add, copy2d, transpose) and
// compiles it with this file, -DTESSERA_AOT_LIBCUDA naming the fake. One line
// per launch on stdout, for the test to check:
//   CASE <name> rc=<CUresult> variant=<signature|-> image=<arch>:<cubin|ptx>|- error=<last_error()>
//   LAUNCH kernel=<name> grid=x,y,z block=x,y,z shared=N stream=S params=<hex,...|?> passed=<hex,...>
//
//   aot_bundle_driver run     the launches below, on device 0 of the fake
//   aot_bundle_driver noctx   one launch with no context current
//   aot_bundle_driver dump DIR  every embedded image to DIR/<function>.<variant>.<arch>.<cubin|ptx>
#include "tessera_aot.h"

#include "fake_libcuda.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <dlfcn.h>

namespace {

void *g_fake = nullptr;

void *fakeSymbol(const char *name) {
  using GetProcAddress = CUresult (*)(const char *, void **, int, unsigned long long, void *);
  if (!g_fake) g_fake = dlopen(TESSERA_AOT_LIBCUDA, RTLD_NOW);
  if (!g_fake) {
    std::fprintf(stderr, "cannot open %s: %s\n", TESSERA_AOT_LIBCUDA, dlerror());
    std::exit(2);
  }
  if (void *exported = dlsym(g_fake, name)) return exported;
  auto getProc = reinterpret_cast<GetProcAddress>(dlsym(g_fake, "cuGetProcAddress_v2"));
  void *fn = nullptr;
  getProc(name, &fn, 12000, 0, nullptr);
  if (!fn) {
    std::fprintf(stderr, "the fake driver has no %s\n", name);
    std::exit(2);
  }
  return fn;
}

void makeContextCurrent() {
  auto init = reinterpret_cast<CUresult (*)(unsigned)>(fakeSymbol("cuInit"));
  auto retain = reinterpret_cast<CUresult (*)(CUcontext *, CUdevice)>(fakeSymbol("cuDevicePrimaryCtxRetain"));
  auto setCurrent = reinterpret_cast<CUresult (*)(CUcontext)>(fakeSymbol("cuCtxSetCurrent"));
  CUcontext context = nullptr;
  if (init(0) || retain(&context, 0) || setCurrent(context)) {
    std::fprintf(stderr, "the fake driver made no context\n");
    std::exit(2);
  }
}

uint64_t launchCount() {
  return reinterpret_cast<uint64_t (*)()>(fakeSymbol("tessera_fake_launch_count"))();
}

std::string hex(uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof text, "%llx", static_cast<unsigned long long>(v));
  return text;
}

// Prints what the bundle chose and, if the fake saw a new launch, what it was given.
void report(const char *name, CUresult rc, uint64_t launchesBefore, const std::vector<uint64_t> &passed) {
  tessera_aot::Launch l = tessera_aot::last_launch();
  std::printf("CASE %s rc=%d variant=%s image=%s%s%s error=%s\n", name, int(rc),
              l.variant ? l.variant->signature : "-", l.image ? l.image->arch : "-",
              l.image ? (l.image->cubin ? ":cubin" : ":ptx") : "", "", tessera_aot::last_error());
  if (launchCount() == launchesBefore) return;
  auto last = reinterpret_cast<const tessera_fake_launch *(*)()>(fakeSymbol("tessera_fake_last_launch"))();
  std::string params, given;
  if (last->num_params < 0) params = "?";
  for (int i = 0; i < last->num_params; ++i) params += (i ? "," : "") + hex(last->params[i]);
  for (size_t i = 0; i < passed.size(); ++i) given += (i ? "," : "") + hex(passed[i]);
  std::printf("LAUNCH kernel=%s grid=%u,%u,%u block=%u,%u,%u shared=%u stream=%s params=%s passed=%s\n",
              last->kernel, last->grid[0], last->grid[1], last->grid[2], last->block[0], last->block[1],
              last->block[2], last->shared_bytes, hex(last->stream).c_str(), params.c_str(), given.c_str());
}

uint64_t bits(const void *p) { return reinterpret_cast<uintptr_t>(p); }
uint64_t bits(int32_t v) { return static_cast<uint32_t>(v); }

CUresult vectorAdd(const char *name, float *x, float *y, float *out, int32_t n, CUstream stream) {
  using tessera_aot::vector_add_config;
  tessera_aot::Grid grid{unsigned((n + vector_add_config::BLOCK_SIZE - 1) / vector_add_config::BLOCK_SIZE)};
  uint64_t before = launchCount();
  CUresult rc = tessera_aot::vector_add(grid, stream, x, y, out, n);
  report(name, rc, before, {bits(x), bits(y), bits(out), bits(n)});
  return rc;
}

void copy2d(const char *name, float *src, float *dst, int32_t rows, int32_t cols, int32_t srcStride,
            int32_t dstStride) {
  using tessera_aot::copy2d_config;
  tessera_aot::Grid grid{unsigned((rows + copy2d_config::BLOCK_M - 1) / copy2d_config::BLOCK_M),
                         unsigned((cols + copy2d_config::BLOCK_N - 1) / copy2d_config::BLOCK_N)};
  uint64_t before = launchCount();
  CUresult rc = tessera_aot::copy2d(grid, nullptr, src, dst, rows, cols, srcStride, dstStride);
  report(name, rc, before, {bits(src), bits(dst), bits(rows), bits(cols), bits(srcStride), bits(dstStride)});
}

void transpose(const char *name, float *src, float *dst) {
  uint64_t before = launchCount();
  CUresult rc = tessera_aot::transpose(tessera_aot::Grid{1}, nullptr, src, dst);
  report(name, rc, before, {bits(src), bits(dst)});
}

int run() {
  makeContextCurrent();
  // The fake runs no kernel: the buffers only give the pointers an alignment.
  auto *buffer = static_cast<float *>(std::aligned_alloc(256, 1 << 16));
  float *x = buffer, *y = buffer + 1024, *out = buffer + 2048;
  CUstream stream = reinterpret_cast<CUstream>(uintptr_t(0x5000));
  vectorAdd("va_aligned", x, y, out, 3000, stream);
  vectorAdd("va_unaligned", x + 1, y, out, 3000, stream);
  vectorAdd("va_unaligned_out", x, y, out + 2, 3000, stream);
  vectorAdd("va_n1", x, y, out, 1, stream);
  copy2d("c2_one_row", x, y, 1, 50, 64, 64);
  copy2d("c2_rows", x, y, 3, 50, 64, 64);
  copy2d("c2_stride", x, y, 1, 50, 65, 64);
  copy2d("c2_unaligned", x, y + 3, 1, 50, 64, 64);
  transpose("tr_big_shared", x, y); // 64 KB of shared memory: the bundle opts in
  // load() is a no-op for what is loaded; after unload() a launch loads again.
  CUresult rc = tessera_aot::load();
  std::printf("CASE load rc=%d error=%s\n", int(rc), tessera_aot::last_error());
  tessera_aot::unload();
  vectorAdd("va_after_unload", x, y, out, 3000, stream);
  std::free(buffer);
  return 0;
}

int noContext() {
  float *p = reinterpret_cast<float *>(uintptr_t(0x1000));
  vectorAdd("va_no_context", p, p, p, 16, nullptr);
  return 0;
}

int dump(const std::string &dir) {
  for (size_t i = 0; i < tessera_aot::variant_count(); ++i) {
    const tessera_aot::Variant &v = tessera_aot::variant(i);
    for (size_t j = 0; j < v.image_count; ++j) {
      const tessera_aot::Image &image = v.images[j];
      std::string path = dir + "/" + v.function + "." + std::to_string(i) + "." + image.arch +
                         (image.cubin ? ".cubin" : ".ptx");
      FILE *f = std::fopen(path.c_str(), "wb");
      if (!f || std::fwrite(image.data, 1, image.size, f) != image.size || std::fclose(f)) {
        std::fprintf(stderr, "cannot write %s\n", path.c_str());
        return 1;
      }
      std::printf("IMAGE %s %s %s %s warps=%u shared=%u\n", path.c_str(), v.function, v.signature, image.arch,
                  image.num_warps, image.shared_bytes);
    }
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  std::string command = argc > 1 ? argv[1] : "";
  if (command == "run") return run();
  if (command == "noctx") return noContext();
  if (command == "dump" && argc > 2) return dump(argv[2]);
  std::fprintf(stderr, "usage: aot_bundle_driver run | noctx | dump DIR\n");
  return 2;
}
