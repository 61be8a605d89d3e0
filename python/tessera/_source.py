"""The source text a @jit function is compiled from.

The C++ front-end resolves a kernel's imports, module-level constexpr globals
and the other @jit functions it calls by itself, from the text of the kernel's
file. But a real file holds more than kernels (torch code, classes, f-strings,
`if __name__ == "__main__":`), which the front-end's Python subset does not
parse. So the file is handed over *reduced*: every top-level statement that
is not an import, a simple constant assignment or a @jit function is blanked
out line by line. Line and column numbers are untouched, so diagnostics name
the real file:line:col. Module-level `if` / `try` statements made of imports and
constants are kept; an `if` condition is replaced by the value Python gives it in
the module's globals (`if True:`), so the front-end takes the branch Python took; an `if`
holding @jit functions (`if triton.__version__ >= "2.1.0":` around kernels) is replaced by that
branch, dedented to the top level, where the front-end looks for kernels
(the disk cache of reductions, _source_cache.py, keys on the file's text: a
condition that changes between processes with the same file is read once).
A plain function made @jit by a call at the top level (`helper = triton.jit(helper)`)
is kept, marked `@jit` on the blank line above it.

A kernel defined inside a function (as in tests) is lifted to the top level:
its lines (and those of @jit siblings) are dedented; its line numbers stay
right, its columns shift by the indentation.

Without a file (exec'd code) the function's own source is used
(inspect.getsource), with `first_line` its line.
"""
import ast
import inspect
import linecache
import textwrap

# Expression nodes the front-end's parser knows (dsl/AST.h).
_EXPR_NODES = (
    ast.Constant, ast.Name, ast.Attribute, ast.Call, ast.keyword, ast.BinOp, ast.UnaryOp, ast.BoolOp,
    ast.Compare, ast.IfExp, ast.Tuple, ast.List, ast.Subscript, ast.Slice, ast.expr_context,
    ast.operator, ast.unaryop, ast.cmpop, ast.boolop,
)


def _is_jit_decorator(node):
    target = node.func if isinstance(node, ast.Call) else node
    # @tessera.elementwise / @tessera.fuse functions are @jit functions too (tessera/fusion.py); a
    # @builtin function (triton.language.core.builtin) is compiled like one (tl.builtin).
    if isinstance(target, ast.Name):
        return target.id in ("jit", "elementwise", "fuse", "builtin")
    if isinstance(target, ast.Attribute):
        return target.attr in ("jit", "elementwise", "fuse", "builtin")
    return False


def _is_jit_def(node):
    return isinstance(node, ast.FunctionDef) and any(_is_jit_decorator(d) for d in node.decorator_list)


def _simple_expression(node):
    for n in ast.walk(node):
        if not isinstance(n, _EXPR_NODES):
            return False
        if isinstance(n, ast.Constant) and isinstance(n.value, (bytes, complex, type(...))):
            return False
    return True


def _simple_target(node):
    if isinstance(node, ast.Name):
        return True
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_simple_target(e) for e in node.elts)
    return False


def _kept_block(body):
    return all(isinstance(n, ast.Pass) or _kept_top_level(n) for n in body)


def _kept_top_level(node):
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return True
    # Libraries pick their imports and constants under `if` / `try` (e.g. `try: from
    # triton.language.extra.cuda import libdevice` / `except ImportError: ...`).
    if isinstance(node, ast.If):
        return _simple_expression(node.test) and _kept_block(node.body) and _kept_block(node.orelse)
    if isinstance(node, ast.Try):
        return (_kept_block(node.body) and _kept_block(node.orelse) and _kept_block(node.finalbody)
                and all((h.type is None or _simple_expression(h.type)) and _kept_block(h.body)
                        for h in node.handlers))
    if isinstance(node, ast.Assign):
        return all(_simple_target(t) for t in node.targets) and _simple_expression(node.value)
    if isinstance(node, ast.AnnAssign):
        return (node.value is not None and isinstance(node.target, ast.Name)
                and _simple_expression(node.value) and _simple_expression(node.annotation))
    return _is_jit_def(node)


def _neutralise_shared_line_statement(node, out):
    """A statement the front-end does not need, on a line it keeps (`a = 1; print([...])`): its
    text becomes `0` (a statement that does nothing) padded with spaces, so columns stay."""
    first, last = node.lineno, node.end_lineno
    for i in range(first - 1, last):
        line = out[i].encode()  # ast's columns count UTF-8 bytes
        if line == b"\n":
            continue
        start = node.col_offset if i == first - 1 else 0
        end = node.end_col_offset if i == last - 1 else len(line.rstrip(b"\n"))
        filler = b"0" if i == first - 1 else b""
        out[i] = (line[:start] + filler.ljust(end - start) + line[end:]).decode()


def _start(node):
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno] + [d.lineno for d in decorators])


def _find_function(tree, name, first_line):
    """The FunctionDef whose first line (decorators included) is first_line, and its parent body."""
    best = None
    for parent in ast.walk(tree):
        for field in ("body", "orelse", "finalbody", "handlers"):
            body = getattr(parent, field, None)
            if not isinstance(body, list):
                continue
            for node in body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                    if _start(node) == first_line or node.lineno == first_line:
                        return node, body, parent
                    if best is None:
                        best = (node, body, parent)
    return best


def _taken_branches(node, module_globals, out):
    """Module-level `if`s: the branch Python took, by the condition's value in the
    module's globals, written into the source (`if True:`) where the front-end
    could not fold the condition itself (torch.cuda.is_available(), ...)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(child, ast.If) and child.test.lineno == child.test.end_lineno:
            try:
                value = bool(eval(compile(ast.Expression(child.test), "<if>", "eval"), dict(module_globals)))
            except Exception:
                value = None
            if value is not None:
                i = child.test.lineno - 1
                line = out[i]
                out[i] = line[:child.test.col_offset] + repr(value) + line[child.test.end_col_offset:]
        _taken_branches(child, module_globals, out)


def _flatten_taken_branch(node, out, module_globals):
    """A module-level `if` holding @jit functions, replaced by the branch Python took, dedented to the
    top level (the header, `else:` and the other branch blanked; line numbers kept, columns shift).
    False when the condition cannot be evaluated here."""
    try:
        value = bool(eval(compile(ast.Expression(node.test), "<if>", "eval"), dict(module_globals)))
    except Exception:
        return False
    taken = node.body if value else node.orelse
    src = list(out)
    for i in range(_start(node) - 1, node.end_lineno):
        out[i] = "\n"
    if not taken:
        return True
    if len(taken) == 1 and isinstance(taken[0], ast.If) and src[taken[0].lineno - 1].lstrip().startswith("elif"):
        for i in range(_start(taken[0]) - 1, taken[0].end_lineno):  # an `elif`: its own taken branch
            out[i] = src[i]
        return _flatten_taken_branch(taken[0], out, module_globals)
    first, last = min(_start(n) for n in taken), max(n.end_lineno for n in taken)
    indent = len(src[first - 1]) - len(src[first - 1].lstrip())
    prefix = src[first - 1][:indent]
    for i in range(first - 1, last):
        line = src[i]
        out[i] = line[indent:] if line.startswith(prefix) else (line.lstrip(" \t") or "\n")
    return True


def _namedtuple_fields(node):
    """The field names of a `class X(NamedTuple):` (typing.NamedTuple) of annotated fields; None otherwise."""
    if not isinstance(node, ast.ClassDef) or node.decorator_list or len(node.bases) != 1:
        return None
    base = node.bases[0]
    if (base.id if isinstance(base, ast.Name) else getattr(base, "attr", None)) != "NamedTuple":
        return None
    fields = []
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is None:
            fields.append(stmt.target.id)
        elif not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):  # a docstring
            return None
    return fields


def _reduce(text, lines, name, first_line, module_globals=None):
    tree = ast.parse(text)
    found = _find_function(tree, name, first_line)
    if found is None:
        return None
    target, siblings, parent = found
    out = list(lines)
    if out and not out[-1].endswith("\n"):
        out[-1] += "\n"

    def blank(first, last):
        for i in range(first - 1, min(last, len(out))):
            out[i] = "\n"

    def strip_non_jit_decorators(node):
        for d in node.decorator_list:
            if not _is_jit_decorator(d) and d.end_lineno < node.lineno:
                blank(d.lineno, d.end_lineno)

    # Functions made @jit by a call (`helper = triton.jit(helper)`, as Unsloth writes them) are
    # @jit functions too.
    wrapped = {n.value.args[0].id for n in tree.body
               if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and _is_jit_decorator(n.value)
               and n.value.args and isinstance(n.value.args[0], ast.Name)}
    called_jit = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in wrapped and not _is_jit_def(n)]

    def kept(node):
        return _kept_top_level(node) or node in called_jit

    # Top level: blank what the front-end does not need (line by line).
    kept_lines = set()
    for node in tree.body:
        if kept(node):
            kept_lines.update(range(_start(node), node.end_lineno + 1))
    for node in tree.body:
        if not kept(node):
            first, last = _start(node), node.end_lineno
            for line in range(first, last + 1):
                if line not in kept_lines:
                    out[line - 1] = "\n"
            if first in kept_lines or last in kept_lines:
                _neutralise_shared_line_statement(node, out)
        elif isinstance(node, ast.FunctionDef):
            strip_non_jit_decorators(node)

    # A NamedTuple class (`class Tensor(NamedTuple): ptr: any ...`), which kernels construct and read fields of
    # (Triton's test_namedtuple): its line says so to the front-end, `Tensor = __tessera_namedtuple__("Tensor",
    # "ptr", ...)` (the other lines stay blank).
    for node in tree.body:
        fields = _namedtuple_fields(node)
        if fields is not None:
            names = ", ".join(repr(f) for f in [node.name] + fields)
            out[node.lineno - 1] = f"{node.name} = __tessera_namedtuple__({names})\n"

    if module_globals is not None:
        for node in tree.body:
            if _kept_top_level(node) and isinstance(node, (ast.If, ast.Try)):
                _taken_branches(ast.Module(body=[node], type_ignores=[]), module_globals, out)

    # @jit functions under a module-level `if` (vLLM's `if triton.__version__ >= "2.1.0":` around its
    # kernels): the branch Python took is moved to the top level, where the front-end looks for kernels.
    if module_globals is not None:
        for node in tree.body:
            if isinstance(node, ast.If) and kept(node) and any(
                    isinstance(n, ast.FunctionDef) and _is_jit_def(n) for n in ast.walk(node)):
                if _flatten_taken_branch(node, out, module_globals) and node.lineno <= target.lineno <= node.end_lineno:
                    parent = tree
    if parent is not tree:
        # A nested kernel: lift it (and @jit functions next to it) to the top level.
        lifted = [n for n in siblings if n is target or _is_jit_def(n)]
        for node in lifted:
            first, last = _start(node), node.end_lineno
            indent = len(lines[first - 1]) - len(lines[first - 1].lstrip())
            prefix = lines[first - 1][:indent]
            for i in range(first - 1, last):
                line = lines[i]
                out[i] = line[indent:] if line.startswith(prefix) else line.lstrip(" \t") or "\n"
            strip_non_jit_decorators(node)
    elif not _is_jit_def(target):
        # A top-level function jit was applied to as a call: keep it.
        first, last = _start(target), target.end_lineno
        for i in range(first - 1, last):
            out[i] = lines[i]
        strip_non_jit_decorators(target)
    # @jit(launch_metadata=f, repr=lambda ...): the front-end reads only the decorator's name, and
    # its parser knows no lambdas: such a decorator becomes a plain @jit (same lines).
    jit_defs = [n for n in tree.body if _is_jit_def(n)]
    if parent is not tree:
        jit_defs += [n for n in siblings if _is_jit_def(n)]
    for node in jit_defs:
        for d in node.decorator_list:
            if _is_jit_decorator(d) and isinstance(d, ast.Call) and not all(
                    _simple_expression(a) for a in list(d.args) + [k.value for k in d.keywords]):
                blank(d.lineno, d.end_lineno)
                out[d.lineno - 1] = "@jit\n"
    for node in called_jit if parent is tree else []:
        strip_non_jit_decorators(node)
        if node.lineno >= 2 and out[node.lineno - 2].strip() == "":
            out[node.lineno - 2] = "@jit\n"  # helper = triton.jit(helper): mark it on the (blank) line above
    if not _is_jit_def(target) and target.lineno >= 2 and out[target.lineno - 2].strip() == "":
        # kernel = tessera.jit(fn): mark fn for the front-end on the (blank) line above it.
        out[target.lineno - 2] = "@jit\n"
    return "".join(out)


def own_source(fn):
    """(text, path, first_line): the reduced text of `fn`'s own file (_compose.kernel_source adds
    what it takes from other modules)."""
    code = fn.__code__
    path = code.co_filename
    first_line = code.co_firstlineno
    lines = linecache.getlines(path, fn.__globals__)
    if lines:
        text = "".join(lines)
        try:
            reduced = _reduce(text, lines, fn.__name__, first_line, fn.__globals__)
        except SyntaxError:
            reduced = None  # the file changed on disk since it was imported
        if reduced is not None:
            return reduced, path, 1
    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError) as e:
        raise OSError(f"cannot find the source of kernel '{fn.__name__}' (defined in {path}): tessera compiles "
                      "kernels from their source text, so define them in a file") from e
    prelude = _prelude(fn)
    return prelude + textwrap.dedent(source), path, max(1, first_line - prelude.count("\n"))


_COMPAT_TRITON = "tessera.compat.triton"


def kernel_module_name(module_name):
    """The name kernel text uses for a module: the compatibility mode's tessera.compat.triton[.x]
    is triton[.x] there (docs/compatibility.md), as the front-end knows it; others are unchanged."""
    if module_name == _COMPAT_TRITON or module_name.startswith(_COMPAT_TRITON + "."):
        return "triton" + module_name[len(_COMPAT_TRITON):]
    return module_name


def _prelude(fn):
    """For a function without a file: the imports and constants of its globals the front-end needs."""
    import types
    out = []
    for name, value in sorted(fn.__globals__.items()):
        if isinstance(value, types.ModuleType):
            module = kernel_module_name(value.__name__)
            if module.split(".")[0] in ("tessera", "triton"):
                out.append(f"import {module} as {name}\n" if "." in module or module != name
                           else f"import {module}\n")
        elif isinstance(value, (bool, int, float)) and not name.startswith("__"):
            out.append(f"{name} = {value!r}\n")
        elif type(value).__name__ == "constexpr" and isinstance(getattr(value, "value", None), (bool, int, float)):
            out.append(f"{name} = {value.value!r}\n")
        elif type(value).__name__ == "dtype" and _language_dtype_name(value) and not name.startswith("__"):
            out.append(f"import tessera.language\n{name} = tessera.language.{_language_dtype_name(value)}\n")
    return "".join(out)


def _language_dtype_name(value):
    """tl.float16's attribute name for a dtype object (tessera's or Triton's), or None."""
    from . import language
    for attr in ("int1", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
                 "bfloat16", "float32", "float64", "float8e4nv", "float8e5", "float8e4b15", "float8e4b8", "float8e5b16"):
        if getattr(language, attr).name == getattr(value, "name", None):
            return attr
    return None
