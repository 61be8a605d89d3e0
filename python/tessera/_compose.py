"""@jit functions as constexpr arguments: the source text that travels with them.

Triton lets a kernel take a @jit function as a constexpr and call it
(`EPILOGUE: tl.constexpr` ... `acc = EPILOGUE(acc, bias)`). tessera's
front-end compiles a kernel from the text of its file, so a function defined
elsewhere (the user's script) has to travel with it. This module finds that
text; jit.py's compose() builds the kernel from it:

* function_source(fns) -> the source text of @jit functions (decorators
  normalised to `@jit`), of the @jit helpers they call (transitively), and of
  the imports and int/float/bool constants (globals or closure variables)
  they use, ready to be appended to another module's text;
* function_constexprs({param: fn}) -> the constexpr values that stand for the
  functions: their names, which the specialiser resolves (calling a string
  constexpr calls the @jit function of that name: dsl/SpecializerExpr.cpp);
* callable_constexpr_params(fn) -> the constexpr parameters a kernel calls
  (only kernels that call one take the composing launch path);
* split_function_args(kernel, args, kwargs) -> the @jit functions among a
  launch's arguments, taken out.

JITFunction's launch path (jit.py) composes when a constexpr argument is a
@jit function, so `kernel[grid](..., EPILOGUE=bias_gelu)` works as in Triton.
Composed kernels are cached per (kernel, functions).

Limits: the appended functions' diagnostics name the kernel's file at lines
past its end (the source line they print is the right one); a name the
kernel's file already defines differently is an error (rename the function);
closures may capture only ints, floats, bools and @jit functions.
"""
import ast
import importlib.util
import inspect
import textwrap
import types

from . import _source
# What a launch needs of this module lives in _function_args.py (no ast or inspect to import).
from ._function_args import as_jit, function_constexprs, language_function_name, split_function_args  # noqa: F401
from ._function_args import MISSING, global_fingerprint
from ._function_args import is_language_function as _language_function


class CompositionError(TypeError):
    pass


class Reads:
    """What composing a kernel's text read outside the kernel's file, so that _source_cache.py can
    remember the text and reuse it in a new process while every read gives the same answer:
    `names` {(module, dotted name): fingerprint} of each global looked up (module "" is the
    kernel's own globals; _function_args.global_fingerprint), `files` the files whose text was
    read (@jit functions appended), `checkable` False when something cannot be looked up again
    (a helper's closure)."""

    def __init__(self, kernel_globals):
        self.kernel_globals = kernel_globals
        self.names = {}
        self.files = set()
        self.checkable = True

    def note(self, module_globals, module, dotted, value):
        owner = "" if module_globals is self.kernel_globals else module
        fingerprint, file = global_fingerprint(value)
        self.names[(owner, dotted)] = fingerprint
        if file:
            self.files.add(file)


class _RecordedScope:
    """A module's globals whose look-ups are noted in a Reads (the reads _compose makes of a scope:
    `in`, [], get)."""

    def __init__(self, module_globals, module, reads):
        self.globals, self.module, self.reads = module_globals, module, reads

    def _look(self, name):
        value = self.globals.get(name, MISSING)
        self.reads.note(self.globals, self.module, name, value)
        return value

    def __contains__(self, name):
        return self._look(name) is not MISSING

    def __getitem__(self, name):
        value = self._look(name)
        if value is MISSING:
            raise KeyError(name)
        return value

    def get(self, name, default=None):
        value = self._look(name)
        return default if value is MISSING else value

    def note_attribute(self, dotted, value):
        self.reads.note(self.globals, self.module, dotted, value)


def _scope(fn, reads):
    """fn's globals (with its closure's variables), as _compose reads them; noted in `reads` if given."""
    closure = _closure(fn)
    if reads is None:
        scope = dict(fn.__globals__)
        scope.update(closure)
        return scope
    if closure:
        reads.checkable = False
        scope = dict(fn.__globals__)
        scope.update(closure)
        return scope
    return _RecordedScope(fn.__globals__, fn.__module__, reads)


# id(code object) -> (the code object, _function_text(fn)): helpers (Inductor's triton_helpers) serve many
# kernels. By identity: equal code objects may come from different text (annotations are not in them).
_function_texts = {}


def _function_text(fn):
    """The dedented source of a Python function with its decorators replaced by `@jit`, and its
    ast node (read once a process, as a kernel's handle keeps its text)."""
    code = getattr(fn, "__code__", None)
    known = _function_texts.get(id(code))
    if known is not None and known[0] is code:
        return known[1]
    result = _read_function_text(fn)
    if code is not None:
        _function_texts[id(code)] = (code, result)
    return result


def _read_function_text(fn):
    try:
        src = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError) as e:
        raise CompositionError(f"cannot find the source of @jit function '{fn.__name__}': define it in a file") from e
    tree = ast.parse(src)
    node = tree.body[0]
    if not isinstance(node, ast.FunctionDef):
        raise CompositionError(f"'{fn.__name__}' is not a plain function definition")
    lines = src.splitlines(keepends=True)
    body = lines[node.lineno - 1:]
    return "@jit\n" + "".join(body), node


def _free_names(node):
    names = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            names.add(n.id)
    for arg in node.args.args + node.args.kwonlyargs:
        names.discard(arg.arg)
    return names


def _closure(fn):
    out = {}
    if fn.__closure__:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
            try:
                out[name] = cell.cell_contents
            except ValueError:
                pass
    return out


_LANG_MODULES = ("tessera", "triton")


class _Collected:
    def __init__(self):
        self.functions = {}   # name -> (text, JITFunction)
        self.imports = {}     # alias -> module name
        self.constants = {}   # name -> value


def _collect(roots, reads=None):
    out = _Collected()
    queue = list(roots)
    while queue:
        jf = queue.pop(0)
        fn = jf.fn
        name = fn.__name__
        if name in out.functions:
            if out.functions[name][1].fn is not fn:
                raise CompositionError(f"two different @jit functions are named '{name}'; rename one")
            continue
        text, node = _function_text(fn)
        out.functions[name] = (text, jf)
        if reads is not None:
            reads.files.add(fn.__code__.co_filename)
        scope = _scope(fn, reads)
        functions, modules = _called_elsewhere(node, scope)
        queue.extend(functions)
        for alias, module in modules.items():
            out.imports[alias] = module
        for free in sorted(_free_names(node)):
            if free not in scope:
                continue
            value = scope[free]
            inner = as_jit(value)
            if inner is not None:
                if inner.fn.__name__ != free:
                    raise CompositionError(f"'{name}' calls @jit function '{inner.fn.__name__}' under the name "
                                           f"'{free}'; call it by its own name")
                queue.append(inner)
            elif isinstance(value, types.ModuleType):
                if value.__name__.split(".")[0] in _LANG_MODULES:
                    out.imports[free] = _source.kernel_module_name(value.__name__)
            elif _language_function(value):
                # exp = tl.exp (fla), or `from triton.language.standard import _log2` (Inductor) in the
                # helper's module: import it under that name as what it is
                out.imports[free] = (value.__module__, value.__name__)
            elif isinstance(value, bool) or isinstance(value, (int, float)):
                _add_constant(out, free, value, name)
            elif type(value).__name__ == "constexpr" and isinstance(getattr(value, "value", None), (bool, int, float)):
                _add_constant(out, free, value.value, name)
    return out


def _module_attribute(node, scope):
    """(base name, object) of a.b.c when `a` is a module (not tessera's or triton's) in scope."""
    chain = []
    while isinstance(node, ast.Attribute):
        chain.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or not isinstance(scope.get(node.id), types.ModuleType):
        return None
    value = scope[node.id]
    if value.__name__.split(".")[0] in _LANG_MODULES:
        return None
    for attr in reversed(chain):
        value = getattr(value, attr, None)
        if value is None:
            break
    if isinstance(scope, _RecordedScope):
        scope.note_attribute(".".join([node.id] + chain[::-1]), value)
    return None if value is None else (node.id, value)


def _attribute_chain(node):
    """["helpers", "shim", "pow"] for helpers.shim.pow."""
    chain = []
    while isinstance(node, ast.Attribute):
        chain.append(node.attr)
        node = node.value
    return [node.id] + chain[::-1]


def _called_elsewhere(node, scope):
    """The @jit functions a function's body names through a module (helpers.fn(...)), and the
    modules (base name -> module name) it names them through."""
    functions, modules = [], {}
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute):
            found = _module_attribute(n, scope)
            inner = as_jit(found[1]) if found else None
            if inner is not None and inner.fn.__name__ == n.attr:
                functions.append(inner)
                modules[found[0]] = scope[found[0]].__name__
    return functions, modules


def _constant_value(value):
    """An int, float or bool (or tl.constexpr of one) a kernel may use as a global; else None."""
    if type(value).__name__ == "constexpr":
        value = getattr(value, "value", None)
    return value if isinstance(value, (bool, int, float)) else None


def foreign_source(fn, text, path, reads=None):
    """(source, depends_elsewhere) for a kernel compiled from its file's reduced `text`: the @jit
    functions of other modules that the kernel and its @jit helpers in the file call (by a name
    imported from there, or through a module: `helpers.fn(...)`), with what they need in turn
    (function_source), to append to the text; depends_elsewhere says whether the kernel names
    anything of another module (then its text is not remembered by its file alone). `reads`: a
    Reads that notes what was looked up outside the text."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return "", True
    defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    scope = fn.__globals__ if reads is None else _RecordedScope(fn.__globals__, fn.__module__, reads)
    package = scope.get("__package__")
    defined = _defined_names(text, package, tree)
    lang_imports = {}  # tl / triton bound by importing them from another module (from lib.utils import tl)
    constants = {}     # ints, floats, bools imported from another module
    roots, seen, queue, elsewhere = [], set(), [fn.__name__], False
    while queue:
        name = queue.pop()
        if name in seen or name not in defs:
            continue
        seen.add(name)
        node = defs[name]
        for n in ast.walk(node):
            if not isinstance(n, ast.Name) or n.id not in scope or n.id in defs:
                if isinstance(n, ast.Name) and n.id in defs:
                    queue.append(n.id)
                continue
            value = scope[n.id]
            inner = as_jit(value)
            if inner is not None and getattr(inner.fn, "__code__", None) is not None \
                    and inner.fn.__code__.co_filename != path:
                elsewhere = True
                if inner.fn.__name__ == n.id:
                    roots.append(inner)
            elif _constant_value(value) is not None and defined.get(n.id, ("",))[0] == "import":
                constants[n.id] = _constant_value(value)  # from .config import BLOCK: its value
                elsewhere = True
            elif _language_function(value) and defined.get(n.id, ("",))[0] not in ("def", "const"):
                # triton_tanh = libdevice.tanh in another module, imported: import it as what it is
                lang_imports[n.id] = (value.__module__, value.__name__)
                elsewhere = True
            elif isinstance(value, types.ModuleType) and value.__name__.split(".")[0] not in _LANG_MODULES:
                elsewhere = True
            elif isinstance(value, types.ModuleType):
                module = _source.kernel_module_name(value.__name__)
                have = defined.get(n.id)
                if have is None or have[0] != "import" or not _same_module(have[1], module):
                    lang_imports[n.id] = module
                    elsewhere = True
        functions, _ = _called_elsewhere(node, scope)
        roots.extend(functions)
        for n in ast.walk(node):  # helpers.name: a language function or a constant of another module
            found = _module_attribute(n, scope) if isinstance(n, ast.Attribute) else None
            if found is None or as_jit(found[1]) is not None:
                continue
            mangled = "__tessera_attr__" + "__".join(_attribute_chain(n))
            if _language_function(found[1]):
                lang_imports[mangled] = (found[1].__module__, found[1].__name__)
            elif _constant_value(found[1]) is not None:
                constants[mangled] = _constant_value(found[1])
    extra = "".join(f"from {module[0]} import {module[1]} as {alias}\n" if isinstance(module, tuple)
                    else f"import {module} as {alias}\n" for alias, module in sorted(lang_imports.items()))
    extra += "".join(f"{name} = {value!r}\n" for name, value in sorted(constants.items()))
    if roots:
        base_defined = {**defined, **_defined_names(extra, package)}  # of text + extra, parsing extra alone
        extra += function_source(roots, text + extra, path, base_scope=scope, reads=reads,
                                 base_defined=base_defined)
    if not extra:
        return "", elsewhere
    return "# what the kernel names from other modules\n" + extra, True


def _add_constant(out, name, value, user):
    if name in out.constants and out.constants[name] != value:
        raise CompositionError(f"constant '{name}' has two values ({out.constants[name]!r} and {value!r}) in the "
                               f"functions composed with '{user}'; rename one")
    out.constants[name] = value


def _imported_module(node, package):
    """The absolute module name an ImportFrom names: `from .ops import f` in package `lib` is `lib.ops`
    (left relative when the package is not known)."""
    module = node.module or ""
    if not node.level:
        return module
    if package:
        try:
            return importlib.util.resolve_name("." * node.level + module, package)
        except (ImportError, ValueError):
            pass
    return "." * node.level + module


def _defined_names(text, package=None, tree=None):
    """Top-level names of a module's text: {name: ('def'|'import'|'const', detail)}; `package`: the
    module's __package__, against which relative imports are resolved; `tree`: the text parsed."""
    names = {}
    if tree is None:
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return names
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            names[node.name] = ("def", node)
        elif isinstance(node, ast.Import):
            for a in node.names:
                names[a.asname or a.name.split(".")[0]] = ("import", a.name if a.asname else a.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            module = _imported_module(node, package)
            for a in node.names:
                names[a.asname or a.name] = ("import", f"{module}.{a.name}" if module else a.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    names[t.id] = ("const", node)
    return names


def _same_module(a, b):
    canon = {"triton": "tessera", "triton.language": "tessera.language"}
    return canon.get(a, a) == canon.get(b, b)


def function_source(functions, base_text="", base_file=None, base_scope=None, reads=None, base_defined=None):
    """Text to append to `base_text` (a module's source) so that it defines `functions` (JITFunctions).
    Functions that `base_text` already defines from the same file (`base_file`) are not repeated.
    base_scope: the globals of base_text's module, to check names it shares with the functions.
    reads: a Reads noting the globals and files this looks at; base_defined: _defined_names(base_text)
    when the caller has it."""
    collected = _collect(functions, reads)
    defined = base_defined if base_defined is not None else _defined_names(base_text,
                                                                          (base_scope or {}).get("__package__"))
    parts = []
    for alias, module in sorted(collected.imports.items(), key=lambda item: item[0]):
        have = defined.get(alias)
        if isinstance(module, tuple):  # a language function: (its module, its name)
            if have is None:
                parts.append(f"from {module[0]} import {module[1]} as {alias}\n")
            elif have[0] == "def" or (base_scope is not None and alias in base_scope
                                      and getattr(base_scope[alias], "__name__", None) != module[1]):
                raise CompositionError(f"the composed functions use '{alias}' for {module[0]}.{module[1]}, but the "
                                       f"kernel's file binds '{alias}' to something else; rename one")
            # else the kernel's file imports or assigns the same function (`from .op import exp`)
            continue
        if have is None:
            parts.append(f"import {module} as {alias}\n" if alias != module else f"import {module}\n")
        elif have[0] != "import" or not _same_module(have[1], module):
            raise CompositionError(f"the composed functions use '{alias}' for module {module}, but the kernel's "
                                   f"file binds '{alias}' to something else")
    for name, value in sorted(collected.constants.items()):
        have = defined.get(name)
        if have is None:
            parts.append(f"{name} = {value!r}\n")
        elif have[0] != "const":
            raise CompositionError(f"constant '{name}' of the composed functions clashes with the kernel file's "
                                   f"'{name}'; rename it")
        else:
            try:
                same = ast.literal_eval(have[1].value) == value
            except (ValueError, TypeError, SyntaxError):
                same = _constexpr_literal(have[1].value) == value
            if not same:
                raise CompositionError(f"constant '{name}' = {value!r} of the composed functions clashes with the "
                                       f"kernel file's '{name}'; rename it")
    for name, (text, jf) in collected.functions.items():
        have = defined.get(name)
        if have is not None:
            if have[0] == "def" and base_file is not None and jf.fn.__code__.co_filename == base_file:
                continue  # the kernel's own file defines it
            if have[0] == "import" and have[1] == f"{jf.fn.__module__}.{name}":
                parts.append("\n\n" + text)  # `from module import name`: its definition
                continue
            raise CompositionError(f"@jit function '{name}' clashes with a name the kernel's file defines; "
                                   "rename the function")
        parts.append("\n\n" + text)
    return "".join(parts)


def _constexpr_literal(node):
    # tl.constexpr(1.5)
    if isinstance(node, ast.Call) and node.args:
        try:
            return ast.literal_eval(node.args[0])
        except (ValueError, TypeError, SyntaxError):
            return None
    return None


def _called_params(fn, candidates, depth=0, files=None):
    """The names in `candidates` (parameters of the Python function `fn`) that fn calls, directly
    or by passing them to a @jit helper that calls the parameter it lands in. `files` collects
    the files whose source was read."""
    try:
        if files is not None:
            files.add(fn.__code__.co_filename)
        src = textwrap.dedent(inspect.getsource(fn))
        node = ast.parse(src).body[0]
    except (OSError, TypeError, SyntaxError, IndexError):
        return frozenset()
    if not isinstance(node, ast.FunctionDef):
        return frozenset()
    called = set()
    for n in ast.walk(node):
        if not isinstance(n, ast.Call):
            continue
        if isinstance(n.func, ast.Name) and n.func.id in candidates:
            called.add(n.func.id)
        if depth >= 4 or not isinstance(n.func, ast.Name):
            continue
        helper = as_jit(fn.__globals__.get(n.func.id))
        passed = {i: a.id for i, a in enumerate(n.args) if isinstance(a, ast.Name) and a.id in candidates}
        passed_kw = {k.arg: k.value.id for k in n.keywords
                     if isinstance(k.value, ast.Name) and k.value.id in candidates}
        if helper is None or not (passed or passed_kw):
            continue
        names = list(inspect.signature(helper.fn).parameters)
        inner = {names[i]: outer for i, outer in passed.items() if i < len(names)}
        inner.update({k: v for k, v in passed_kw.items() if k in names})
        for p in _called_params(helper.fn, frozenset(inner), depth + 1, files):
            called.add(inner[p])
    return frozenset(called)


def callable_constexpr_params(fn, files=None):
    """Names of the constexpr parameters of `fn` (a Python function) that its body calls
    (directly or through @jit helpers it passes them to), and of the parameters whose element or
    field its body calls (a tuple holding @jit functions). `files` (a set) collects the files
    whose source the answer depends on."""
    try:
        if files is not None:
            files.add(fn.__code__.co_filename)
        src = textwrap.dedent(inspect.getsource(fn))
        node = ast.parse(src).body[0]
    except (OSError, TypeError, SyntaxError, IndexError):
        return frozenset()
    if not isinstance(node, ast.FunctionDef):
        return frozenset()
    params = node.args.args + node.args.kwonlyargs
    names = frozenset(a.arg for a in params if a.annotation is not None and "constexpr" in ast.dump(a.annotation))
    called = _called_params(fn, names, 0, files) if names else frozenset()
    # A parameter whose element or field the kernel calls (`closure.fn(x)`, `fns[0](x)`): a tuple argument
    # that may hold @jit functions (Triton's test_namedtuple), which the launch composes like constexprs.
    # A method of a tensor or descriptor (`stride.to(tl.int64)`, `desc.load(...)`) is not one: such kernels
    # keep the launch path without Python.
    all_names = {a.arg for a in params}
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and isinstance(n.func, (ast.Attribute, ast.Subscript)):
            if isinstance(n.func, ast.Attribute) and _tensor_method(n.func.attr):
                continue
            root = n.func
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            if isinstance(root, ast.Name) and root.id in all_names:
                called |= {root.id}
    return frozenset(called)


def _tensor_method(name):
    """A method of Triton's tensors and descriptors (x.to(...), x.sum(), desc.load(...)): nearly all are
    triton.language functions too."""
    from . import language
    return name in ("to", "scatter", "item", "logical_and", "logical_or") or hasattr(language, name)


def kernel_source(fn):
    """(text, path, first_line) to compile the Python function `fn` from."""
    return kernel_source_and_dependencies(fn)[:3]


def kernel_source_and_dependencies(fn, reads=None):
    """kernel_source(fn) and whether the text depends on other modules than the kernel's file
    (their @jit functions are appended: _compose.foreign_source), so that it may not be
    remembered by the file's text alone; `reads` (a Reads) then notes on what it depends."""
    text, path, first_line = _source.own_source(fn)
    if first_line != 1:
        return text, path, first_line, False
    extra, elsewhere = foreign_source(fn, text, path, reads)
    if extra:
        text = text + ("" if text.endswith("\n") else "\n") + extra
    return text, path, first_line, elsewhere
