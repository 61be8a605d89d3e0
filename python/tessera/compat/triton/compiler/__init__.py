"""triton.compiler in tessera's compatibility mode: ASTSource, CompiledKernel, compile() and
triton_key() (compiler.py; docs/torch-compile.md); errors.CompilationError."""
from . import errors
from .compiler import ASTSource, CompiledKernel, compile, make_backend, triton_key

__all__ = ["errors", "ASTSource", "CompiledKernel", "compile", "make_backend", "triton_key"]
