// Attention forward from C++ (no Python): compiles kernels/attention.py's
// attn_fwd_kernel with the C++ API (runtime/Kernel.h) and launches it on
// device pointers. Header-only; examples/attention.cpp uses and checks it.
//
//   tessera::examples::AttentionForward attn("kernels/attention.py", "bf16", /*headDim=*/64,
//                                            /*causal=*/true);
//   tessera::examples::AttentionArgs a;
//   a.q = {dq, /*strides (b, h, n, d) in elements*/ N * H * D, D, H * D, 1};  // a (B, N, H, D) buffer
//   ... k, v, o likewise; a.lse = fp32 [B][H][N_Q] buffer (natural-log log-sum-exp per row)
//   a.batch = B; a.heads = H; a.kvHeads = H_KV; a.seqQ = N; a.seqKV = N;
//   attn.launch(a, stream);
//
// One kernel is compiled per specialisation, as the Python launcher does:
// pointers 16-byte aligned or not, strides equal to 1, multiples of 16 or
// neither (each fact makes wider loads possible); they are cached in the
// object and on disk (runtime/Cache.h). Block sizes and warps follow the
// table of python/tessera/kernels/attention.py (_CONFIGS).
#pragma once

#include "runtime/Kernel.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>

namespace tessera::examples {

// A 4-D array (batch, head, seq, head_dim) on the device: its address and the
// element strides of those four dims (any memory order: (B, H, N, D) and
// (B, N, H, D) buffers differ only in the strides).
struct AttentionTensor {
  CUdeviceptr data = 0;
  int64_t strideB = 0, strideH = 0, strideN = 0, strideD = 1;
};

struct AttentionArgs {
  AttentionTensor q, k, v, o; // q, o: `heads` heads of seqQ rows; k, v: `kvHeads` heads of seqKV rows
  CUdeviceptr lse = 0;        // fp32 [batch][heads][seqQ], contiguous
  int batch = 1, heads = 1, kvHeads = 1, seqQ = 0, seqKV = 0;
  float smScale = 0.0f;       // <= 0: 1 / sqrt(head_dim)
};

class AttentionForward {
public:
  // kernelFile: the path of kernels/attention.py; dtype "fp16" or "bf16"; headDim 16, 32, 64
  // or 128; arch "" for the current GPU's (tessera::targetArch()).
  AttentionForward(std::string kernelFile, std::string dtype, int headDim, bool causal, std::string arch = "")
      : file_(std::move(kernelFile)), dtype_(std::move(dtype)), headDim_(headDim), causal_(causal),
        arch_(std::move(arch)) {
    if (dtype_ != "fp16" && dtype_ != "bf16") throw std::invalid_argument("attention: dtype must be fp16 or bf16");
    if (headDim != 16 && headDim != 32 && headDim != 64 && headDim != 128)
      throw std::invalid_argument("attention: head dim must be 16, 32, 64 or 128");
    blockM_ = headDim == 128 ? 64 : 128;
    blockN_ = 64;
    numWarps_ = 8;
  }

  int blockM() const { return blockM_; }
  int headDim() const { return headDim_; }

  // The kernel these arguments launch (compiled on first use).
  const Kernel &kernelFor(const AttentionArgs &a) {
    const std::string sig = signature(a);
    auto it = kernels_.find(sig);
    if (it != kernels_.end()) return it->second;
    CompileOptions options;
    options.numWarps = static_cast<unsigned>(numWarps_);
    options.numStages = 2;
    options.arch = arch_.empty() ? targetArch() : arch_;
    Kernel k = compileFile(file_, "attn_fwd_kernel", sig,
                           {{"HEAD_DIM", ConstexprValue::ofInt(headDim_)},
                            {"BLOCK_M", ConstexprValue::ofInt(blockM_)},
                            {"BLOCK_N", ConstexprValue::ofInt(blockN_)},
                            {"CAUSAL", ConstexprValue::ofBool(causal_)}},
                           options);
    return kernels_.emplace(sig, std::move(k)).first->second;
  }

  void launch(const AttentionArgs &a, CUstream stream = nullptr) {
    if (a.batch < 0 || a.heads < 0 || a.seqQ < 0 || a.kvHeads <= 0 || a.seqKV <= 0 || a.heads % a.kvHeads)
      throw std::invalid_argument("attention: need kvHeads > 0 dividing heads and seqKV > 0");
    if (a.batch == 0 || a.heads == 0 || a.seqQ == 0) return;
    const Kernel &k = kernelFor(a);
    const float scale = a.smScale > 0 ? a.smScale : 1.0f / std::sqrt(static_cast<float>(headDim_));
    int32_t s[16];
    const AttentionTensor *ts[4] = {&a.q, &a.k, &a.v, &a.o};
    for (int t = 0; t < 4; ++t) {
      const int64_t st[4] = {ts[t]->strideB, ts[t]->strideH, ts[t]->strideN, ts[t]->strideD};
      for (int i = 0; i < 4; ++i) s[4 * t + i] = narrow(st[i]);
    }
    const unsigned gridX = static_cast<unsigned>((a.seqQ + blockM_ - 1) / blockM_);
    const unsigned gridY = static_cast<unsigned>(a.batch) * static_cast<unsigned>(a.heads);
    k.launch(rt::Grid{gridX, gridY, 1}, stream, a.q.data, a.k.data, a.v.data, a.o.data, a.lse,
             s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], s[9], s[10], s[11], s[12], s[13], s[14],
             s[15], int32_t{a.heads}, int32_t{a.kvHeads}, int32_t{a.seqQ}, int32_t{a.seqKV}, scale);
  }

private:
  static int32_t narrow(int64_t v) {
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
      throw std::invalid_argument("attention: a stride does not fit in 32 bits");
    return static_cast<int32_t>(v);
  }

  // The facts a launch may rely on, as the Python launcher specialises them.
  std::string signature(const AttentionArgs &a) const {
    auto ptr = [](const std::string &type, CUdeviceptr p) { return "*" + type + (p % 16 == 0 ? ":16" : ""); };
    auto stride = [](int64_t v) { return std::string(v == 1 ? "i32:1" : v % 16 == 0 ? "i32:16" : "i32"); };
    std::string sig = ptr(dtype_, a.q.data) + "," + ptr(dtype_, a.k.data) + "," + ptr(dtype_, a.v.data) + "," +
                      ptr(dtype_, a.o.data) + "," + ptr("fp32", a.lse);
    for (const AttentionTensor *t : {&a.q, &a.k, &a.v, &a.o})
      for (int64_t v : {t->strideB, t->strideH, t->strideN, t->strideD}) sig += "," + stride(v);
    return sig + ",i32,i32,i32,i32,fp32";
  }

  std::string file_, dtype_;
  int headDim_;
  bool causal_;
  std::string arch_;
  int blockM_, blockN_, numWarps_;
  std::map<std::string, Kernel> kernels_;
};

} // namespace tessera::examples
