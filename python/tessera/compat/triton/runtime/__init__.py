"""triton.runtime in tessera's compatibility mode: the autotuner, JITFunction and the driver."""
from tessera.autotune import Autotuner, Config, Heuristics, KernelInterface, autotune, heuristics
from tessera.errors import InterpreterError, OutOfResources
from tessera.jit import JITFunction
from tessera.runtime.driver import driver  # Triton's DriverConfig object (.active); the module is triton.runtime.driver

from . import autotuner, errors, jit
from .errors import PTXASError

__all__ = ["autotune", "Autotuner", "Config", "driver", "Heuristics", "heuristics", "InterpreterError",
           "JITFunction", "KernelInterface", "OutOfResources", "PTXASError"]
