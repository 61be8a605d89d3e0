// The CUDA driver handle types used in tessera's public runtime API,
// declared exactly as <cuda.h> declares them (repeating an identical typedef
// is legal C++), so that code using the runtime headers needs neither the
// CUDA toolkit nor libcuda to compile, and a CUstream from torch
// (cudaStream_t is the same CUstream_st *) passes straight through.
#pragma once

struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUgraph_st;
struct CUgraphExec_st;
struct CUevent_st;

typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUevent_st *CUevent;
typedef unsigned long long CUdeviceptr_v2; // 64-bit Linux only (as cuda.h)
typedef CUdeviceptr_v2 CUdeviceptr;
typedef int CUdevice_v1;
typedef CUdevice_v1 CUdevice;
