"""triton.knobs in tessera's compatibility mode: the settings torch's Inductor reads and writes
(docs/torch-compile.md). Hooks set here are called: knobs.runtime.launch_enter_hook and
launch_exit_hook by the compiled kernel's run() when Inductor passes them (it reads them from
here), jit_post_compile_hook by Inductor itself after triton.compile(). tessera's own settings
are its environment variables (TESSERA_CACHE_DIR, TESSERA_DEBUG, ...); the other knobs Triton has
are not offered (AttributeError)."""
import types

# Launch hooks (proton's and Inductor's profilers): f(launch_metadata) around each launch.
runtime = types.SimpleNamespace(launch_enter_hook=None, launch_exit_hook=None, jit_post_compile_hook=None,
                                jit_cache_hook=None, interpret=False, debug=False)

__all__ = ["runtime"]
