"""tessera's Python modules are layers: a module imports (at module level) only
modules below it, so tessera's import graph has no cycle (the order is drawn in
python/README.md, "Layers"). An import inside a function is fine for a module
that is expensive or optional (torch), never to dodge a cycle: one whose target
imports the importing module (at module level, directly or not) is reported.

The graph is read with `ast` from python/tessera/**/*.py, not by importing:
`import a.b`, `from . import x` (the module x, else the package's __init__),
`from .m import name` (m, or m.name when that is a module), and the packages
above a module, which importing it runs first.
"""
import ast
import pathlib
import textwrap

from conftest import ROOT

PACKAGE = ROOT / "python" / "tessera"


def _module_names(package_dir):
    """{dotted name: path} of every .py file under package_dir (a package named after the directory)."""
    package_dir = pathlib.Path(package_dir)
    names = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = (package_dir.name,) + path.relative_to(package_dir).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def _ancestors(name):
    """a.b.c -> [a, a.b] (the packages importing a.b.c runs first)."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


class _Imports(ast.NodeVisitor):
    """(target, line, inside_a_function) for every import in one module."""

    def __init__(self, name, is_package, modules):
        self.package = name if is_package else name.rpartition(".")[0]
        self.modules = modules
        self.depth = 0
        self.found = []

    def _add(self, target, node):
        # The longest prefix that is one of the package's modules (import a.b.c where c is a name).
        while target and target not in self.modules:
            target = target.rpartition(".")[0]
        if target:
            self.found.append((target, node.lineno, self.depth > 0))

    def _function(self, node):
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def visit_Import(self, node):
        for alias in node.names:
            self._add(alias.name, node)

    def visit_ImportFrom(self, node):
        if node.level:
            base = self.package.split(".")
            base = base[:len(base) - (node.level - 1)]
            base = ".".join(base + ([node.module] if node.module else []))
        else:
            base = node.module
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            self._add(sub if sub in self.modules else base, node)

    def visit_Call(self, node):
        # importlib.import_module(".m", __package__) / ("a.m")
        f = node.func
        if (isinstance(f, ast.Attribute) and f.attr == "import_module" and node.args
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            target = node.args[0].value
            if target.startswith("."):
                level = len(target) - len(target.lstrip("."))
                base = self.package.split(".")
                target = ".".join(base[:len(base) - (level - 1)] + [target.lstrip(".")])
            self._add(target, node)
        self.generic_visit(node)


def import_graph(package_dir):
    """(edges, function_imports): edges {module: {imported module: (path, line)}} for the imports
    that run when the module is imported; function_imports [(module, imported module, path, line)]
    for those inside functions. Paths are relative to the package directory's parent."""
    package_dir = pathlib.Path(package_dir)
    modules = _module_names(package_dir)
    edges = {name: {} for name in modules}
    function_imports = []
    for name, path in modules.items():
        visitor = _Imports(name, path.name == "__init__.py", modules)
        visitor.visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        path = path.relative_to(package_dir.parent)
        for target, line, in_function in visitor.found:
            if target == name:
                continue
            # Importing a.b.c runs a and a.b first: those the importer is not itself inside.
            implied = [p for p in _ancestors(target) if p not in _ancestors(name) and p != name]
            for t in [target] + implied:
                if in_function:
                    if (name, t, path, line) not in function_imports:
                        function_imports.append((name, t, path, line))
                else:
                    edges[name].setdefault(t, (path, line))
    return edges, function_imports


def find_cycles(edges):
    """(modules, cycle) per strongly connected component of more than one module: the modules
    that import each other, and one cycle [m0, m1, ..., m0] through them."""
    index, low, on_stack, stack, sccs = {}, {}, set(), [], []

    def connect(v):  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, {})):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                sccs.append(set(scc))

    for v in sorted(edges):
        if v not in index:
            connect(v)
    return [(sorted(scc), _path(edges, min(scc), min(scc), scc)) for scc in sccs]


def _path(edges, source, target, within):
    """The shortest path source -> ... -> target (at least one edge) through `within`, else None."""
    previous = {}
    queue = [source]
    while queue:
        v = queue.pop(0)
        for w in sorted(edges.get(v, {})):
            if w not in within or w in previous:
                continue
            previous[w] = v
            if w == target:
                path = [target]
                while path[-1] != source or len(path) == 1:
                    path.append(previous[path[-1]])
                return path[::-1]
            queue.append(w)
    return None


def describe(edges, cycle):
    """'a (a.py:3) -> b (b.py:7) -> a': each module with the line of its import of the next."""
    parts = []
    for a, b in zip(cycle, cycle[1:]):
        path, line = edges[a][b]
        parts.append(f"{a} ({path}:{line})")
    return " -> ".join(parts + [cycle[-1]])


def dodging_imports(edges, function_imports):
    """The imports inside functions whose target imports the importer back (at module level)."""
    everything = set(edges)
    out = []
    for importer, target, path, line in function_imports:
        back = _path(edges, target, importer, everything) if target != importer else None
        if back:
            out.append(f"{path}:{line}: {importer} imports {target} inside a function, and "
                       f"{' -> '.join(back)} imports it back (a cycle hidden in a function: layer the modules)")
    return out


def layering_problems(package_dir):
    edges, function_imports = import_graph(package_dir)
    problems = [f"import cycle: {describe(edges, cycle)}" + (f" ({len(modules)} modules import each other: "
                                                             f"{', '.join(modules)})"
                                                             if len(modules) > len(cycle) - 1 else "")
                for modules, cycle in find_cycles(edges)]
    return problems + dodging_imports(edges, function_imports)


def test_tessera_has_no_import_cycle():
    problems = layering_problems(PACKAGE)
    assert not problems, "\n".join(problems)


def test_the_graph_sees_tesseras_imports():
    """The check reads the imports it must (a check that sees nothing passes for nothing)."""
    edges, function_imports = import_graph(PACKAGE)
    assert "tessera._ext" in edges["tessera.jit"]
    assert "tessera._source_cache" in edges["tessera.jit"]
    assert "tessera._ext" in edges["tessera._function_args"]
    assert "tessera.jit" in edges["tessera.compiler"]
    assert "tessera._ext" in edges["tessera"]
    assert "tessera.kernels._files" in edges["tessera.kernels.attention"]
    assert ("tessera.kernels.matmul", "tessera.autotune") in [(a, b) for a, b, _, _ in function_imports]
    assert ("tessera._source_cache", "tessera._compose") in [(a, b) for a, b, _, _ in function_imports]


def _write_package(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def test_a_cycle_fails_and_is_named(tmp_path):
    pkg = _write_package(tmp_path / "cyclic", {
        "__init__.py": "from .top import run\n",
        "top.py": "from . import middle\n\ndef run():\n    return middle.go()\n",
        "middle.py": "import os\nfrom .bottom import helper\n\ndef go():\n    return helper()\n",
        "bottom.py": "from cyclic import middle  # the cycle\n\ndef helper():\n    return 1\n",
        "leaf.py": "X = 1\n",
    })
    problems = layering_problems(pkg)
    assert problems == ["import cycle: cyclic.bottom (cyclic/bottom.py:1) -> cyclic.middle (cyclic/middle.py:2) "
                        "-> cyclic.bottom"]


def test_a_cycle_through_a_packages_init_fails(tmp_path):
    """`from . import NAME` where NAME is set in __init__ (not a module) imports the __init__;
    importing a module inside a subpackage runs the subpackage's __init__ first."""
    pkg = _write_package(tmp_path / "cyc", {
        "__init__.py": "from .handle import HANDLE\nfrom .user import use\n",
        "handle.py": "HANDLE = 1\n",
        "user.py": "from . import HANDLE\n\ndef use():\n    return HANDLE\n",
        "sub/__init__.py": "from .deep import D\n",
        "sub/deep.py": "from ..low import L\nD = L\n",
        "sub/other.py": "O = 2\n",
        "low.py": "from .sub.other import O  # runs sub/__init__.py, which imports deep\nL = O\n",
    })
    problems = sorted(layering_problems(pkg))
    assert problems == [
        "import cycle: cyc (cyc/__init__.py:2) -> cyc.user (cyc/user.py:1) -> cyc",
        "import cycle: cyc.low (cyc/low.py:1) -> cyc.sub (cyc/sub/__init__.py:1) -> cyc.sub.deep (cyc/sub/deep.py:1) "
        "-> cyc.low",
    ]


def test_an_import_inside_a_function_that_dodges_a_cycle_fails(tmp_path):
    pkg = _write_package(tmp_path / "dodge", {
        "__init__.py": "",
        "jit.py": "from . import compose\n\ndef launch():\n    return compose.build()\n",
        "compose.py": "def build():\n    from .jit import launch  # the cycle, hidden\n    return launch\n",
        "lazy.py": "def torchy():\n    from . import jit  # nothing below imports lazy: fine\n    return jit\n",
    })
    problems = layering_problems(pkg)
    assert len(problems) == 1, problems
    assert problems[0].startswith("dodge/compose.py:2: dodge.compose imports dodge.jit inside a function, "
                                  "and dodge.jit -> dodge.compose imports it back")
