"""triton.runtime.autotuner: tessera's autotuner (tessera/autotune.py) under Triton's names."""
from tessera.autotune import Autotuner, Config, Heuristics, autotune, heuristics
from tessera.errors import OutOfResources

from .errors import PTXASError

__all__ = ["Autotuner", "Config", "Heuristics", "autotune", "heuristics", "OutOfResources", "PTXASError"]
