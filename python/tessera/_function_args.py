"""The @jit functions among a launch's arguments (what _compose.py composes a kernel with),
found without parsing anything: this is on the launch path of every kernel whose constexprs
may receive functions, so it imports neither ast nor inspect (a warm start in a new process
pays for every import).

    as_jit(obj)                                 the JITFunction behind obj, or None
    split_function_args(kernel, args, kwargs)   ({param: function}, args, kwargs) without them
                                                (functions in tuple arguments replaced by their names)
    function_constexprs({param: fn})            the constexpr values (names) that stand for them
    language_function_name(value)               "tessera.language.extra.cuda.globaltimer", or None
    global_fingerprint(value)                   what composing a kernel takes from a global (below)
"""
import types

from ._ext import JitFunctionBase


def as_jit(obj):
    """The JITFunction behind a @jit function, @tessera.elementwise function or autotuner; None if none.
    (JitFunctionBase is the base class of JITFunction alone: this module sits below jit.py.)"""
    if isinstance(obj, tuple):  # a NamedTuple with a field `fn` (Function(fn, captured)) is no function
        return None
    seen = 0
    while obj is not None and not isinstance(obj, JitFunctionBase) and seen < 8:
        nxt = getattr(obj, "jit_function", None) or getattr(obj, "fn", None)
        if nxt is obj:
            break
        obj = nxt
        seen += 1
    return obj if isinstance(obj, JitFunctionBase) else None


def is_language_function(value):
    """A function of tessera.language (tl.cast, libdevice.tanh, ...): device-only, known to the front-end."""
    return isinstance(value, types.FunctionType) and getattr(value, "__module__", "").startswith("tessera.language") \
        and as_jit(value) is None


def function_constexprs(functions):
    """The constexpr values for the parameters given functions (a tuple's functions, keyed "param[i]",
    were replaced by their names in the tuple itself: tuple_functions)."""
    return {param: as_jit(f).fn.__name__ for param, f in functions.items() if "[" not in param}


def tuple_functions(value, label, functions):
    """`value` with the @jit functions among a tuple's leaves (nested tuples and NamedTuples too: Triton's
    test_namedtuple passes Function(fn, captured)) replaced by their names, which the front-end calls
    as the functions; each goes into `functions` keyed "label[i]"."""
    if not isinstance(value, tuple):
        if as_jit(value) is not None and not isinstance(value, (int, float, str, bool)):
            functions[label] = value
            return as_jit(value).fn.__name__
        return value
    items = [tuple_functions(v, f"{label}[{i}]", functions) for i, v in enumerate(value)]
    if all(a is b for a, b in zip(items, value)):
        return value
    return type(value)._make(items) if hasattr(type(value), "_make") else type(value)(items)


def language_function_name(value):
    """A language function's dotted name under tessera.language ("tessera.language.extra.cuda.globaltimer"),
    which the front-end calls when a string constexpr holding it is called; None for anything else."""
    if not is_language_function(value):
        return None
    return f"{value.__module__}.{value.__name__}"


def split_function_args(kernel, args, kwargs):
    """({param: function}, args, kwargs) with the @jit-function-valued arguments taken out; language
    functions (tl.extra.cuda.globaltimer) passed as constexprs become their dotted names."""
    functions = {}
    new_kwargs = {}
    args = tuple(language_function_name(a) or a for a in args)
    if any(isinstance(a, tuple) for a in args):
        args = tuple(tuple_functions(a, f"#{i}", functions) if isinstance(a, tuple) else a for i, a in enumerate(args))
    for k, v in kwargs.items():
        if as_jit(v) is not None and not isinstance(v, (int, float, str, bool)):
            functions[k] = v
        elif isinstance(v, tuple):
            new_kwargs[k] = tuple_functions(v, k, functions)
        else:
            new_kwargs[k] = language_function_name(v) or v
    new_args = list(args)
    if any(as_jit(a) is not None for a in args):
        import inspect  # only for functions passed positionally
        names = list(inspect.signature(kernel.fn).parameters)
        for i, a in enumerate(args):
            if as_jit(a) is not None and i < len(names):
                functions[names[i]] = a
                new_args[i] = None
        # Positional function arguments: pass every later argument by keyword.
        first = min(names.index(p) for p in functions if p in names[:len(args)]) if any(
            p in names[:len(args)] for p in functions) else len(args)
        for i in range(first, len(args)):
            if names[i] not in functions:
                new_kwargs[names[i]] = args[i]
        new_args = new_args[:first]
    return functions, tuple(new_args), new_kwargs


MISSING = object()  # a global that is not there


def global_fingerprint(value):
    """(fingerprint, file): what decides how composing a kernel (_compose.foreign_source, _collect)
    treats a global it looks up: a @jit function's name and place (file: the file its text comes
    from), a module's name, a constant's value, a function's or class's name, else the type. Two
    values with the same fingerprint compose to the same text; _source_cache.py compares them to
    reuse a composed text in a new process."""
    if value is MISSING:
        return "-", None
    inner = as_jit(value)
    if inner is not None:
        code = getattr(inner.fn, "__code__", None)
        if code is None:
            return f"jit {id(inner)}", None  # never equal in another process: not reused
        return (f"jit {inner.fn.__module__}.{inner.fn.__qualname__} {code.co_filename}:{code.co_firstlineno}",
                code.co_filename)
    if isinstance(value, types.ModuleType):
        return f"module {value.__name__}", None
    if isinstance(value, (bool, int, float, str)):
        return f"{type(value).__name__} {value!r}", None
    if type(value).__name__ == "constexpr":
        return f"constexpr {getattr(value, 'value', None)!r}", None
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, type)):
        return f"{type(value).__name__} {getattr(value, '__module__', None)}.{getattr(value, '__qualname__', None)}", None
    return f"{type(value).__module__}.{type(value).__qualname__}", None
