#include "compiler/driver/Interpret.h"

#include "compiler/passes/Canonicalize.h"
#include "compiler/passes/CommonSubexpressionElimination.h"
#include "compiler/passes/DeadCodeElimination.h"
#include "compiler/passes/Pipeline.h"

#include <stdexcept>

namespace tessera {

InterpretableKernel::InterpretableKernel(std::shared_ptr<const SourceFile> file, const std::string &kernelName,
                                         const std::vector<ArgSpec> &signature,
                                         const std::map<std::string, ConstexprValue> &constexprs,
                                         const InterpretOptions &options)
    : file_(std::move(file)), signature_(signature) {
  ast::Module module = ast::parseModule(file_, /*recoverFunctionBodies=*/true);
  Specialization spec;
  spec.kernelName = kernelName;
  spec.args = signature;
  spec.constexprs = constexprs;
  spec.numWarps = options.numWarps;
  spec.debug = options.debug;
  fn_ = specialize(module, spec);
  auto check = [&](const char *after) {
    if (std::string problem = ir::verify(*fn_); !problem.empty())
      throw std::logic_error(std::string("internal error: invalid IR after ") + after + ": " + problem + "\n" +
                             ir::print(*fn_));
  };
  check("the specialiser");
  if (options.allPasses) {
    passes::PipelineOptions pipeline;
    pipeline.verifyEach = true;
    pipeline.tensorCores = true;
    pipeline.numStages = options.numStages;
    pipeline.arch = options.arch;
    passes::runPipeline(*fn_, pipeline);
  } else if (options.optimize) {
    passes::canonicalize(*fn_);
    passes::eliminateCommonSubexpressions(*fn_);
    passes::eliminateDeadCode(*fn_);
    check("canonicalize, common-subexpression-elimination and dead-code-elimination");
  }
}

InterpretableKernel::~InterpretableKernel() = default;

const std::string &InterpretableKernel::name() const { return fn_->name; }

std::vector<std::string> InterpretableKernel::parameterNames() const {
  std::vector<std::string> out;
  for (const ir::Param &p : fn_->params) out.push_back(p.name);
  return out;
}

std::string InterpretableKernel::ir() const { return ir::print(*fn_); }

void InterpretableKernel::run(interp::Grid grid, const std::vector<interp::ArgValue> &args) const {
  interp::Options options;
  options.file = file_;
  interp::run(*fn_, grid, args, options);
}

void interpretKernel(std::shared_ptr<const SourceFile> file, const std::string &kernelName,
                     const std::vector<ArgSpec> &signature,
                     const std::map<std::string, ConstexprValue> &constexprs, interp::Grid grid,
                     const std::vector<interp::ArgValue> &args, const InterpretOptions &options) {
  InterpretableKernel(std::move(file), kernelName, signature, constexprs, options).run(grid, args);
}

} // namespace tessera
