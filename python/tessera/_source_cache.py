"""Remembers, across processes, what a @jit handle is built from: the reduced
source text (tessera/_source.py) and the kernel's parameters. Reducing a file
means ast.parse in Python and parsing the kernel's parameters in C++: about
1 ms for kernels/softmax.py, most of a warm start in a new process (where the
compiled kernel itself comes from the disk cache). With this, a new process
reads the kernel's file, hashes it and reads one small JSON file instead.

The entry's name is the SHA-256 of the file's text, the function's name and
first line, and _source.py's own text (a changed reduction rule misses); it
lives with the kernel entries (DIR/kernels/<2 hex>/<digest>.src.json), so it
counts towards TESSERA_CACHE_MAX_BYTES and is evicted like them. Functions
without a file (exec'd code) are never cached. Any problem reading or
writing an entry just means reducing the source as before.
"""
import hashlib
import json
import os
import tempfile

from . import _compose, _source

_FORMAT = "tessera-source-2"
_rules = None


def _rules_digest():
    global _rules
    if _rules is None:
        try:
            with open(_source.__file__, "rb") as f:
                _rules = hashlib.sha256(f.read()).hexdigest()
        except OSError:
            _rules = ""
    return _rules


def _read(path):
    """A file's bytes (read directly: linecache's decoding cost 0.1 ms), else None."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def _entry_path(C, fn, suffix):
    """DIR/kernels/<2 hex>/<digest><suffix>, the digest over fn's file as it is now (what the
    reduction reads too); None without a file or with the cache off."""
    code = getattr(fn, "__code__", None)
    text = _read(code.co_filename) if code is not None else None
    config = C.cache_config()
    if not text or not config["enabled"] or not _rules_digest():
        return None
    h = hashlib.sha256(f"{_FORMAT}\0{_rules}\0{fn.__name__}\0{code.co_firstlineno}\0".encode())
    h.update(text)
    digest = h.hexdigest()
    return os.path.join(config["dir"], "kernels", digest[:2], digest + suffix)


def jit_kernel(C, fn, name, defaults, do_not_specialize):
    """tessera._C.JitKernel for `fn`, from the remembered reduction when there is one."""
    path = _entry_path(C, fn, ".src.json")
    if path:
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            os.utime(path)  # last used: now (the cache's LRU eviction)
            params = [tuple(p) for p in data["params"]]
            return C.JitKernel(data["text"], fn.__code__.co_filename, 1, name, defaults, do_not_specialize,
                               params=params)
        except (OSError, ValueError, KeyError, TypeError):
            pass
    text, file, first_line, elsewhere = _compose.kernel_source_and_dependencies(fn)
    handle = C.JitKernel(text, file, first_line, name, defaults, do_not_specialize)
    if path and first_line == 1 and not elsewhere:  # the file's own reduction (not a function-only fallback)
        _write_entry(C, path, {"format": _FORMAT, "text": text, "params": [list(p) for p in handle.params]})
    return handle


def _write_entry(C, path, data):
    """Writes a JSON entry atomically (a temp file renamed into place) and adds its bytes to the
    running total the size cap is kept by; a failure just means no entry (an unwritable cache
    was reported by the C++ side already, or will be)."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        try:
            replaced = os.stat(path).st_size
        except OSError:
            replaced = 0
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=os.path.basename(path) + ".tmp.")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f)
        written = os.stat(tmp).st_size
        os.replace(tmp, path)
    except OSError:
        return
    C.cache_account(written - replaced)


def _file_digest(path):
    data = _read(path)
    return None if data is None else hashlib.sha256(data).hexdigest()


def callable_params(C, fn):
    """_compose.callable_constexpr_params(fn), remembered across processes: finding out reads
    the source of the kernel and its @jit helpers with inspect and ast (3-4 ms in a new process,
    most of a warm start). The entry records a digest of every file that was read; a changed
    file means computing it again."""
    path = _entry_path(C, fn, ".calls.json")
    if path:
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            if data["format"] == _FORMAT and all(_file_digest(p) == d for p, d in data["files"].items()):
                return frozenset(data["params"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            pass
    files = set()
    params = _compose.callable_constexpr_params(fn, files)
    if path:
        digests = {p: _file_digest(p) for p in sorted(files)}
        if all(digests.values()):
            _write_entry(C, path, {"format": _FORMAT, "params": sorted(params), "files": digests})
    return params
