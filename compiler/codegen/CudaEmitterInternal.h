// Internal to the NVRTC back-end's printer (CudaEmitter.h): the printer class
// and what its pieces share. The member functions are defined by op family:
// CudaEmitter.cpp (the kernel, names, statement dispatch, control flow),
// CudaEmitterValues.cpp (types, literals, constants), CudaEmitterArith.cpp
// (arithmetic, compares, casts), CudaEmitterMemory.cpp (loads, stores,
// addresses, globals), CudaEmitterCalls.cpp (intrinsics, libdevice, calls)
// and CudaEmitterAsm.cpp (inline asm); the fixed text the output uses
// (helpers, reserved names) is in CudaEmitterText.cpp. docs/nvrtc.md lists
// what maps to what.
#pragma once

#include <llvm/ADT/ArrayRef.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tessera::codegen::cuda {

// ------------------------------------------------ fixed text (CudaEmitterText.cpp)
// Words the generated code uses that a kernel's parameter or value names
// must not shadow: C++ keywords, CUDA's built-in variables and functions
// called by name.
const std::set<std::string> &reservedNames();
// libdevice functions with a CUDA math API spelling (the f32 one adds 'f').
const std::set<std::string> &cudaMathFunctions();

// A helper the generated code may use: the name Printer::need takes, and its definition.
struct Helper {
  const char *name;
  const char *text;
};
// Every helper, in the order they are printed.
llvm::ArrayRef<Helper> helperDefinitions();

std::string hex(uint64_t v);
std::string quoted(llvm::StringRef text);   // a C++ string literal
std::string printed(const llvm::Value *v); // LLVM's text, for messages
std::string printed(const llvm::Type *t);

inline bool isHalfLike(const llvm::Type *t) { return t->isHalfTy() || t->isBFloatTy(); }

// One kernel of a module as CUDA C++ (emitCuda).
class Printer {
public:
  Printer(const llvm::Module &module, const llvm::Function &fn)
      : module_(module), fn_(fn), dl_(module.getDataLayout()), kernel_(fn.getName().str()) {}

  std::string run();

private:
  const llvm::Module &module_;
  const llvm::Function &fn_;
  const llvm::DataLayout &dl_;
  std::string kernel_;

  std::set<std::string> taken_, labelsTaken_;
  std::unordered_map<const llvm::Value *, std::string> names_;
  std::unordered_map<const llvm::BasicBlock *, std::string> labels_;
  std::unordered_map<const llvm::PHINode *, std::string> phiIn_;
  std::unordered_map<const llvm::Value *, std::vector<std::string>> asmOutputs_; // struct-valued asm calls
  std::vector<std::pair<std::string, std::string>> locals_;                      // (type, name), in order
  std::vector<std::string> storage_;                                             // alloca buffers
  std::set<std::string> helpers_;
  std::vector<std::string> externs_; // declarations of libdevice functions without a CUDA name
  std::set<std::string> declared_;
  std::set<const llvm::BasicBlock *> gotoTargets_;
  const llvm::BasicBlock *nextBlock_ = nullptr;
  std::string out_; // the statements of the block being printed
  std::map<const llvm::GlobalVariable *, std::string> globalNames_;
  std::vector<std::string> globalDecls_;

  [[noreturn]] void fail(const std::string &what) const {
    throw std::runtime_error("NVRTC back-end: unsupported " + what + " in kernel '" + kernel_ + "'");
  }
  [[noreturn]] void failInstruction(const llvm::Instruction &inst) const {
    fail(std::string("LLVM instruction '") + inst.getOpcodeName() + "' (" + printed(&inst) + ")");
  }

  void need(const std::string &helper); // CudaEmitterText.cpp
  void line(const std::string &text) { out_ += "  " + text + "\n"; }

  // ------------------------------------------------ names (CudaEmitter.cpp)
  std::string uniqueName(std::string base, std::set<std::string> &taken);
  std::string localName(const llvm::Value &v) {
    return uniqueName(v.hasName() ? v.getName().str() : "t" + std::to_string(locals_.size()), taken_);
  }
  void declare(const std::string &type, const std::string &name) { locals_.emplace_back(type, name); }
  void nameValues();

  // ------------------------------------------------ types and values (CudaEmitterValues.cpp)
  std::string cType(llvm::Type *t);
  std::string signedType(unsigned bits) const;
  unsigned intBits(llvm::Type *t);
  std::string expr(const llvm::Value *v);
  std::string zero(llvm::Type *t);
  std::string intLiteral(uint64_t value, llvm::Type *t);
  std::string floatLiteral(const llvm::ConstantFP &c);
  // Values as f32 / from f32 (f16 and bf16 compute in f32).
  std::string toF32(const llvm::Value *v);
  std::string fromF32(const std::string &e, llvm::Type *t);
  // A vector element index: a plain number when constant.
  std::string index(const llvm::Value *v);

  // ------------------------------------------------ memory (CudaEmitterMemory.cpp)
  std::string bitsType(llvm::Type *t); // how a value of type t is kept in memory
  std::string fromBits(const std::string &bits, llvm::Type *t);
  std::string toBits(const llvm::Value *v);
  std::string loadExpr(const llvm::LoadInst &load);
  void storeStatement(const llvm::StoreInst &store);
  std::string gep(const llvm::GetElementPtrInst &inst);
  std::string globalName(const llvm::GlobalVariable &g);

  // ------------------------------------------------ arithmetic (CudaEmitterArith.cpp)
  std::string binary(const llvm::BinaryOperator &inst);
  std::string compare(const llvm::CmpInst &inst);
  std::string castExpr(const llvm::CastInst &inst);

  // ------------------------------------------------ calls (CudaEmitterCalls.cpp, CudaEmitterAsm.cpp)
  std::string callExpr(const llvm::CallInst &call);
  std::string intrinsic(const llvm::CallInst &call, llvm::Intrinsic::ID id);
  std::string libdevice(const llvm::CallInst &call, const llvm::Function &callee);
  void callStatement(const llvm::CallInst &call);
  void inlineAsm(const llvm::CallInst &call);

  // ------------------------------------------------ statements and control flow (CudaEmitter.cpp)
  std::string rhs(const llvm::Instruction &inst); // the expression an instruction computes
  void statement(const llvm::Instruction &inst);
  void edgeCopies(const llvm::BasicBlock *from, const llvm::BasicBlock *to);
  void jump(const llvm::BasicBlock *from, const llvm::BasicBlock *to, bool mayFallThrough);
  void terminator(const llvm::Instruction &inst);
};

} // namespace tessera::codegen::cuda
