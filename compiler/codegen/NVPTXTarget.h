// Internal to codegen: the NVPTX target machine, the optimisation pipeline,
// libdevice linking and PTX emission.
#pragma once

#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <string>

namespace tessera::codegen {

// Throws std::runtime_error for an arch we do not target. fpFusion: contract
// a * b + c into fma (FPOpFusion::Fast), else keep every mul and add rounded (.rn).
std::unique_ptr<llvm::TargetMachine> createNVPTXTargetMachine(const std::string &arch,
                                                              bool optimize, bool fpFusion);
// Most dynamic shared memory one block may use on `arch`, in bytes.
unsigned maxSharedBytes(const std::string &arch);
// Throws std::runtime_error with the verifier's report if `module` is invalid.
void verifyOrThrow(const llvm::Module &module, const std::string &stage);
// Links the libdevice functions the module calls (__nv_*) from the bitcode
// file `path` and internalises everything but `keep`; a no-op when nothing
// calls libdevice.
void linkLibdevice(llvm::Module &module, const std::string &keep, const std::string &path);

// Replaces calls of NVVM intrinsics that libdevice uses and LLVM 19 does not know
// (llvm.nvvm.tanh.approx.f32) by their PTX instruction; throws for any other.
void lowerIntrinsicsNewerThanLlvm(llvm::Module &module);
// Runs LLVM's O3 pipeline with the target's callbacks (NVVMReflect, ...).
void optimizeModule(llvm::Module &module, llvm::TargetMachine &machine);
// Rewrites llvm.copysign.f32/f64 as integer masks, (a & ~sign) | (b & sign): LLVM 19's NVPTX
// back-end expands copysign into abs, neg, a sign test and a select (three SASS instructions,
// one a predicate), where the mask form is one LOP3. libdevice's erff, tanhf, ... end with a
// copysign per element. Bit-exact (copysign only moves the sign bit). Returns how many it rewrote.
unsigned lowerCopysignToBits(llvm::Module &module);
std::string emitPTX(llvm::Module &module, llvm::TargetMachine &machine);
std::string printModule(const llvm::Module &module);

} // namespace tessera::codegen
