"""Remembers, across processes, what a @jit handle is built from, so that a new process
whose kernels are in the disk cache parses nothing: the reduced source text
(tessera/_source.py) and the kernel's parameters, which the C++ side would parse, and which
constexpr parameters the kernel calls (_compose.callable_constexpr_params, which reads the
kernel and its @jit helpers with inspect and ast). Reducing a file and finding those cost
1 to 4 ms; reading them back is one small file.

One entry per kernel: DIR/kernels/<2 hex>/<digest>.src, with the kernel entries, so it
counts towards TESSERA_CACHE_MAX_BYTES and is evicted like them. Its name is the digest
(BLAKE3, tessera._C.digest_hex: no hashlib to import) of the kernel file's bytes as they
are now, the function's name and first line, and what
decides the answer besides them: the rules (the size and mtime of _source.py, _compose.py
and _function_args.py, as Python's own .pyc files are checked) and libtessera's build
(its parameter parser). So a kernel whose file changed, or a new tessera, misses; nothing
is parsed to find that out. The extension finds the entry in one call
(tessera._C.source_entry_read: the rules' stat, the file, the digest and the entry's bytes), a
warm start's first step. The entry itself:

    tessera-source-4\\n
    {"params": [[name, is_constexpr, has_default], ...] or null, "calls": [...] or null,
     "files": {path: digest of each other file "calls" was read from},
     "reads": [[module, dotted name, fingerprint], ...] or null, "text_files": {path: digest}}\\n
    the reduced text (when "params" is not null)

"calls" is used only while every file in "files" is unchanged. A text that takes @jit functions,
constants or imports from other modules (_compose.foreign_source: every kernel torch's Inductor
generates calls its triton_helpers) is kept with what composing it read there ("reads": each
global looked up, in the kernel's module "" or another, with the fingerprint of its value,
_function_args.global_fingerprint; "text_files": the files appended text came from), and is used
only while every global gives the same fingerprint and every file the same digest: a new
process then reduces nothing (3 to 10 ms a kernel). Functions without a file (exec'd code), or
whose helpers capture variables, are never remembered. Any problem reading or writing an entry
just means doing the work as before.
"""
import os

_MAGIC = b"tessera-source-4\n"
_RULES = ("_source.py", "_compose.py", "_function_args.py")
# The files of the reduction's rules, which name an entry by their size and mtime (stat'ed by the
# extension with the lookup: no need to import them). Joined once, at import.
_rule_files = [os.path.join(os.path.dirname(os.path.abspath(__file__)), name) for name in _RULES]


def _rules():
    return _rule_files


def _read(path):
    """A file's bytes (read directly: linecache's decoding costs 0.1 ms), else None."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


class Entry:
    """A kernel's entry as read (or to be written): `path` (None: not remembered, as without a
    file or with the cache off); `text` and `params` (None: not held), `calls` (None: not held
    or out of date) and `files`, the digests `calls` depends on; `reads` and `text_files`, what
    a composed text depends on (None: the text is the file's alone)."""
    __slots__ = ("path", "text", "params", "calls", "files", "reads", "text_files")

    def __init__(self, path):
        self.path = path
        self.text = self.params = self.calls = self.reads = None
        self.files = {}
        self.text_files = {}


def lookup(C, fn):
    """The Entry for `fn` as its file is now (read once per JITFunction: jit.py keeps it). The file,
    the digest that names the entry and the entry itself are read in one call to the extension
    (tessera._C.source_entry_read, which also refreshes the entry's last-used time)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return Entry(None)
    head = f"{_MAGIC.decode()}{C.BUILD_ID}\n{fn.__name__}\n{code.co_firstlineno}\n"
    found = C.source_entry_read(code.co_filename, head.encode(), _rules())
    if found is None:  # the cache is off, or a file is not there
        return Entry(None)
    entry = Entry(found[0])
    data = found[1]
    if data is None or not data.startswith(_MAGIC):
        return entry
    import json
    try:
        end = data.index(b"\n", len(_MAGIC))
        header = json.loads(data[len(_MAGIC):end].decode())  # str: json need not guess the encoding
        reads = header["reads"]
        if header["params"] is not None and (reads is None or _reads_hold(C, fn, reads, header["text_files"])):
            entry.params = [tuple(p) for p in header["params"]]
            entry.text = data[end + 1:].decode("utf-8")
            entry.reads, entry.text_files = reads, header["text_files"]
        files = header["files"]
        if header["calls"] is not None and all(_file_digest(C, p) == d for p, d in files.items()):
            entry.calls = frozenset(header["calls"])
            entry.files = files
    except (ValueError, KeyError, TypeError, AttributeError):
        entry.text = entry.params = entry.calls = entry.reads = None
    return entry


def _reads_hold(C, fn, reads, text_files):
    """Whether composing `fn`'s text now would read what it read when it was remembered."""
    import sys
    from ._function_args import MISSING, global_fingerprint
    for module, dotted, fingerprint in reads:
        scope = fn.__globals__ if module == "" else getattr(sys.modules.get(module), "__dict__", None)
        if scope is None:
            return False
        first, *attributes = dotted.split(".")
        value = scope.get(first, MISSING)
        for attr in attributes:  # helpers.shim.pow, as _compose._module_attribute walks it
            if value is None or value is MISSING:
                break
            value = getattr(value, attr, None)
        if global_fingerprint(value)[0] != fingerprint:
            return False
    return all(_file_digest(C, p) == d for p, d in text_files.items())


def jit_kernel(C, entry, fn, name, defaults, do_not_specialize, reduce):
    """tessera._C.JitKernel for `fn`, from the remembered reduction when there is one; `reduce`:
    what gives (text, path, first_line, depends elsewhere, _compose.Reads) (the JITFunction's,
    which keeps it)."""
    if entry.text is not None:
        return C.JitKernel(entry.text, fn.__code__.co_filename, 1, name, defaults, do_not_specialize,
                           params=entry.params)
    text, file, first_line, elsewhere, reads = reduce()
    handle = C.JitKernel(text, file, first_line, name, defaults, do_not_specialize)
    if not entry.path or first_line != 1:  # not remembered, or a function-only fallback
        return handle
    if not elsewhere:  # the file's own reduction
        entry.reads, entry.text_files = None, {}
    elif reads is not None and reads.checkable:
        text_files = {p: _file_digest(C, p) for p in sorted(reads.files)}
        if not all(text_files.values()):
            return handle
        entry.reads = [[module, dotted, fp] for (module, dotted), fp in sorted(reads.names.items())]
        entry.text_files = text_files
    else:
        return handle
    entry.text, entry.params = text, [tuple(p) for p in handle.params]
    _write(C, entry)
    return handle


def callable_params(C, entry, fn):
    """_compose.callable_constexpr_params(fn), from the entry when it holds an answer that is
    still true (3-4 ms of a new process otherwise)."""
    if entry.calls is not None:
        return entry.calls
    from . import _compose
    files = set()
    params = _compose.callable_constexpr_params(fn, files)
    if entry.path:
        own = fn.__code__.co_filename  # in the entry's name already
        digests = {p: _file_digest(C, p) for p in sorted(files) if p != own}
        if all(digests.values()):
            entry.calls, entry.files = frozenset(params), digests
            _write(C, entry)
    return params


def _file_digest(C, path):
    data = _read(path)
    return None if data is None else C.digest_hex(data)


def _write(C, entry):
    """Writes the entry atomically and adds its bytes to the running total the size cap is kept
    by (under that total's lock: concurrent writers of one entry with different bytes are counted
    right); a failure just means no entry (an unwritable cache was reported by the C++ side
    already, or will be)."""
    import json
    header = {"params": None if entry.params is None else [list(p) for p in entry.params],
              "calls": None if entry.calls is None else sorted(entry.calls), "files": entry.files,
              "reads": entry.reads, "text_files": entry.text_files}
    data = _MAGIC + json.dumps(header).encode() + b"\n"
    if entry.params is not None:
        data += entry.text.encode("utf-8")
    C.cache_write(entry.path, data)
