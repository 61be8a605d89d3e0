"""The stand-in `triton` package of tessera's process-wide compatibility mode.

tessera.compat.install(process_wide=True) puts this folder's parent first on sys.path; torch
starts its compile workers with that sys.path as PYTHONPATH, so there `import triton` finds this
package first. Importing it turns the process-wide mode on in that process too, which puts
tessera's `triton` into sys.modules in its place (docs/torch-compile.md)."""
import sys

import tessera.compat

tessera.compat.install(process_wide=True)
sys.modules[__name__] = tessera.compat.facade_module("triton")
