"""triton.runtime.errors: the exceptions libraries catch, as tessera raises them. PTXASError is
Triton's "ptxas failed" (torch's Inductor catches it beside OutOfResources); tessera reports ptxas
failures when it loads a kernel, as a LaunchError, so nothing raises this class."""
from tessera.errors import InterpreterError, OutOfResources, TesseraError


class PTXASError(TesseraError):
    """Triton's exception for a ptxas failure (caught by Inductor; tessera raises LaunchError)."""


__all__ = ["InterpreterError", "OutOfResources", "PTXASError"]
