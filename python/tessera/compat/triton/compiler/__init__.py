"""triton.compiler in tessera's compatibility mode: ASTSource, CompiledKernel, compile() and
triton_key() (compiler.py; docs/torch-compile.md)."""
from .compiler import ASTSource, CompiledKernel, compile, make_backend, triton_key

__all__ = ["ASTSource", "CompiledKernel", "compile", "make_backend", "triton_key"]
