"""triton.runtime.errors: the exceptions libraries catch, as tessera raises them. PTXASError is
Triton's "ptxas failed" (torch's Inductor catches it beside OutOfResources): triton.compile() raises
it when ptxas fails on the kernel (tessera's own launches report that as a LaunchError)."""
from tessera.errors import InterpreterError, OutOfResources, TesseraError


class PTXASError(TesseraError):
    """Triton's exception for a ptxas failure (triton.compile() raises it; Inductor catches it)."""


__all__ = ["InterpreterError", "OutOfResources", "PTXASError"]
