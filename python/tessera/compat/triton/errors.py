"""triton.errors: TritonError is tessera's TesseraError (the base of tessera's exceptions)."""
from tessera.errors import TesseraError as TritonError

__all__ = ["TritonError"]
