"""triton.runtime.errors: the exceptions libraries catch, as tessera raises them."""
from tessera.errors import InterpreterError, OutOfResources

__all__ = ["InterpreterError", "OutOfResources"]
