"""tessera's exceptions. The C++ extension raises these (python/bindings/Errors.cpp).

    TesseraError                      base of all of them
    ├── CompilationError              an error in a kernel's source (message: file:line:col, line, caret)
    │   └── InterpreterError          found while interpreting (out-of-bounds, misaligned, read-only access)
    ├── DriverError (RuntimeError)    a CUDA driver call failed (.code: the CUresult)
    │   └── DriverNotFoundError       no CUDA driver on this machine ("no CUDA driver found: ...")
    └── LaunchError (RuntimeError)    a kernel cannot be loaded or launched (grid, shared memory, device)
        └── OutOfResources            Triton's name for "needs more than the hardware has" (required, limit, name)

Argument errors are TypeError / ValueError naming the argument (NumWarpsError: a ValueError
that is also an AssertionError, ArgumentOverflowError: also an OverflowError, as in Triton;
describe_value() shows what was given instead).
"""
import reprlib


def _bare_message(message):
    """"path:3:5: error: what\n    line\n    ^" -> "what" (None when not in that form)."""
    first = str(message).split("\n", 1)[0]
    at = first.find(": error: ")
    return first[at + len(": error: "):] if at >= 0 else None


_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 60


def describe_value(value):
    """"int 42", "list [('BLOCK', 256)]": a wrong argument's type and (shortened) value, for messages."""
    return f"{type(value).__name__} {_SHORT.repr(value)}"


class TesseraError(Exception):
    """Base class of tessera's exceptions."""


class CompilationError(TesseraError):
    """An error in a kernel. str(e) is the formatted diagnostic:

        path/to/kernel.py:7:20: error: name 'offsetz' is not defined
            x = tl.load(x_ptr + offsetz)
                                ^
    """

    def __init__(self, message, path=None, line=None, col=None):
        super().__init__(message)
        self.message = message
        self.path = path
        self.line = line
        self.col = col
        # As Triton's CompilationError, which is raised from the error that stopped compilation:
        # __cause__ holds the bare message ("invalid axis 2. Expected ..."), without place or caret.
        bare = _bare_message(message)
        if bare:
            self.__cause__ = ValueError(bare)

    def __str__(self):
        return self.message

    @property
    def error_message(self):
        """The message alone, without its location and source line (Triton's attribute)."""
        first = self.message.split("\n", 1)[0]
        at = first.find("error: ")
        return first[at + len("error: "):] if at >= 0 else first


class InterpreterError(CompilationError):
    """An error found while interpreting a kernel (out-of-bounds, misaligned or read-only access);
    str(e) is 'file:line:col: error: ...' with the source line and a caret."""


class DriverError(TesseraError, RuntimeError):
    """A CUDA driver call failed; `code` is the CUresult (-1 when no call could be made)."""

    def __init__(self, message, code=-1):
        super().__init__(message)
        self.code = code


class DriverNotFoundError(DriverError):
    """There is no usable CUDA driver (libcuda.so.1) on this machine."""


class LaunchError(TesseraError, RuntimeError):
    """A kernel could not be loaded or launched (bad grid, too much shared memory, wrong device...)."""


class OutOfResources(LaunchError):
    """A kernel needs more of a resource than its target has (`name`: "shared memory"; `required`
    and `limit` in its unit). Triton's triton.runtime.errors.OutOfResources, with its arguments:
    `except OutOfResources` in code written for Triton catches it. str(e) is tessera's message,
    or Triton's when none is given."""

    def __init__(self, required, limit, name, message=None):
        self.required = required
        self.limit = limit
        self.name = name
        self.message = message
        super().__init__(str(self))

    def __str__(self):
        if self.message:
            return self.message
        return (f"out of resource: {self.name}, Required: {self.required}, Hardware limit: {self.limit}. "
                "Reducing block sizes or `num_stages` may help.")

    def __reduce__(self):
        return (type(self), (self.required, self.limit, self.name, self.message))


class NumWarpsError(ValueError, AssertionError):
    """num_warps is not a power of 2 between 1 and 32 (at a launch or warmup): a ValueError,
    and the AssertionError Triton raises for it."""


class ArgumentOverflowError(ValueError, OverflowError):
    """An int argument outside [-2**63, 2**64): a ValueError, and the OverflowError Triton raises."""


class HostTensorError(ValueError, TypeError):
    """A CPU tensor (not pinned) as a kernel argument: the ValueError Triton raises ("Pointer argument
    (at 0) cannot be accessed from Triton (cpu tensor?)"), and a TypeError as tessera raised before."""


__all__ = ["ArgumentOverflowError", "HostTensorError", "NumWarpsError", "TesseraError", "CompilationError",
           "InterpreterError", "DriverError", "DriverNotFoundError", "LaunchError", "OutOfResources"]
