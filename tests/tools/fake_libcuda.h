/* What the fake CUDA driver (fake_libcuda.c) records, for the tests that read
 * it back: from C++ (dlsym on the loaded library) and from Python (ctypes,
 * tests/fake_driver/fake_cuda.py, which repeats these layouts). */
#ifndef TESSERA_FAKE_LIBCUDA_H
#define TESSERA_FAKE_LIBCUDA_H

#include <stdint.h>

enum {
  kFakeMaxParams = 128,
  kFakeParamBlockBytes = 4096, /* the parameter block the fake lays out (real GPUs take 4 KB, or 32 KB on 12.1+) */
  kFakeTensorMapBytes = 128
};

/* The last cuLaunchKernel. */
struct tessera_fake_launch {
  uint64_t count;          /* launches so far (this one included) */
  const char *kernel;      /* the function's name (lives as long as the process) */
  unsigned grid[3];
  unsigned block[3];
  unsigned shared_bytes;
  uint64_t stream;         /* the CUstream as an integer */
  int device;              /* the device of the current context */
  int num_params;          /* from the PTX .entry; -1 when the image was not PTX */
  int param_sizes[kFakeMaxParams];
  uint64_t params[kFakeMaxParams]; /* each parameter's first (up to) 8 bytes, zero-extended */
  /* The parameter block as the kernel sees it: each parameter at the next
   * offset that is a multiple of its alignment (".param .align 64 .b8 p[128]":
   * 64; otherwise its type's size), in order, as the real driver lays it out. */
  int param_offsets[kFakeMaxParams];
  int param_aligns[kFakeMaxParams];
  uint64_t param_addresses[kFakeMaxParams]; /* kernelParams[i]: where each value was read from */
  int param_block_bytes;                    /* end of the last parameter */
  unsigned char param_block[kFakeParamBlockBytes];
  int cooperative; /* 1 for cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_COOPERATIVE, else 0 */
  int programmatic; /* 1 for cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, else 0 */
};

/* The last cuTensorMapEncodeTiled: its arguments as given, its result, and
 * the 128 bytes it wrote. On success those bytes are the arguments packed
 * (little-endian 64-bit words): 0 the magic "FAKETMAP", 1 the address, 2-6
 * globalDim[0..4], 7-10 globalStrides[0..3], 11 boxDim[0] | boxDim[1] << 32,
 * 12 boxDim[2] | boxDim[3] << 32, 13 boxDim[4] | rank << 32, 14 dataType |
 * interleave << 8 | swizzle << 16 | l2Promotion << 24 | oobFill << 32 |
 * elementStrides[i] << (40 + 4 i), 15 the call's number (count). */
struct tessera_fake_tensor_map {
  uint64_t count; /* calls so far (this one included, failed ones too) */
  int result;     /* the CUresult returned */
  int data_type;
  unsigned rank;
  uint64_t address;
  uint64_t global_dim[5];
  uint64_t global_strides[4];
  unsigned box_dim[5];
  unsigned element_strides[5];
  int interleave, swizzle, l2_promotion, oob_fill;
  unsigned char map[kFakeTensorMapBytes];
};

#define TESSERA_FAKE_TENSOR_MAP_MAGIC 0x50414d54454b4146ull /* "FAKETMAP" read as a little-endian word */

#endif
