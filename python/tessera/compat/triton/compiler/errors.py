"""triton.compiler.errors in tessera's compatibility mode: CompilationError is tessera's (the error
every kernel diagnostic raises; Triton's test suites and libraries catch it under this name)."""
from tessera.errors import CompilationError

__all__ = ["CompilationError"]
