"""@tessera.autotune and @tessera.heuristics, with Triton's semantics, plus
results that persist across processes.

    @tessera.autotune(configs=[tessera.Config({"BLOCK_SIZE": 128}, num_warps=4),
                               tessera.Config({"BLOCK_SIZE": 1024}, num_warps=8)],
                      key=["n_cols"], reset_to_zero=["out_ptr"])
    @tessera.jit
    def kernel(x_ptr, out_ptr, n_cols, BLOCK_SIZE: tl.constexpr): ...

    kernel[grid](x, out, n)        # tunes on the first launch for each key, then launches the winner
    kernel.best_config             # the Config of the last launch
    kernel.tune(x, out, n, grid=grid)   # tunes (or loads) without launching; returns the Config

The tuning key is the values of the `key` arguments plus the dtypes of every
tensor argument. A key entry may also be a pair (name, f): the argument's value
goes through f first, so that sizes can share a tuning by bucket (a tessera
extension: `("N", lambda n: 1 << (n - 1).bit_length())`, named functions read
better in the stored results). For a new key, the configs left after `prune_configs_by`
are compiled in parallel (threads; the C++ compiler releases the GIL), the
ones that fail (compile errors, too much shared memory, ...) are skipped
with their reason, and the rest are timed with CUDA events (torch's when
torch is there, else the runtime's): warm-up, then the median of repeated
runs. The fastest wins; ties go to the config listed first.

Every config's timing is stored in the cache directory (autotune/<sha256>.json,
one file per kernel source, key values, device and tessera version), so a
second process with the same key benchmarks nothing, and a changed config
list only benchmarks the configs not timed before. `tessera tune export` /
`import` move these files as one JSON database (tessera/tune.py).

Environment: TESSERA_AUTOTUNE=off (no benchmarking: the stored winner, else
the first config), TESSERA_PRINT_AUTOTUNING=1 (one line per tuning and per
stored result used), TESSERA_CACHE=off / TESSERA_CACHE_DIR (where results live).
"""
import os
import sys
import time
import warnings

# json, hashlib, statistics, tempfile and concurrent.futures are imported where used: this
# module is imported by `import tessera` (tessera.autotune is the decorator), which a warm
# start pays for in full.

from . import _env, _ext
from .errors import TesseraError, describe_value

FORMAT = "tessera-autotune-1"


# ---------------------------------------------------------------- Config

class Config:
    """One candidate: constexpr values plus launch options (Triton's triton.Config)."""

    def __init__(self, kwargs, num_warps=4, num_stages=3, num_ctas=1, maxnreg=None, pre_hook=None):
        self.kwargs = dict(kwargs)
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.num_ctas = num_ctas
        self.maxnreg = maxnreg
        self.pre_hook = pre_hook

    def all_kwargs(self):
        out = dict(self.kwargs)
        out["num_warps"] = self.num_warps
        out["num_stages"] = self.num_stages
        if self.num_ctas != 1:
            out["num_ctas"] = self.num_ctas
        if self.maxnreg is not None:
            out["maxnreg"] = self.maxnreg
        return out

    def to_json(self):
        out = {"kwargs": {k: _jsonable(v) for k, v in sorted(self.kwargs.items())},
               "num_warps": self.num_warps, "num_stages": self.num_stages}
        if self.maxnreg is not None:  # only when set: stored timings of configs without it still match
            out["maxnreg"] = self.maxnreg
        return out

    @classmethod
    def from_json(cls, d):
        return cls(d.get("kwargs", {}), num_warps=d.get("num_warps", 4), num_stages=d.get("num_stages", 3),
                   maxnreg=d.get("maxnreg"))

    def _id(self):
        """What makes two configs the same one (stored timings are matched by it)."""
        import json
        return json.dumps(self.to_json(), sort_keys=True)

    def __eq__(self, other):
        return isinstance(other, Config) and self._id() == other._id()

    def __hash__(self):
        return hash(self._id())

    def __str__(self):
        parts = [f"{k}: {v}" for k, v in self.kwargs.items()]
        parts += [f"num_warps: {self.num_warps}", f"num_stages: {self.num_stages}"]
        if self.maxnreg is not None:
            parts.append(f"maxnreg: {self.maxnreg}")
        return ", ".join(parts)

    __repr__ = __str__


def _jsonable(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return str(v)


# ------------------------------------------------------------- the kernels

class KernelInterface:
    """kernel[grid](*args, **kwargs) is kernel.run(*args, grid=grid, warmup=False, **kwargs), as in Triton
    (libraries subclass it with run(self, *args, grid, warmup, **kwargs))."""
    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)


# reset_to_zero / restore_value on torch tensors, or numpy arrays (interpreted kernels).
def _zero(x):
    x.zero_() if hasattr(x, "zero_") else x.fill(0)


def _clone(x):
    return x.clone() if hasattr(x, "clone") else x.copy()


def _copy_into(x, saved):
    x.copy_(saved) if hasattr(x, "copy_") else x.__setitem__(..., saved)


def _base_jit(fn):
    """The JITFunction under decorators."""
    while not hasattr(fn, "_source"):
        fn = fn.fn
    return fn


class Heuristics(KernelInterface):
    """@heuristics({"BLOCK_SIZE": lambda args: ...}): meta-parameters computed from the arguments."""

    def __init__(self, fn, values, *triton_values):
        if triton_values:  # Triton's Heuristics(fn, arg_names, values)
            values = triton_values[0]
        self.fn = fn
        self.values = values
        self.__name__ = getattr(fn, "__name__", "kernel")

    @property
    def arg_names(self):
        return self.fn.arg_names

    def _apply(self, args, kwargs):
        for name, heuristic in self.values.items():
            kwargs[name] = heuristic({**dict(zip(self.arg_names, args)), **kwargs})
        return kwargs

    def run(self, *args, **kwargs):
        return self.fn.run(*args, **self._apply(args, kwargs))

    def warmup(self, *args, **kwargs):
        return self.fn.warmup(*args, **self._apply(args, kwargs))


def heuristics(values):
    """Decorator: @tessera.heuristics({"EVEN_N": lambda args: args["n"] % 128 == 0})."""
    if not isinstance(values, dict):
        raise TypeError("heuristics() takes a dict {name: function of the arguments}, "
                        f"got {describe_value(values)}")
    for name, heuristic in values.items():
        if not callable(heuristic):
            raise TypeError(f"heuristics(): the value for {name!r} must be a function of the arguments "
                            f"(lambda args: ...), got {describe_value(heuristic)}")
    def decorator(fn):
        return Heuristics(fn, values)
    return decorator


# ------------------------------------------------------------------ timing

def _torch():
    try:
        import torch
        return torch if torch.cuda.is_available() else None
    except ImportError:
        return None


class _TorchPair:
    def __init__(self, torch):
        self.a = torch.cuda.Event(enable_timing=True)
        self.b = torch.cuda.Event(enable_timing=True)

    def begin(self):
        self.a.record()

    def end(self):
        self.b.record()

    def ms(self):
        return self.a.elapsed_time(self.b)


class _RuntimePair:
    def __init__(self, C):
        self.t = C.EventTimer()

    def begin(self):
        self.t.start()

    def end(self):
        self.t.stop()

    def ms(self):
        return self.t.elapsed_ms()


def do_bench(fn, warmup=25, rep=100, return_mode="median"):
    """Times fn() on the GPU with CUDA events: about `warmup` ms of warm-up runs, then about
    `rep` ms of timed runs, each between its own pair of events (with torch: on its current
    stream, the L2 cache flushed before each; without: the runtime's events on the legacy
    default stream, where tessera launches then). Returns the median ("min", "mean") in ms."""
    torch = _torch()
    if torch is not None:
        pair, synchronize = (lambda: _TorchPair(torch)), torch.cuda.synchronize
        flush_buffer = torch.empty(64 << 20, dtype=torch.int32, device="cuda")  # 256 MB, more than L2
        flush = flush_buffer.zero_
    else:
        C = _ext.require()
        pair, synchronize, flush = (lambda: _RuntimePair(C)), C.synchronize, (lambda: None)
    fn()
    synchronize()
    estimate = pair()
    estimate.begin()
    for _ in range(5):
        fn()
    estimate.end()
    synchronize()
    per_call = max(estimate.ms() / 5, 1e-4)
    for _ in range(max(1, int(warmup / per_call))):
        fn()
    pairs = [pair() for _ in range(max(1, min(int(rep / per_call), 1000)))]
    for p in pairs:
        flush()
        p.begin()
        fn()
        p.end()
    synchronize()
    times = [p.ms() for p in pairs]
    import statistics
    if return_mode == "min":
        return min(times)
    if return_mode == "mean":
        return statistics.fmean(times)
    return statistics.median(times)


# ------------------------------------------------------------- persistence

def cache_dir():
    """The cache root (the C++ rule of runtime/Cache.cpp); None when caching is off."""
    if not _env.flag("TESSERA_CACHE", default=True):
        return None
    try:
        config = _ext.require().cache_config()
        return config["dir"] if config["enabled"] else None
    except ImportError:
        pass
    if os.environ.get("TESSERA_CACHE_DIR"):
        return os.environ["TESSERA_CACHE_DIR"].rstrip("/") or "/"
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if xdg.startswith("/"):
        return os.path.join(xdg, "tessera")
    return os.path.join(os.path.expanduser("~"), ".cache", "tessera")


def tuning_dir():
    root = cache_dir()
    return None if root is None else os.path.join(root, "autotune")


def identity_digest(identity):
    """The file name of a tuning result: SHA-256 of its identity fields."""
    import hashlib
    import json
    text = json.dumps({k: identity[k] for k in ("kernel", "source_sha256", "key", "device", "tessera")},
                      sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def read_result(path):
    """A stored result, or None when missing; a corrupt file is reported once and ignored."""
    import json
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("timings"), list):
            raise ValueError("not a tessera tuning result")
        return data
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        _warn_once(path, f"tuning result {path} is unreadable ({e}); tuning again")
        return None


def write_result(path, data):
    """Atomically (a temporary file renamed into place); False if the directory is not writable."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        import json
        import tempfile
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp.", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
        return True
    except OSError as e:
        _warn_once("unwritable:" + os.path.dirname(path),
                   f"cannot store tuning results in {os.path.dirname(path)} ({e}); they last for this process only")
        return False


_warned = set()


def _warn_once(key, message):
    if key not in _warned:
        _warned.add(key)
        print(f"tessera: warning: {message}", file=sys.stderr)


def _device_name():
    try:
        C = _ext.require()
        if C.driver_available() and C.device_count() > 0:
            return C.device_properties(-1)["name"]
    except (ImportError, TesseraError):
        pass
    return "no-gpu"


# --------------------------------------------------------------- Autotuner

# Autotuner's parameters in tessera's order, and in Triton's (libraries that subclass Autotuner
# call Triton's, positionally: Autotuner(fn, arg_names, configs, key, reset_to_zero, ...)).
_AUTOTUNER_PARAMS = ["configs", "key", "prune_configs_by", "reset_to_zero", "restore_value", "pre_hook", "post_hook",
                     "warmup", "rep", "do_bench", "use_cuda_graph", "cache_results"]
_TRITON_AUTOTUNER_PARAMS = ["arg_names", "configs", "key", "reset_to_zero", "restore_value", "pre_hook", "post_hook",
                            "prune_configs_by", "warmup", "rep", "use_cuda_graph", "do_bench", "cache_results"]


class Autotuner(KernelInterface):
    def __init__(self, fn, *args, **kwargs):
        tritons = bool(args) and isinstance(args[0], (list, tuple)) and bool(args[0]) and \
            all(isinstance(a, str) for a in args[0]) or "arg_names" in kwargs
        names = _TRITON_AUTOTUNER_PARAMS if tritons else _AUTOTUNER_PARAMS
        if len(args) > len(names):
            raise TypeError(f"Autotuner() takes at most {len(names) + 1} positional arguments")
        bound = dict(zip(names, args))
        for name, value in kwargs.items():
            if name not in names:
                raise TypeError(f"Autotuner() got an unexpected keyword argument '{name}'")
            if name in bound:
                raise TypeError(f"Autotuner() got multiple values for argument '{name}'")
            bound[name] = value
        for name in ("arg_names", "use_cuda_graph", "cache_results"):  # arg_names: the kernel's
            bound.pop(name, None)
        self._setup(fn, **bound)

    def _setup(self, fn, configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None,
               pre_hook=None, post_hook=None, warmup=25, rep=100, do_bench=None):
        self.fn = fn
        self.base_fn = _base_jit(fn).fn  # Triton's: the Python function under the decorators
        self.nargs = None
        self.configs = _checked_configs(configs)
        self.keys = _checked_key(key)
        self._keys_checked = False  # the names, against the kernel's parameters (at the first tuning)
        self.reset_to_zero = list(reset_to_zero or [])
        self.restore_value = list(restore_value or [])
        self.user_pre_hook = pre_hook
        self.user_post_hook = post_hook
        prune = _checked_prune(prune_configs_by)
        self.perf_model = prune.get("perf_model")
        self.top_k = prune.get("top_k", 1.0)
        self.early_config_prune = prune.get("early_config_prune")
        self.warmup_ms = warmup if warmup is not None else 25
        self.rep_ms = rep if rep is not None else 100
        self.do_bench = do_bench or (lambda call: do_bench_default(call, self.warmup_ms, self.rep_ms))
        self.cache = {}            # tuning key -> best Config (this process)
        self.configs_timings = {}  # Config -> ms (None: failed) of the last tuning
        self.failures = {}         # Config -> reason, of the last tuning
        self.best_config = None
        self.bench_count = 0       # configs benchmarked by this process (tests, logs)
        self.loaded_count = 0      # tunings answered from stored results
        self._benchmarked_now = False
        self.__name__ = getattr(fn, "__name__", "kernel")

    @property
    def arg_names(self):
        return self.fn.arg_names

    # -- keys and identity
    def _check_key_names(self):
        """A key entry that names no parameter of the kernel is left out of the key, as Triton does
        (libraries keep stale keys: flash-linear-attention's solve_tril lists 'K' and 'BT' for a kernel
        without them), with a warning: a tuning for one size then serves every other."""
        if self._keys_checked:
            return
        names = self.arg_names
        for entry in self.keys:
            name = entry if isinstance(entry, str) else entry[0]
            if name not in names:
                warnings.warn(f"autotune(): key {name!r} is not a parameter of {self.__name__} "
                              f"(its parameters: {', '.join(names)}); it is left out of the key, as in Triton",
                              stacklevel=4)
        self._keys_checked = True

    def _named(self, args, kwargs):
        names = self.arg_names  # a property that builds the list: once, not once per keyword
        named = dict(zip(names, args))
        named.update({k: v for k, v in kwargs.items() if k in names})
        return named

    def _config_names(self):
        """Every name a config sets (its kwargs, num_warps, num_stages, ...): what a call must not pass."""
        names = set()
        for c in self.configs:
            names.update(c.kwargs)
            names.update(("num_warps", "num_stages"))
            if c.num_ctas != 1:
                names.add("num_ctas")
            if c.maxnreg is not None:
                names.add("maxnreg")
        return names

    def tuning_key(self, named):
        key = []
        for entry in self.keys:
            name, f = (entry, None) if isinstance(entry, str) else entry
            if name in named:
                key.append(_jsonable(f(named[name]) if f else named[name]))
        for name in self.arg_names:
            arg = named.get(name)
            if hasattr(arg, "dtype"):
                key.append(str(arg.dtype))
            elif hasattr(arg, "__cuda_array_interface__"):
                key.append(str(arg.__cuda_array_interface__.get("typestr")))
        return tuple(key)

    def key_names(self):
        """The key's entries as text: a name, or name:function for a (name, f) pair."""
        return [e if isinstance(e, str) else f"{e[0]}:{getattr(e[1], '__name__', 'f')}" for e in self.keys]

    def _identity(self, key):
        jit = _base_jit(self.fn)
        text = jit._get_handle().source  # what the compiler gets (no second reduction of the file)
        try:
            version = _ext.require().version()
        except ImportError:
            version = "unknown"
        import hashlib
        return {"kernel": jit.__name__, "source_sha256": hashlib.sha256(text.encode()).hexdigest(),
                "key": list(key), "key_names": self.key_names() + ["dtypes..."], "device": _device_name(),
                "tessera": version}

    def _result_path(self, identity):
        d = tuning_dir()
        return None if d is None else os.path.join(d, identity_digest(identity) + ".json")

    # -- pruning
    def prune_configs(self, named, kwargs=None):
        if kwargs is None:  # Triton's prune_configs(kwargs), the arguments in self.nargs
            kwargs = named
            named = {**(self.nargs or {}), **{k: v for k, v in kwargs.items() if k in self.arg_names}}
        configs = self.configs
        if self.early_config_prune:
            configs = self.early_config_prune(configs, named, **kwargs)
            if not configs:  # (Triton refuses this too)
                raise ValueError(f"{self.__name__}: prune_configs_by's early_config_prune kept none of the "
                                 f"{len(self.configs)} configs; it must return at least one tessera.Config")
        if self.perf_model:
            top_k = self.top_k
            if isinstance(top_k, float) and top_k <= 1.0:
                top_k = max(1, int(len(self.configs) * top_k))
            elif not isinstance(top_k, int) or isinstance(top_k, bool) or top_k < 1:
                raise TypeError("prune_configs_by['top_k'] must be an int >= 1 or a float <= 1.0, "
                                f"got {describe_value(top_k)}")
            if len(configs) > top_k:
                est = [(self.perf_model(**named, **kwargs, **c.all_kwargs()), i, c) for i, c in enumerate(configs)]
                configs = [c for _, _, c in sorted(est, key=lambda t: (t[0], t[1]))[:top_k]]
        return list(configs)

    # -- compiling and timing
    def _compile_all(self, configs, args, kwargs):
        """Compiles (and loads, with a GPU) every config in parallel; {Config: reason} of the failures.
        A config with a pre_hook may change what the arguments specialise to (a TMA descriptor's
        block_shape is part of the signature), so those compile one at a time, each right after
        its hook has run on the arguments, as its timed runs will see them."""
        C = _ext.require()
        gpu = C.driver_available() and C.device_count() > 0

        def one(config):
            try:
                compiled = self.fn.warmup(*args, **kwargs, **config.all_kwargs(), grid=None)
                if gpu:
                    compiled._init_handles()  # the PTX JIT and the load (shared-memory limits) off the GIL too
                return None
            except (TesseraError, ValueError, TypeError) as e:
                return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        free = [c for c in configs if not c.pre_hook]
        workers = max(1, min(len(free), os.cpu_count() or 1, 16))
        import concurrent.futures
        with concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="tessera-autotune") as pool:
            reasons = dict(zip(free, pool.map(one, free)))
        named = self._named(args, kwargs)
        for config in configs:
            if config.pre_hook:
                config.pre_hook({**named, **config.all_kwargs()})
                reasons[config] = one(config)
        return {c: reasons[c] for c in configs if reasons[c]}

    def _hooks(self, named):
        torch_restore = {}

        def pre(config):
            for name in self.reset_to_zero:
                _zero(named[name])
            for name in self.restore_value:
                torch_restore[name] = _clone(named[name])
            if config.pre_hook:
                config.pre_hook({**named, **config.all_kwargs()})
            if self.user_pre_hook:
                self.user_pre_hook({**named, **config.all_kwargs()})

        def post(config, exception):
            for name, saved in torch_restore.items():
                _copy_into(named[name], saved)
            torch_restore.clear()
            if self.user_post_hook:
                self.user_post_hook({**named, **config.all_kwargs()}, exception)
        return pre, post

    def _time_config(self, config, args, kwargs, grid, named):
        pre, post = self._hooks(named)
        current = {**kwargs, **config.all_kwargs()}

        def call():
            pre(config)
            exception = None
            try:
                self.fn.run(*args, grid=grid, **current)
            except Exception as e:  # noqa: BLE001 (handed to post_hook, then re-raised)
                exception = e
                raise
            finally:
                post(config, exception)
        call.config = config  # for fake timers in tests
        self.bench_count += 1
        return float(self.do_bench(call))

    # -- Triton's Autotuner methods, for libraries that subclass it and override run()
    def _bench(self, *args, config, **meta):
        """Triton's: [median, p20, p80] ms of one config (inf where it fails to compile or run)."""
        grid = meta.pop("grid", None)
        meta.pop("warmup", None)
        if _base_jit(self.fn).interpret:  # no timing on the host: every config ties, the first wins
            return [0.0, 0.0, 0.0]
        named = {**(self.nargs or {}), **self._named(args, meta)}
        try:
            ms = self._time_config(config, args, meta, grid, named)
        except (TesseraError, ValueError, TypeError):
            ms = float("inf")
        return [ms, ms, ms]

    def pre_hook(self, kwargs, reset_only=False):
        """Triton's: zero reset_to_zero's arguments; unless reset_only, save restore_value's and
        call the user's pre_hook."""
        for name in self.reset_to_zero:
            _zero(kwargs[name])
        if not reset_only:
            self._saved = {name: _clone(kwargs[name]) for name in self.restore_value}
            if self.user_pre_hook:
                self.user_pre_hook(kwargs)

    def post_hook(self, kwargs, exception):
        """Triton's: put restore_value's arguments back; call the user's post_hook."""
        for name, saved in getattr(self, "_saved", {}).items():
            _copy_into(kwargs[name], saved)
        self._saved = {}
        if self.user_post_hook:
            self.user_post_hook(kwargs, exception)

    # -- the tuning itself
    def tune(self, *args, grid=None, **kwargs):
        """The best Config for these arguments: from this process, the stored results, or by
        benchmarking the configs not timed yet. Launches nothing else."""
        # Every launch comes here: one set of the configs' names, not a dict per keyword and config
        # (fla's launches pass ~20 keywords to 12 configs: that was most of their host time).
        set_by_configs = self._config_names()
        for k in kwargs:
            if k in set_by_configs:
                raise ValueError(f"{self.__name__}(): '{k}' is set by the autotuner's configs; do not pass it")
        self._check_key_names()
        named = self._named(args, kwargs)
        self._benchmarked_now = False
        if len(self.configs) == 1:  # nothing to choose from (Triton: no tuning either)
            return self.configs[0]
        key = self.tuning_key(named)
        if key in self.cache:
            return self.cache[key]
        identity = self._identity(key)
        path = self._result_path(identity)
        stored = read_result(path) if path else None
        if stored and stored.get("source_sha256") != identity["source_sha256"]:
            stored = None
        known = {}
        for t in (stored or {}).get("timings", []):
            known[Config.from_json(t["config"])] = (t.get("ms"), t.get("error"))

        if _base_jit(self.fn).interpret:  # host timings say nothing about the GPU: no tuning
            best = self.prune_configs(named, kwargs)[0]
            self._log(f"{self.__name__}: interpreted: using the first config for key {key}: {best}")
            self.cache[key] = best
            return best
        if not _env.flag("TESSERA_AUTOTUNE", default=True):
            best = Config.from_json(stored["best"]) if stored and stored.get("best") else self.configs[0]
            match = [c for c in self.configs if c == best]
            best = match[0] if match else best
            self._log(f"{self.__name__}: TESSERA_AUTOTUNE=off: using {'the stored' if stored else 'the first'} "
                      f"config for key {key}: {best}")
            self.cache[key] = best
            return best

        configs = self.prune_configs(named, kwargs)
        todo = [c for c in configs if c not in known]
        start = time.perf_counter()
        if todo:
            if grid is None:
                raise ValueError(f"{self.__name__}: tuning needs the grid (tune(..., grid=...))")
            failures = self._compile_all(todo, args, kwargs)
            progress = _Progress(self.__name__, len(todo))
            for i, config in enumerate(todo):
                progress.show(i, config)
                if config in failures:
                    known[config] = (None, failures[config])
                    continue
                try:
                    known[config] = (self._time_config(config, args, kwargs, grid, named), None)
                except (TesseraError, ValueError, TypeError) as e:
                    known[config] = (None, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            progress.done()
            self._benchmarked_now = True
        else:
            self.loaded_count += 1
        self.configs_timings = {c: known[c][0] for c in configs}
        self.failures = {c: known[c][1] for c in configs if known[c][1]}
        ranked = [(known[c][0], i, c) for i, c in enumerate(configs) if known[c][0] is not None]
        if not ranked:
            reasons = "; ".join(f"[{c}] {known[c][1]}" for c in configs)
            raise RuntimeError(f"{self.__name__}: every autotuning config failed: {reasons}")
        best_ms, _, best = min(ranked, key=lambda t: (t[0], t[1]))  # ties: the config listed first
        if todo and path:
            all_known = sorted(known.items(), key=lambda kv: kv[0]._id())
            write_result(path, {**identity, "format": FORMAT, "best": best.to_json(), "best_ms": best_ms,
                                "timings": [{"config": c.to_json(), "ms": ms, "error": err}
                                            for c, (ms, err) in all_known]})
        self._log(f"{self.__name__}: key {key}: best {best} ({best_ms:.4f} ms); "
                  + (f"{len(todo)} config(s) benchmarked in {time.perf_counter() - start:.2f} s"
                     + (f", {len(configs) - len(todo)} from stored results" if len(configs) > len(todo) else "")
                     if todo else "every timing from stored results, none benchmarked"))
        self.cache[key] = best
        return best

    def _log(self, message):
        if _env.flag("TESSERA_PRINT_AUTOTUNING"):
            print(f"tessera: autotune: {message}", file=sys.stderr, flush=True)

    def run(self, *args, grid, warmup=False, **kwargs):
        if warmup:
            return self.warmup(*args, grid=grid, **kwargs)
        config = self.tune(*args, grid=grid, **kwargs)
        self.best_config = config
        if self._benchmarked_now:  # the timed runs left their output: zero it again (Triton does too)
            named = self._named(args, kwargs)
            for name in self.reset_to_zero:
                _zero(named[name])
        if config.pre_hook:
            config.pre_hook({**self._named(args, kwargs), **config.all_kwargs()})
        return self.fn.run(*args, grid=grid, **kwargs, **config.all_kwargs())

    def warmup(self, *args, **kwargs):
        """Compiles every (pruned) config for these arguments; returns the CompiledKernels."""
        named = self._named(args, kwargs)
        return [self.fn.warmup(*args, **kwargs, **c.all_kwargs()) for c in self.prune_configs(named, kwargs)]


def _checked_configs(configs):
    """autotune()'s configs as a list, each a Config (a dict would otherwise fail later, far away)."""
    if isinstance(configs, Config):
        raise TypeError("autotune(): configs must be a list of tessera.Config, got one Config (write configs=[...])")
    if isinstance(configs, (dict, str)) or not hasattr(configs, "__iter__"):
        raise TypeError(f"autotune(): configs must be a list of tessera.Config, got {describe_value(configs)}")
    configs = list(configs)
    if not configs:  # Triton's rule: no configs is one default Config (num_warps 4, num_stages 3)
        return [Config({})]
    for i, config in enumerate(configs):
        if not isinstance(config, Config):
            hint = f" (write tessera.Config({config!r}))" if isinstance(config, dict) else ""
            raise TypeError(f"autotune(): configs[{i}] must be a tessera.Config, got {describe_value(config)}{hint}")
    return configs


def _checked_key(key):
    """autotune()'s key as a list of entries, each a parameter name or a (name, function) pair."""
    if isinstance(key, str):  # Triton would take it letter by letter
        raise TypeError(f"autotune(): key must be a list of parameter names, got the string {key!r} "
                        f"(write key=[{key!r}])")
    if not isinstance(key, (list, tuple)):
        raise TypeError(f"autotune(): key must be a list of parameter names, got {describe_value(key)}")
    for i, entry in enumerate(key):
        pair = isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[0], str) and callable(entry[1])
        if not isinstance(entry, str) and not pair:
            raise TypeError(f"autotune(): key[{i}] must be a parameter name or a (name, function) pair, "
                            f"got {describe_value(entry)}")
    return list(key)


PRUNE_ENTRIES = ("early_config_prune", "perf_model", "top_k")


def _checked_prune(prune_configs_by):
    """prune_configs_by as a dict of Triton's three entries (a misspelt one would be ignored)."""
    if prune_configs_by is None:
        return {}
    if not isinstance(prune_configs_by, dict):
        raise TypeError("autotune(): prune_configs_by must be a dict with early_config_prune, perf_model "
                        f"and/or top_k, got {describe_value(prune_configs_by)}")
    for name, value in prune_configs_by.items():
        if name not in PRUNE_ENTRIES:
            raise ValueError(f"autotune(): prune_configs_by has no entry {name!r} "
                             f"(its entries: {', '.join(PRUNE_ENTRIES)})")
        if name != "top_k" and value is not None and not callable(value):
            raise TypeError(f"autotune(): prune_configs_by[{name!r}] must be a function, got {describe_value(value)}")
    return prune_configs_by


def do_bench_default(call, warmup, rep):
    return do_bench(call, warmup=warmup, rep=rep)


class _Progress:
    """One line on stderr while tuning (rewritten in place on a terminal)."""

    def __init__(self, name, total):
        self.name, self.total = name, total
        self.tty = sys.stderr.isatty()
        self.verbose = _env.flag("TESSERA_PRINT_AUTOTUNING")

    def show(self, i, config):
        if self.tty or self.verbose:
            line = f"tessera: autotuning {self.name} [{i + 1}/{self.total}] {config}"
            print(("\r\x1b[K" + line) if self.tty else line, end="" if self.tty else "\n", file=sys.stderr,
                  flush=True)

    def done(self):
        if self.tty:
            print("\r\x1b[K", end="", file=sys.stderr, flush=True)


def autotune(configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None, pre_hook=None,
             post_hook=None, warmup=None, rep=None, use_cuda_graph=False, do_bench=None, cache_results=True):
    """Decorator (Triton's triton.autotune): tune `configs` for each value of the `key` arguments.

    configs: a non-empty list of Config; key: a list of parameter names (or (name, f) pairs), each
    checked against the kernel's parameters at the first tuning.

    prune_configs_by: {"early_config_prune": f(configs, named_args, **kwargs) -> configs,
                       "perf_model": f(**named_args, **kwargs, **config) -> estimated ms, "top_k": int or fraction}
    reset_to_zero / restore_value: names of tensor arguments zeroed before / restored after each timed run.
    do_bench: f(call) -> ms, replacing the CUDA-event timer (call.config is the config being timed).
    Results always persist in the cache directory (cache_results is accepted for Triton's sake).
    """
    # Checked at the decorator's line, not at a launch far away.
    configs, key, prune_configs_by = _checked_configs(configs), _checked_key(key), _checked_prune(prune_configs_by)

    def decorator(fn):
        return Autotuner(fn, configs, key, prune_configs_by=prune_configs_by, reset_to_zero=reset_to_zero,
                         restore_value=restore_value, pre_hook=pre_hook, post_hook=post_hook, warmup=warmup,
                         rep=rep, do_bench=do_bench)
    return decorator
