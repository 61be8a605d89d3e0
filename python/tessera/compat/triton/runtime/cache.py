"""triton.runtime.cache in tessera's compatibility mode: triton_key() (torch keys its caches with it).
tessera's kernel cache is its own (docs/runtime.md, TESSERA_CACHE_DIR); Triton's cache managers are
not offered."""
from ..compiler.compiler import triton_key

__all__ = ["triton_key"]
