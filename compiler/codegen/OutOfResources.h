// A kernel that needs more of a resource than its target has (shared memory).
// Not an error in the kernel's source: Python raises tessera.OutOfResources
// (python/bindings/Errors.cpp), Triton's name for it, which code written for
// Triton catches to try smaller blocks; what() is the full message.
#pragma once

#include <stdexcept>
#include <string>

namespace tessera::codegen {

class OutOfResources : public std::runtime_error {
public:
  OutOfResources(const std::string &message, long long required, long long limit, std::string resource)
      : std::runtime_error(message), required(required), limit(limit), resource(std::move(resource)) {}
  long long required; // how much the kernel needs
  long long limit;    // how much the target has
  std::string resource; // "shared memory"
};

} // namespace tessera::codegen
