/* A fake CUDA driver for tests and host-side benchmarks on machines without
 * a GPU: load it with TESSERA_LIBCUDA=<build>/lib/libtessera_fake_cuda.so.
 *
 * It exports what runtime/Driver.cpp looks for (cuDriverGetVersion and
 * cuGetProcAddress_v2, which hands out every entry point of
 * runtime/DriverApi.h's table), pretends to be one sm_90 device, and does
 * no GPU work:
 *   - cuLinkComplete returns the PTX it was given as the "cubin", so that
 *     cuModuleGetFunction can read the kernel's parameter list from the
 *     .entry directive (the sizes of its parameters);
 *   - cuLaunchKernel refuses more dynamic shared memory than the function
 *     allows (48 KB unless cuFuncSetAttribute raised it), as the real one does;
 *   - cuLaunchKernel returns CUDA_SUCCESS after recording the launch (the
 *     function's name, grid, block, shared memory, stream and each
 *     parameter's value, read through kernelParams with the sizes above,
 *     also laid out in a parameter block with the PTX's alignments, as the
 *     real driver does);
 *   - cuTensorMapEncodeTiled checks the hardware's rules as the real one
 *     does, records its arguments and writes them packed into the 128-byte
 *     map (fake_libcuda.h), so that tests can find those bytes again in a
 *     launch's parameter block;
 *   - cuLaunchKernelEx records the launch as cuLaunchKernel does, and a
 *     cooperative one (CU_LAUNCH_ATTRIBUTE_COOPERATIVE) and a programmatic dependent
 *     one (..._PROGRAMMATIC_STREAM_SERIALIZATION) as such; a cooperative
 *     grid larger than the fake device holds at once (132 SMs of 2048 threads,
 *     at most 32 blocks each) gets CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
 *   - cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_DEVICE_POINTER) knows the
 *     host ranges a test declared pinned (tessera_fake_pin_host_memory: mapped
 *     at the same address, as with unified addressing) and answers
 *     CUDA_ERROR_INVALID_VALUE for any other address;
 *   - device memory is host memory (cuMemAlloc = aligned_alloc), so copies
 *     and memsets work; events time nothing; graph capture is unsupported.
 * Tests read the records back (fake_libcuda.h: tessera_fake_last_launch,
 * tessera_fake_last_tensor_map and friends, below; tests/fake_driver/fake_cuda.py
 * wraps them for Python).
 *
 * Environment: TESSERA_FAKE_CUDA_DEVICES (default 1) and
 * TESSERA_FAKE_CUDA_CC (compute capability as 90, 80 ...; default 90).
 * Reported driver version: 99000, a number no real driver has, so that the
 * disk cache never files the fake's "cubins" under a real driver's tag. */
#include "fake_libcuda.h"

#include <cuda.h>
#include <cudaTypedefs.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

enum { kMaxDevices = 16, kMaxParams = kFakeMaxParams, kNameSize = 256, kFakeDriverVersion = 99000 };

/* ---- what the tests read back (fake_libcuda.h) ---------------------------- */

static struct tessera_fake_launch last_launch;
static uint64_t launch_count;
static struct tessera_fake_tensor_map last_tensor_map;
static uint64_t tensor_map_count;
static CUresult fail_next_tensor_map = CUDA_SUCCESS;
static int init_called;
static uint64_t link_count; /* cuLinkCreate calls */

EXPORT const struct tessera_fake_launch *tessera_fake_last_launch(void) { return &last_launch; }
EXPORT uint64_t tessera_fake_launch_count(void) { return launch_count; }
EXPORT const struct tessera_fake_tensor_map *tessera_fake_last_tensor_map(void) { return &last_tensor_map; }
EXPORT uint64_t tessera_fake_tensor_map_count(void) { return tensor_map_count; }
/* The next cuTensorMapEncodeTiled returns `result` (after its own checks pass), as a real driver may. */
EXPORT void tessera_fake_fail_next_tensor_map(int result) { fail_next_tensor_map = (CUresult)result; }
EXPORT int tessera_fake_initialized(void) { return init_called; }
EXPORT uint64_t tessera_fake_link_count(void) { return link_count; }
/* Pinned host memory (torch's pin_memory()) that cuPointerGetAttribute maps to the device. */
enum { kMaxPinned = 16 };
static struct { uint64_t address, bytes; } pinned[kMaxPinned];
static int pinned_count;
EXPORT void tessera_fake_pin_host_memory(uint64_t address, uint64_t bytes) {
  if (pinned_count < kMaxPinned) pinned[pinned_count].address = address, pinned[pinned_count++].bytes = bytes;
}
EXPORT void tessera_fake_reset(void) {
  pinned_count = 0;
  memset(&last_launch, 0, sizeof last_launch);
  launch_count = 0;
  memset(&last_tensor_map, 0, sizeof last_tensor_map);
  tensor_map_count = 0;
  fail_next_tensor_map = CUDA_SUCCESS;
}

/* ---- devices and contexts ------------------------------------------------ */

struct fake_context { int device; };
static struct fake_context contexts[kMaxDevices];
static __thread struct fake_context *current_context;

static int env_int(const char *name, int fallback) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : fallback;
}
static int device_count(void) {
  int n = env_int("TESSERA_FAKE_CUDA_DEVICES", 1);
  return n < 0 ? 0 : n > kMaxDevices ? kMaxDevices : n;
}
static int valid_device(CUdevice d) { return d >= 0 && d < device_count(); }

static CUresult fake_cuInit(unsigned flags) {
  (void)flags;
  init_called = 1;
  for (int i = 0; i < kMaxDevices; ++i) contexts[i].device = i;
  return CUDA_SUCCESS;
}
static CUresult fake_cuDriverGetVersion(int *v) {
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  *v = kFakeDriverVersion;
  return CUDA_SUCCESS;
}
static CUresult fake_cuDeviceGetCount(int *count) {
  *count = device_count();
  return CUDA_SUCCESS;
}
static CUresult fake_cuDeviceGet(CUdevice *device, int ordinal) {
  if (ordinal < 0 || ordinal >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}
static CUresult fake_cuDeviceGetName(char *name, int len, CUdevice d) {
  if (!valid_device(d)) return CUDA_ERROR_INVALID_DEVICE;
  snprintf(name, (size_t)len, "tessera fake CUDA device %d", d);
  return CUDA_SUCCESS;
}
static CUresult fake_cuDeviceGetAttribute(int *value, CUdevice_attribute a, CUdevice d) {
  if (!valid_device(d)) return CUDA_ERROR_INVALID_DEVICE;
  int cc = env_int("TESSERA_FAKE_CUDA_CC", 90);
  switch (a) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = cc / 10; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = cc % 10; break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = 132; break;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *value = 48 * 1024; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *value = 227 * 1024; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *value = 228 * 1024; break;
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: *value = 65536; break;
  case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *value = 32; break;
  default: *value = 0; break;
  }
  return CUDA_SUCCESS;
}
static CUresult fake_cuDeviceTotalMem(size_t *bytes, CUdevice d) {
  if (!valid_device(d)) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = (size_t)80 << 30;
  return CUDA_SUCCESS;
}
static CUresult fake_cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice d) {
  if (!valid_device(d)) return CUDA_ERROR_INVALID_DEVICE;
  *ctx = (CUcontext)&contexts[d];
  return CUDA_SUCCESS;
}
static CUresult fake_cuCtxGetCurrent(CUcontext *ctx) {
  *ctx = (CUcontext)current_context;
  return CUDA_SUCCESS;
}
static CUresult fake_cuCtxSetCurrent(CUcontext ctx) {
  current_context = (struct fake_context *)ctx;
  return CUDA_SUCCESS;
}
static CUresult fake_cuCtxGetDevice(CUdevice *d) {
  if (!current_context) return CUDA_ERROR_INVALID_CONTEXT;
  *d = current_context->device;
  return CUDA_SUCCESS;
}
static CUresult fake_cuCtxSynchronize(void) { return current_context ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT; }

/* ---- errors -------------------------------------------------------------- */

static const char *error_name(CUresult r, const char **text) {
  switch (r) {
  case CUDA_SUCCESS: *text = "no error"; return "CUDA_SUCCESS";
  case CUDA_ERROR_INVALID_VALUE: *text = "invalid argument"; return "CUDA_ERROR_INVALID_VALUE";
  case CUDA_ERROR_OUT_OF_MEMORY: *text = "out of memory"; return "CUDA_ERROR_OUT_OF_MEMORY";
  case CUDA_ERROR_NO_DEVICE: *text = "no CUDA-capable device is detected"; return "CUDA_ERROR_NO_DEVICE";
  case CUDA_ERROR_INVALID_DEVICE: *text = "invalid device ordinal"; return "CUDA_ERROR_INVALID_DEVICE";
  case CUDA_ERROR_INVALID_CONTEXT: *text = "invalid device context"; return "CUDA_ERROR_INVALID_CONTEXT";
  case CUDA_ERROR_INVALID_HANDLE: *text = "invalid resource handle"; return "CUDA_ERROR_INVALID_HANDLE";
  case CUDA_ERROR_NOT_FOUND: *text = "named symbol not found"; return "CUDA_ERROR_NOT_FOUND";
  case CUDA_ERROR_NOT_SUPPORTED: *text = "operation not supported (by the fake driver)"; return "CUDA_ERROR_NOT_SUPPORTED";
  default: return NULL;
  }
}
static CUresult fake_cuGetErrorName(CUresult r, const char **out) {
  const char *text;
  const char *name = error_name(r, &text);
  if (!name) return CUDA_ERROR_INVALID_VALUE;
  *out = name;
  return CUDA_SUCCESS;
}
static CUresult fake_cuGetErrorString(CUresult r, const char **out) {
  const char *text;
  if (!error_name(r, &text)) return CUDA_ERROR_INVALID_VALUE;
  *out = text;
  return CUDA_SUCCESS;
}

/* ---- linking, modules, functions ----------------------------------------- */

struct fake_link { char *ptx; size_t size; };

static CUresult fake_cuLinkCreate(unsigned n, CUjit_option *o, void **v, CUlinkState *state) {
  (void)n, (void)o, (void)v;
  struct fake_link *l = calloc(1, sizeof *l);
  if (!l) return CUDA_ERROR_OUT_OF_MEMORY;
  ++link_count;
  *state = (CUlinkState)l;
  return CUDA_SUCCESS;
}
static CUresult fake_cuLinkAddData(CUlinkState state, CUjitInputType type, void *data, size_t size,
                                   const char *name, unsigned n, CUjit_option *o, void **v) {
  (void)name, (void)n, (void)o, (void)v;
  struct fake_link *l = (struct fake_link *)state;
  if (type != CU_JIT_INPUT_PTX || !data) return CUDA_ERROR_INVALID_VALUE;
  free(l->ptx);
  l->ptx = malloc(size + 1);
  if (!l->ptx) return CUDA_ERROR_OUT_OF_MEMORY;
  memcpy(l->ptx, data, size);
  l->ptx[size] = 0;
  l->size = strlen(l->ptx) + 1;
  return CUDA_SUCCESS;
}
static CUresult fake_cuLinkComplete(CUlinkState state, void **cubin, size_t *size) {
  struct fake_link *l = (struct fake_link *)state;
  if (!l->ptx) return CUDA_ERROR_INVALID_VALUE;
  *cubin = l->ptx; /* the "cubin" is the PTX text, NUL included */
  *size = l->size;
  return CUDA_SUCCESS;
}
static CUresult fake_cuLinkDestroy(CUlinkState state) {
  struct fake_link *l = (struct fake_link *)state;
  if (l) free(l->ptx);
  free(l);
  return CUDA_SUCCESS;
}

struct fake_module { char *text; /* NULL: not PTX (a real cubin) */ };
struct fake_function {
  char name[kNameSize];
  int num_params; /* -1: unknown */
  int param_sizes[kMaxParams];
  int param_aligns[kMaxParams];
  int max_dynamic_shared;
};

static CUresult fake_cuModuleLoadData(CUmodule *module, const void *image) {
  if (!image) return CUDA_ERROR_INVALID_VALUE;
  struct fake_module *m = calloc(1, sizeof *m);
  if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
  if (memcmp(image, "\x7f" "ELF", 4) != 0) m->text = strdup((const char *)image);
  *module = (CUmodule)m;
  return CUDA_SUCCESS;
}
static CUresult fake_cuModuleUnload(CUmodule module) {
  struct fake_module *m = (struct fake_module *)module;
  if (m) free(m->text);
  free(m);
  return CUDA_SUCCESS;
}

/* The size in bytes of one PTX parameter declaration (".param .u64 .ptr
 * .global .align 1 k_param_0", ".param .align 8 .b8 k_param_1[16]"), and
 * its alignment: ".align N" before the type, else the type's size (an
 * ".align" after ".ptr" is the pointee's, not the parameter's). */
static int param_size(const char *p, const char *end, int *align) {
  static const struct { const char *type; int size; } types[] = {
      {".u64", 8}, {".s64", 8}, {".b64", 8}, {".f64", 8}, {".u32", 4}, {".s32", 4}, {".b32", 4},
      {".f32", 4}, {".u16", 2}, {".s16", 2}, {".b16", 2}, {".f16", 2}, {".bf16", 2}, {".u8", 1},
      {".s8", 1},  {".b8", 1},  {".pred", 1}};
  int size = 0;
  for (const char *q = p; q < end && !size; ++q)
    for (size_t i = 0; i < sizeof types / sizeof types[0]; ++i) {
      size_t n = strlen(types[i].type);
      if ((size_t)(end - q) >= n && memcmp(q, types[i].type, n) == 0 &&
          (q + n == end || q[n] == ' ' || q[n] == '\t' || q[n] == '\n')) {
        size = types[i].size;
        break;
      }
    }
  const char *q = p;
  while (q < end && (*q == ' ' || *q == '\t' || *q == '\n')) ++q;
  int element = size;
  const char *bracket = memchr(p, '[', (size_t)(end - p));
  if (bracket) size *= atoi(bracket + 1);
  *align = (end - q > 6 && memcmp(q, ".align", 6) == 0) ? atoi(q + 6) : element;
  if (*align < 1) *align = 1;
  return size;
}

static int parse_entry(const char *ptx, const char *name, struct fake_function *f) {
  size_t n = strlen(name);
  for (const char *p = strstr(ptx, ".entry"); p; p = strstr(p + 6, ".entry")) {
    const char *q = p + 6;
    while (*q == ' ' || *q == '\t') ++q;
    if (strncmp(q, name, n) != 0) continue;
    q += n;
    while (*q == ' ' || *q == '\t' || *q == '\n') ++q;
    if (*q != '(') continue;
    const char *close = strchr(q, ')');
    if (!close) return 0;
    f->num_params = 0;
    for (const char *s = strstr(q, ".param"); s && s < close && f->num_params < kMaxParams;
         s = strstr(s + 6, ".param")) {
      const char *e = s + 6;
      while (e < close && *e != ',') ++e;
      f->param_sizes[f->num_params] = param_size(s + 6, e, &f->param_aligns[f->num_params]);
      ++f->num_params;
    }
    return 1;
  }
  return 0;
}

static CUresult fake_cuModuleGetFunction(CUfunction *out, CUmodule module, const char *name) {
  struct fake_module *m = (struct fake_module *)module;
  if (!m || !name) return CUDA_ERROR_INVALID_VALUE;
  struct fake_function *f = calloc(1, sizeof *f); /* never freed: launch records point to its name */
  if (!f) return CUDA_ERROR_OUT_OF_MEMORY;
  snprintf(f->name, sizeof f->name, "%s", name);
  f->num_params = -1;
  f->max_dynamic_shared = 48 * 1024;
  if (m->text && !parse_entry(m->text, name, f)) {
    free(f);
    return CUDA_ERROR_NOT_FOUND;
  }
  *out = (CUfunction)f;
  return CUDA_SUCCESS;
}
static CUresult fake_cuFuncGetAttribute(int *value, CUfunction_attribute a, CUfunction fn) {
  struct fake_function *f = (struct fake_function *)fn;
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  switch (a) {
  case CU_FUNC_ATTRIBUTE_NUM_REGS: *value = 32; break;
  case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
  case CU_FUNC_ATTRIBUTE_PTX_VERSION: *value = 80; break;
  case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *value = env_int("TESSERA_FAKE_CUDA_CC", 90); break;
  case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *value = f->max_dynamic_shared; break;
  default: *value = 0; break;
  }
  return CUDA_SUCCESS;
}
static CUresult fake_cuFuncSetAttribute(CUfunction fn, CUfunction_attribute a, int value) {
  struct fake_function *f = (struct fake_function *)fn;
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  if (a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) f->max_dynamic_shared = value;
  return CUDA_SUCCESS;
}

/* ---- the launch ---------------------------------------------------------- */

static CUresult fake_cuLaunchKernel(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                    unsigned bz, unsigned shared, CUstream stream, void **params, void **extra) {
  struct fake_function *f = (struct fake_function *)fn;
  if (!f || extra) return CUDA_ERROR_INVALID_VALUE;
  if (!current_context) return CUDA_ERROR_INVALID_CONTEXT;
  /* As the real driver: more dynamic shared memory than the function opted in to is refused. */
  if ((int)shared > f->max_dynamic_shared) return CUDA_ERROR_INVALID_VALUE;
  struct tessera_fake_launch *l = &last_launch;
  l->count = ++launch_count;
  l->kernel = f->name;
  l->grid[0] = gx, l->grid[1] = gy, l->grid[2] = gz;
  l->block[0] = bx, l->block[1] = by, l->block[2] = bz;
  l->shared_bytes = shared;
  l->stream = (uint64_t)(uintptr_t)stream;
  l->device = current_context->device;
  l->num_params = f->num_params;
  int offset = 0;
  for (int i = 0; i < f->num_params; ++i) {
    int size = f->param_sizes[i], align = f->param_aligns[i];
    uint64_t v = 0;
    if (!params || !params[i]) return CUDA_ERROR_INVALID_VALUE;
    offset = (offset + align - 1) / align * align;
    if (offset + size > kFakeParamBlockBytes) return CUDA_ERROR_INVALID_VALUE;
    unsigned char *slot = l->param_block + offset;
    switch (size) { /* fixed-size copies: this loop is part of what the benchmarks' "bare" case costs */
    case 8: memcpy(&v, params[i], 8); memcpy(slot, &v, 8); break;
    case 4: { uint32_t w; memcpy(&w, params[i], 4); v = w; memcpy(slot, &w, 4); break; }
    case 2: { uint16_t w; memcpy(&w, params[i], 2); v = w; memcpy(slot, &w, 2); break; }
    case 1: v = *(const uint8_t *)params[i]; *slot = (unsigned char)v; break;
    default: memcpy(&v, params[i], size < 8 ? (size_t)size : 8); memcpy(slot, params[i], (size_t)size); break;
    }
    l->param_sizes[i] = size;
    l->params[i] = v;
    l->param_offsets[i] = offset;
    l->param_aligns[i] = align;
    l->param_addresses[i] = (uint64_t)(uintptr_t)params[i];
    offset += size;
  }
  l->param_block_bytes = offset;
  l->cooperative = 0;
  l->programmatic = 0;
  return CUDA_SUCCESS;
}

static CUresult fake_cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction fn, void **params, void **extra) {
  if (!config) return CUDA_ERROR_INVALID_VALUE;
  int cooperative = 0, programmatic = 0;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE)
      cooperative = config->attrs[i].value.cooperative != 0;
    else if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
      programmatic = config->attrs[i].value.programmaticStreamSerializationAllowed != 0;
    else
      return CUDA_ERROR_NOT_SUPPORTED; /* not modelled */
  }
  if (cooperative) {
    uint64_t threads = (uint64_t)config->blockDimX * config->blockDimY * config->blockDimZ;
    uint64_t per_sm = threads ? 2048 / threads : 0;
    if (per_sm > 32) per_sm = 32;
    if ((uint64_t)config->gridDimX * config->gridDimY * config->gridDimZ > 132 * per_sm)
      return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
  }
  CUresult r = fake_cuLaunchKernel(fn, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
                                   config->blockDimY, config->blockDimZ, config->sharedMemBytes, config->hStream,
                                   params, extra);
  if (r == CUDA_SUCCESS) last_launch.cooperative = cooperative, last_launch.programmatic = programmatic;
  return r;
}

static CUresult fake_cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr pointer) {
  if (!data) return CUDA_ERROR_INVALID_VALUE;
  if (attribute != CU_POINTER_ATTRIBUTE_DEVICE_POINTER) return CUDA_ERROR_NOT_SUPPORTED; /* not modelled */
  for (int i = 0; i < pinned_count; ++i)
    if (pointer >= pinned[i].address && pointer < pinned[i].address + pinned[i].bytes) {
      *(CUdeviceptr *)data = pointer;
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_INVALID_VALUE;
}

/* ---- TMA descriptors ------------------------------------------------------ */

static int tensor_map_element_bytes(CUtensorMapDataType t) {
  switch (t) {
  case CU_TENSOR_MAP_DATA_TYPE_UINT8: return 1;
  case CU_TENSOR_MAP_DATA_TYPE_UINT16: case CU_TENSOR_MAP_DATA_TYPE_FLOAT16: case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16: return 2;
  case CU_TENSOR_MAP_DATA_TYPE_UINT32: case CU_TENSOR_MAP_DATA_TYPE_INT32: case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ: case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
  case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ: return 4;
  case CU_TENSOR_MAP_DATA_TYPE_UINT64: case CU_TENSOR_MAP_DATA_TYPE_INT64: case CU_TENSOR_MAP_DATA_TYPE_FLOAT64: return 8;
  default: return 0; /* the packed sub-byte types: not modelled */
  }
}

/* The rules cuda.h documents for cuTensorMapEncodeTiled (packed types aside). */
static CUresult tensor_map_check(CUtensorMapDataType type, cuuint32_t rank, void *address, const cuuint64_t *dim,
                                 const cuuint64_t *strides, const cuuint32_t *box, const cuuint32_t *element_strides,
                                 CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                 CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob) {
  int bytes = tensor_map_element_bytes(type);
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  if ((unsigned)interleave > CU_TENSOR_MAP_INTERLEAVE_32B || (unsigned)swizzle > CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B ||
      (unsigned)l2 > CU_TENSOR_MAP_L2_PROMOTION_L2_256B || (unsigned)oob > CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA)
    return CUDA_ERROR_INVALID_VALUE;
  if (rank < 1 || rank > 5 || (interleave != CU_TENSOR_MAP_INTERLEAVE_NONE && rank < 3)) return CUDA_ERROR_INVALID_VALUE;
  uint64_t align = interleave == CU_TENSOR_MAP_INTERLEAVE_32B ? 32 : 16;
  if ((uintptr_t)address % align) return CUDA_ERROR_INVALID_VALUE;
  if (!dim || !box || !element_strides || (rank > 1 && !strides)) return CUDA_ERROR_INVALID_VALUE;
  for (cuuint32_t i = 0; i < rank; ++i) {
    if (dim[i] == 0 || dim[i] > ((uint64_t)1 << 32)) return CUDA_ERROR_INVALID_VALUE;
    if (box[i] == 0 || box[i] > 256) return CUDA_ERROR_INVALID_VALUE;
    if (element_strides[i] == 0 || element_strides[i] > 8) return CUDA_ERROR_INVALID_VALUE;
    if (i + 1 < rank && (strides[i] % align || strides[i] >= ((uint64_t)1 << 40))) return CUDA_ERROR_INVALID_VALUE;
  }
  uint64_t inner = (uint64_t)box[0] * (uint64_t)bytes;
  if (interleave == CU_TENSOR_MAP_INTERLEAVE_NONE) {
    if (inner % 16) return CUDA_ERROR_INVALID_VALUE;
    uint64_t span = swizzle == CU_TENSOR_MAP_SWIZZLE_NONE ? 0 : swizzle == CU_TENSOR_MAP_SWIZZLE_32B ? 32
                    : swizzle == CU_TENSOR_MAP_SWIZZLE_64B ? 64 : 128;
    if (span && inner > span) return CUDA_ERROR_INVALID_VALUE;
  }
  if (interleave == CU_TENSOR_MAP_INTERLEAVE_32B && swizzle != CU_TENSOR_MAP_SWIZZLE_32B) return CUDA_ERROR_INVALID_VALUE;
  if (oob == CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA &&
      (type <= CU_TENSOR_MAP_DATA_TYPE_INT64 || type > CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ))
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

static CUresult fake_cuTensorMapEncodeTiled(CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank, void *address,
                                            const cuuint64_t *dim, const cuuint64_t *strides, const cuuint32_t *box,
                                            const cuuint32_t *element_strides, CUtensorMapInterleave interleave,
                                            CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
                                            CUtensorMapFloatOOBfill oob) {
  struct tessera_fake_tensor_map *t = &last_tensor_map;
  memset(t, 0, sizeof *t);
  t->count = ++tensor_map_count;
  t->data_type = (int)type;
  t->rank = rank;
  t->address = (uint64_t)(uintptr_t)address;
  for (cuuint32_t i = 0; i < rank && i < 5; ++i) {
    if (dim) t->global_dim[i] = dim[i];
    if (strides && i + 1 < rank) t->global_strides[i] = strides[i];
    if (box) t->box_dim[i] = box[i];
    if (element_strides) t->element_strides[i] = element_strides[i];
  }
  t->interleave = (int)interleave, t->swizzle = (int)swizzle, t->l2_promotion = (int)l2, t->oob_fill = (int)oob;
  CUresult r = CUDA_ERROR_INVALID_VALUE;
  if (!current_context) r = CUDA_ERROR_INVALID_CONTEXT;
  else if (map) r = tensor_map_check(type, rank, address, dim, strides, box, element_strides, interleave, swizzle, l2, oob);
  if (r == CUDA_SUCCESS && fail_next_tensor_map != CUDA_SUCCESS) {
    r = fail_next_tensor_map;
    fail_next_tensor_map = CUDA_SUCCESS;
  }
  t->result = (int)r;
  if (r != CUDA_SUCCESS) return r;
  uint64_t w[16] = {0};
  w[0] = TESSERA_FAKE_TENSOR_MAP_MAGIC;
  w[1] = t->address;
  for (int i = 0; i < 5; ++i) w[2 + i] = t->global_dim[i];
  for (int i = 0; i < 4; ++i) w[7 + i] = t->global_strides[i];
  w[11] = t->box_dim[0] | (uint64_t)t->box_dim[1] << 32;
  w[12] = t->box_dim[2] | (uint64_t)t->box_dim[3] << 32;
  w[13] = t->box_dim[4] | (uint64_t)rank << 32;
  w[14] = (uint64_t)type | (uint64_t)interleave << 8 | (uint64_t)swizzle << 16 | (uint64_t)l2 << 24 | (uint64_t)oob << 32;
  for (int i = 0; i < 5; ++i) w[14] |= (uint64_t)(t->element_strides[i] & 15) << (40 + 4 * i);
  w[15] = t->count;
  memcpy(map, w, sizeof w);
  memcpy(t->map, w, sizeof w);
  return CUDA_SUCCESS;
}

/* ---- memory, streams, events, graphs ------------------------------------- */

static CUresult fake_cuMemAlloc(CUdeviceptr *p, size_t bytes) {
  void *m = aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
  if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
  *p = (CUdeviceptr)(uintptr_t)m;
  return CUDA_SUCCESS;
}
static CUresult fake_cuMemFree(CUdeviceptr p) {
  free((void *)(uintptr_t)p);
  return CUDA_SUCCESS;
}
static CUresult fake_cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t n) {
  memcpy((void *)(uintptr_t)dst, src, n);
  return CUDA_SUCCESS;
}
static CUresult fake_cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n) {
  memcpy(dst, (const void *)(uintptr_t)src, n);
  return CUDA_SUCCESS;
}
static CUresult fake_cuMemsetD8(CUdeviceptr dst, unsigned char v, size_t n) {
  memset((void *)(uintptr_t)dst, v, n);
  return CUDA_SUCCESS;
}
static CUresult fake_cuMemsetD32(CUdeviceptr dst, unsigned v, size_t n) {
  unsigned *p = (unsigned *)(uintptr_t)dst;
  for (size_t i = 0; i < n; ++i) p[i] = v;
  return CUDA_SUCCESS;
}
static CUresult fake_cuStreamCreate(CUstream *s, unsigned flags) {
  (void)flags;
  *s = (CUstream)malloc(16);
  return *s ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
static CUresult fake_cuStreamDestroy(CUstream s) {
  free(s);
  return CUDA_SUCCESS;
}
static CUresult fake_cuStreamSynchronize(CUstream s) {
  (void)s;
  return CUDA_SUCCESS;
}
static CUresult fake_cuStreamBeginCapture(CUstream s, CUstreamCaptureMode m) {
  (void)s, (void)m;
  return CUDA_ERROR_NOT_SUPPORTED;
}
static CUresult fake_cuStreamEndCapture(CUstream s, CUgraph *g) {
  (void)s, (void)g;
  return CUDA_ERROR_NOT_SUPPORTED;
}
static CUresult fake_cuGraphInstantiateWithFlags(CUgraphExec *e, CUgraph g, unsigned long long flags) {
  (void)e, (void)g, (void)flags;
  return CUDA_ERROR_NOT_SUPPORTED;
}
static CUresult fake_cuGraphLaunch(CUgraphExec e, CUstream s) {
  (void)e, (void)s;
  return CUDA_ERROR_NOT_SUPPORTED;
}
static CUresult fake_cuGraphExecDestroy(CUgraphExec e) {
  (void)e;
  return CUDA_SUCCESS;
}
static CUresult fake_cuGraphDestroy(CUgraph g) {
  (void)g;
  return CUDA_SUCCESS;
}
static CUresult fake_cuEventCreate(CUevent *e, unsigned flags) {
  (void)flags;
  *e = (CUevent)malloc(16);
  return *e ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
static CUresult fake_cuEventRecord(CUevent e, CUstream s) {
  (void)e, (void)s;
  return CUDA_SUCCESS;
}
static CUresult fake_cuEventSynchronize(CUevent e) {
  (void)e;
  return CUDA_SUCCESS;
}
static CUresult fake_cuEventElapsedTime(float *ms, CUevent a, CUevent b) {
  (void)a, (void)b;
  *ms = 0.001f;
  return CUDA_SUCCESS;
}
static CUresult fake_cuEventDestroy(CUevent e) {
  free(e);
  return CUDA_SUCCESS;
}

/* ---- cuGetProcAddress ---------------------------------------------------- */

/* Each entry typed as the PFN of the version runtime/DriverApi.h asks for, so
 * that a wrong signature here fails to compile. */
#define FAKE_SYMBOLS(X)                                                                                        \
  X(cuGetErrorName, 6000) X(cuGetErrorString, 6000) X(cuInit, 2000) X(cuDriverGetVersion, 2020)               \
  X(cuDeviceGet, 2000) X(cuDeviceGetCount, 2000) X(cuDeviceGetName, 2000) X(cuDeviceGetAttribute, 2000)       \
  X(cuDeviceTotalMem, 3020) X(cuDevicePrimaryCtxRetain, 7000) X(cuCtxGetCurrent, 4000)                        \
  X(cuCtxSetCurrent, 4000) X(cuCtxGetDevice, 2000) X(cuCtxSynchronize, 2000) X(cuLinkCreate, 6050)            \
  X(cuLinkAddData, 6050) X(cuLinkComplete, 5050) X(cuLinkDestroy, 5050) X(cuModuleLoadData, 2000)             \
  X(cuModuleUnload, 2000) X(cuModuleGetFunction, 2000) X(cuFuncGetAttribute, 2020)                            \
  X(cuFuncSetAttribute, 9000) X(cuLaunchKernel, 4000) X(cuMemAlloc, 3020) X(cuMemFree, 3020)                  \
  X(cuMemcpyHtoD, 3020) X(cuMemcpyDtoH, 3020) X(cuMemsetD8, 3020) X(cuMemsetD32, 3020)                        \
  X(cuStreamCreate, 2000) X(cuStreamDestroy, 4000) X(cuStreamSynchronize, 2000)                               \
  X(cuStreamBeginCapture, 10010) X(cuStreamEndCapture, 10000) X(cuGraphInstantiateWithFlags, 11040)           \
  X(cuGraphLaunch, 10000) X(cuGraphExecDestroy, 10000) X(cuGraphDestroy, 10000) X(cuEventCreate, 2000)        \
  X(cuEventRecord, 2000) X(cuEventSynchronize, 2000) X(cuEventElapsedTime, 2000) X(cuEventDestroy, 4000)       \
  X(cuTensorMapEncodeTiled, 12000) X(cuLaunchKernelEx, 11060) X(cuPointerGetAttribute, 4000)

#define FAKE_ENTRY(name, version) {#name, (void *)(PFN_##name##_v##version)fake_##name},
static const struct { const char *name; void *fn; } symbols[] = {FAKE_SYMBOLS(FAKE_ENTRY)};
#undef FAKE_ENTRY

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **fn, int version, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *found) {
  (void)version, (void)flags;
  for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; ++i)
    if (strcmp(symbols[i].name, symbol) == 0) {
      *fn = symbols[i].fn;
      if (found) *found = CU_GET_PROC_ADDRESS_SUCCESS;
      return CUDA_SUCCESS;
    }
  *fn = NULL;
  if (found) *found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuDriverGetVersion(int *v) { return fake_cuDriverGetVersion(v); }
