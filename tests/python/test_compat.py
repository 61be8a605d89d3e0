"""Triton compatibility mode (tessera.compat, python/_tessera_as_triton.py, docs/compatibility.md):
`import triton` statements get tessera's modules; torch's own imports and programs without the
mode keep an installed Triton (here a stand-in package written under tmp_path); the wheel's .pth
hook turns the mode on from TESSERA_AS_TRITON=1 at the first `import triton`."""
import builtins
import importlib
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conftest import BUILD, PTXAS, ROOT

import tessera
import tessera.compat

PYTHON_DIR = ROOT / "python"


@pytest.fixture
def compat():
    tessera.compat.install()
    yield
    tessera.compat.uninstall()


def import_as_user(statement, importer="user_app"):
    """Runs an import statement in a module namespace named `importer`; returns the namespace."""
    namespace = {"__name__": importer}
    exec(statement, namespace)
    return namespace


def is_facade_import(statement, importer="user_app"):
    """Whether the statement binds tessera's `triton` (else it imports an installed Triton or fails)."""
    try:
        return import_as_user(statement, importer)["triton"] is importlib.import_module("tessera.compat.triton")
    except ModuleNotFoundError as e:
        assert e.name == "triton" and "tessera" not in str(e)
        return False


# ------------------------------------------------------------------ the mapping

TRITON_MODULES = {
    "triton": "tessera.compat.triton",
    "triton.language": "tessera.language",
    "triton.language.core": "tessera.language",
    "triton.language.math": "tessera.language.math",
    "triton.language.random": "tessera.language.random",
    "triton.language.extra": "tessera.language.extra",
    "triton.language.extra.libdevice": "tessera.language.math",
    "triton.language.extra.cuda": "tessera.language.extra.cuda",
    "triton.language.extra.cuda.libdevice": "tessera.language.math",
    "triton.testing": "tessera.testing",
    "triton.runtime": "tessera.compat.triton.runtime",
    "triton.runtime.autotuner": "tessera.compat.triton.runtime.autotuner",
    "triton.runtime.jit": "tessera.compat.triton.runtime.jit",
    "triton.runtime.errors": "tessera.compat.triton.runtime.errors",
    "triton.runtime.driver": "tessera.runtime.driver",
    "triton.backends": "tessera.compat.triton.backends",
    "triton.backends.compiler": "tessera.compat.triton.backends.compiler",
    "triton.backends.driver": "tessera.compat.triton.backends.driver",
    "triton.errors": "tessera.compat.triton.errors",
}


@pytest.mark.parametrize("name", sorted(TRITON_MODULES))
def test_every_triton_module_imports_as_its_tessera_module(compat, name):
    target = importlib.import_module(TRITON_MODULES[name])
    ns = import_as_user(f"import {name} as m\nfrom {name} import *")
    if name == "triton.runtime.driver":  # as in Triton, the package attribute is the DriverConfig object
        target = target.driver
    assert ns["m"] is target
    if name != "triton":
        top = import_as_user(f"import {name}")["triton"]
        assert top is importlib.import_module("tessera.compat.triton")


def test_triton_names_are_tesseras_objects(compat):
    ns = import_as_user("import triton\nimport triton.language as tl\nfrom triton.runtime import Autotuner, "
                        "Heuristics, JITFunction, driver\nfrom triton.runtime.driver import driver as config")
    triton, tl = ns["triton"], ns["tl"]
    assert triton.__version__ == "3.6.0"
    for name in ["jit", "JITFunction", "autotune", "heuristics", "Config", "cdiv", "next_power_of_2",
                 "CompilationError", "OutOfResources", "InterpreterError", "language", "testing"]:
        assert getattr(triton, name) is getattr(tessera, name), name
    assert triton.TritonError is tessera.TesseraError
    assert issubclass(triton.CompilationError, triton.TritonError)
    assert ns["Autotuner"] is tessera.Autotuner and ns["Heuristics"] is tessera.Heuristics
    assert ns["JITFunction"] is tessera.JITFunction
    assert triton.runtime.autotuner.OutOfResources is tessera.OutOfResources
    assert triton.runtime.jit.jit is tessera.jit
    assert tl.float16 is tessera.language.float16 and isinstance(tl.float16, tl.dtype)
    assert tl.core.constexpr is tl.constexpr
    assert triton.language.extra.libdevice.exp is tessera.language.math.exp
    assert triton.cdiv(10, 4) == 3 and triton.next_power_of_2(17) == 32
    assert triton.set_allocator(lambda size, align, stream: None) is None
    assert triton.set_allocator is tessera.set_allocator
    # The driver's queries libraries make, as Triton spells them.
    assert ns["driver"] is ns["config"] and ns["driver"].active is ns["config"].default
    active = triton.runtime.driver.active
    for query in ["get_active_torch_device", "get_current_device", "get_current_stream", "get_current_target",
                  "get_device_interface", "get_empty_cache_for_benchmark", "clear_cache"]:
        assert callable(getattr(active, query)), query
    assert callable(active.utils.get_device_properties)
    from triton.backends.compiler import GPUTarget  # noqa: F401  (the probe libraries make)
    assert GPUTarget("cuda", 90, 32).arch == 90
    assert "nvidia" in triton.backends.backends


def test_compiler_errors_module_names_tesseras_compilation_error(compat):
    # Triton's tests and libraries catch `triton.compiler.errors.CompilationError` (test_random.py)
    ns = import_as_user("import triton\nfrom triton.compiler.errors import CompilationError")
    assert ns["CompilationError"] is tessera.CompilationError
    assert ns["triton"].compiler.errors.CompilationError is tessera.CompilationError


def test_out_of_resources_is_a_launch_error_with_tritons_arguments():
    e = tessera.OutOfResources(232448, 101376, "shared memory")
    assert isinstance(e, tessera.LaunchError)
    assert str(e).startswith("out of resource: shared memory, Required: 232448, Hardware limit: 101376.")
    import pickle
    assert pickle.loads(pickle.dumps(e)).required == 232448
    e = tessera.OutOfResources(2, 1, "shared memory", "kernel 'k' needs 2 bytes")
    assert str(e) == "kernel 'k' needs 2 bytes" and str(pickle.loads(pickle.dumps(e))) == str(e)


def test_modules_without_a_tessera_counterpart_say_so(compat):
    with pytest.raises(ModuleNotFoundError, match=r"No module named 'triton.profiler'.*docs/compatibility.md"):
        import_as_user("import triton.profiler")
    with pytest.raises(ImportError, match=r"cannot import name 'constexpr_function' from 'triton'"):
        import_as_user("from triton import constexpr_function")
    with pytest.raises(ImportError, match=r"cannot import name 'MockTensor' from 'triton.runtime.jit'"):
        import_as_user("from triton.runtime.jit import MockTensor")


def test_uninstall_restores_plain_imports(compat):
    import_as_user("import triton")
    tessera.compat.uninstall()
    assert not tessera.compat.installed()
    assert not is_facade_import("import triton")
    tessera.compat.install()
    assert tessera.compat.installed()
    hook = builtins.__import__
    tessera.compat.install()  # again: the same hook, not a second one
    assert builtins.__import__ is hook


def test_torch_modules_are_left_alone(compat):
    # torch's own `import triton` (Inductor) is not answered with tessera.
    assert not is_facade_import("import triton", importer="torch._inductor.runtime.triton_compat")
    assert import_as_user("import triton", importer="torchvision_like_app")["triton"].__version__ == "3.6.0"


def test_device_queries_through_the_fake_driver(tmp_path):
    fake = BUILD / "lib" / "libtessera_fake_cuda.so"
    assert fake.exists(), f"{fake} is missing: build the tessera_fake_cuda target (tests/CMakeLists.txt)"
    proc = run_python("""
        import tessera.compat
        tessera.compat.install()
        import triton
        active = triton.runtime.driver.active
        props = active.utils.get_device_properties(0)
        print(props["multiprocessor_count"], props["max_shared_mem"], props["max_num_regs"], props["warpSize"])
        print(active.get_current_device(), active.get_current_target(), active.is_available())
    """, {"TESSERA_LIBCUDA": str(fake), "TESSERA_CACHE_DIR": str(tmp_path / "cache")}, [PYTHON_DIR])
    assert proc.stdout.splitlines() == ["132 232448 65536 32",
                                        "0 GPUTarget(backend='cuda', arch=90, warp_size=32) True"]


# ------------------------------------------------------------------ kernels written for Triton

KERNEL = '''
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def scale_add(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, alpha * x + libdevice.exp(y), mask=mask)
'''


def import_kernel_file(tmp_path, name, text=KERNEL):
    (tmp_path / f"{name}.py").write_text(text)
    sys.path.insert(0, str(tmp_path))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop(name, None)


@pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")
def test_triton_kernel_compiles_to_ptx(compat, tmp_path):
    module = import_kernel_file(tmp_path, "triton_style_kernel_ptx")
    assert isinstance(module.scale_add, tessera.JITFunction) and module.triton is importlib.import_module(
        "tessera.compat.triton")
    k = tessera.compile(module.scale_add, signature="*fp32:16,*fp32:16,*fp32:16,i32,fp32",
                        constexprs={"BLOCK": 256}, target="sm_90a")
    ptx = k.asm["ptx"]
    assert ".visible .entry scale_add(" in ptx
    if PTXAS.exists():
        (tmp_path / "k.ptx").write_text(ptx)
        proc = subprocess.run([str(PTXAS), "-arch=sm_90a", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr


@pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")
def test_triton_kernel_runs_under_the_interpreter(compat, tmp_path, monkeypatch):
    monkeypatch.setenv("TESSERA_INTERPRET", "1")
    module = import_kernel_file(tmp_path, "triton_style_kernel_interp")
    n = 1000
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    triton = module.triton
    module.scale_add[(triton.cdiv(n, 256),)](x, y, out, n, 2.0, BLOCK=256)
    np.testing.assert_allclose(out, 2 * x + np.exp(y), rtol=1e-5, atol=1e-6)


LIBRARY_STYLE = '''
import triton
import triton.language as tl
from triton.language.extra.libdevice import tanh
from triton import cdiv


@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def gelu_tanh(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        x = tl.load(x_ptr + offs)
    else:
        x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    y = 0.5 * x * (1 + tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
    tl.store(out_ptr + offs, y, mask=offs < n)


def gelu(x, out):
    n = x.size
    gelu_tanh[lambda meta: (cdiv(n, meta["BLOCK"]),)](x, out, n, BLOCK=128)
    return out
'''


@pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")
@pytest.mark.parametrize("n", [1000, 1024])
def test_library_style_kernel_runs_under_the_interpreter(compat, tmp_path, monkeypatch, n):
    # from-imports of libdevice functions and of triton.cdiv, @triton.heuristics over @triton.jit
    monkeypatch.setenv("TESSERA_INTERPRET", "1")
    module = import_kernel_file(tmp_path, f"triton_library_style_{n}", LIBRARY_STYLE)
    assert isinstance(module.gelu_tanh, tessera.Heuristics)
    x = np.linspace(-3, 3, n).astype(np.float32)
    out = module.gelu(x, np.full(n, np.nan, np.float32))
    np.testing.assert_allclose(out, 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3))), atol=1e-6)


TRANSPOSE_KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def transpose(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    tl.store(out_ptr + tl.arange(0, M * N), tl.reshape(tl.trans(x), (M * N, )))
'''


@pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")
def test_too_much_shared_memory_is_tritons_out_of_resources(compat, tmp_path):
    module = import_kernel_file(tmp_path, "triton_style_transpose", TRANSPOSE_KERNEL)
    triton = module.triton
    # A library's fallback: try the big block, catch OutOfResources, take a smaller one.
    try:
        tessera.compile(module.transpose, "*fp32:16,*fp32:16", {"M": 256, "N": 256}, target="sm_90a")
    except triton.runtime.autotuner.OutOfResources as e:
        assert (e.required, e.limit, e.name) == (262144, 232448, "shared memory")
        assert str(e) == ("codegen: kernel 'transpose' needs 262144 bytes of shared memory, more than sm_90a "
                          "allows (232448)")
        assert isinstance(e, tessera.LaunchError) and isinstance(e, RuntimeError)
    else:
        raise AssertionError("a 256 x 256 fp32 transpose fits in shared memory?")
    tessera.compile(module.transpose, "*fp32:16,*fp32:16", {"M": 64, "N": 64}, target="sm_90a")


class CudaArray:
    def __init__(self, ptr=1 << 20):
        self.__cuda_array_interface__ = {"data": (ptr, False), "typestr": "<f4", "shape": (65536,),
                                         "strides": None, "version": 3}


@pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")
def test_the_autotuner_skips_a_config_that_is_out_of_resources(compat, tmp_path, monkeypatch):
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path / "cache"))
    module = import_kernel_file(tmp_path, "triton_style_transpose_tuned", TRANSPOSE_KERNEL)
    triton = module.triton
    timed = []
    tuned = triton.autotune(configs=[triton.Config({"M": 256, "N": 256}), triton.Config({"M": 64, "N": 64})],
                            key=[], do_bench=lambda call: timed.append(call.config) or 1.0)(module.transpose)
    assert tuned.tune(CudaArray(), CudaArray(), grid=(1,)).kwargs == {"M": 64, "N": 64}
    [(config, reason)] = tuned.failures.items()
    assert config.kwargs == {"M": 256, "N": 256}
    assert reason.startswith("OutOfResources: codegen: kernel 'transpose' needs 262144 bytes of shared memory")
    assert [c.kwargs for c in timed] == [{"M": 64, "N": 64}]


@pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")
def test_jit_function_has_the_attributes_libraries_read(compat, tmp_path):
    module = import_kernel_file(tmp_path, "triton_style_kernel_attrs")
    k = module.scale_add
    names = ["x_ptr", "y_ptr", "out_ptr", "n", "alpha", "BLOCK"]
    assert k.fn.__name__ == k.__name__ == "scale_add"
    assert k.src.startswith("def scale_add(")  # Triton's spelling: dedented, from `def` on
    assert k.arg_names == names and list(k.signature.parameters) == names
    assert [p.name for p in k.params] == names
    assert [p.is_constexpr for p in k.params] == [False] * 5 + [True]
    assert k.params[5] == ("BLOCK", True, False)  # still the tuples tessera gave before
    assert k.constexprs == [5]
    assert k.__globals__ is vars(module) and k.module == "triton_style_kernel_attrs"
    assert k.starting_line_number == KERNEL.splitlines().index("@triton.jit") + 1
    assert k.do_not_specialize == [] and k.noinline is False
    key = k.cache_key
    assert len(key) == 64 and k.cache_key == key
    changed = import_kernel_file(tmp_path, "triton_style_kernel_attrs2", KERNEL.replace("alpha * x", "alpha * x * 2"))
    assert changed.scale_add.cache_key != key


COMPOSED_KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def blocks(n, BLOCK: tl.constexpr):
    return triton.cdiv(n, BLOCK)


@triton.jit
def apply(x_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, offs * 10 + FN(n, BLOCK), mask=offs < n)
'''

HELPER_FILE = '''
import triton
import triton.language as tl


@triton.jit
def twice_blocks(n, BLOCK: tl.constexpr):
    return 2 * triton.cdiv(n, BLOCK)
'''


@pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")
def test_jit_functions_passed_as_constexprs_compose(compat, tmp_path, monkeypatch):
    # The composed text names the helpers' modules as the front-end knows them (triton, not
    # tessera.compat.triton), from the kernel's own file and from another file.
    monkeypatch.setenv("TESSERA_INTERPRET", "1")
    kernels = import_kernel_file(tmp_path, "triton_style_composed", COMPOSED_KERNEL)
    helpers = import_kernel_file(tmp_path, "triton_style_helpers", HELPER_FILE)
    for fn, expect in [(kernels.blocks, 3), (helpers.twice_blocks, 6)]:  # cdiv(300, 128) = 3
        x = np.zeros(300, np.int32)
        kernels.apply[(1,)](x, 300, FN=fn, BLOCK=128)  # one program: the first 128 elements
        np.testing.assert_array_equal(x[:128], np.arange(128) * 10 + expect)
        assert not x[128:].any()


def test_a_kernel_without_its_file_imports_triton_under_its_own_name(compat, tmp_path):
    # A kernel whose file no longer holds it is compiled from inspect's text plus a prelude of the
    # modules it uses: the compatibility mode's `triton` is written as `import triton` there.
    from tessera import _source
    module = import_kernel_file(tmp_path, "triton_style_prelude")
    prelude = _source._prelude(module.scale_add.fn)
    assert "import triton\n" in prelude and "import tessera.language as tl\n" in prelude
    assert "import tessera.language.math as libdevice\n" in prelude and "compat" not in prelude


# ------------------------------------------------------------------ beside an installed Triton

def write_stand_in_packages(root):
    """A 'real' triton and a torch whose module imports triton, under root."""
    (root / "triton").mkdir(parents=True)
    (root / "triton" / "__init__.py").write_text("REAL = True\n__version__ = '3.6.0+real'\n")
    (root / "triton" / "compiler.py").write_text("REAL_COMPILER = True\n")
    (root / "torch").mkdir()
    (root / "torch" / "__init__.py").write_text("")
    (root / "torch" / "_inductor_probe.py").write_text("import triton\nimport triton.compiler\n")


def run_python(code, env_extra, paths):
    env = dict(os.environ)
    env.pop("TESSERA_AS_TRITON", None)
    env.update(env_extra)
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in paths)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def test_installed_triton_stays_without_the_mode_and_for_torch(tmp_path):
    site = tmp_path / "site"
    write_stand_in_packages(site)
    proc = run_python("""
        import triton
        assert getattr(triton, "REAL", False), triton          # no mode: the installed Triton
        import tessera.compat
        tessera.compat.install()
        import triton as t2         # sys.modules["triton"] is the installed one: import statements ask tessera
        assert t2.__version__ == "3.6.0" and not hasattr(t2, "REAL"), t2
        import torch._inductor_probe as probe
        assert probe.triton.REAL and probe.triton.compiler.REAL_COMPILER   # torch keeps the installed one
        import importlib
        assert importlib.import_module("triton").REAL   # sys.modules / importlib are left alone
        print("ok")
    """, {}, [site, PYTHON_DIR])
    assert proc.stdout.strip() == "ok"


# ------------------------------------------------------------------ the .pth hook

def pth_site(tmp_path):
    """A site directory holding the wheel's tessera_as_triton.pth (its import finds
    python/_tessera_as_triton.py on PYTHONPATH)."""
    d = tmp_path / "pth_site"
    d.mkdir()
    (d / "tessera_as_triton.pth").write_text((PYTHON_DIR / "tessera_as_triton.pth").read_text())
    return d


def test_pth_file_is_one_import_line():
    lines = (PYTHON_DIR / "tessera_as_triton.pth").read_text().splitlines()
    assert lines == ["import _tessera_as_triton"]


def test_pth_hook_with_the_variable_gives_tessera_at_the_first_import(tmp_path):
    site = tmp_path / "site"
    write_stand_in_packages(site)
    proc = run_python(f"""
        import builtins, site, sys
        plain = builtins.__import__
        site.addsitedir({str(pth_site(tmp_path))!r})
        assert "tessera" not in sys.modules        # nothing loads until triton is imported
        assert builtins.__import__ is not plain
        import torch._inductor_probe as probe      # torch's own import: the installed Triton, no tessera
        assert probe.triton.REAL and "tessera" not in sys.modules
        import triton
        import triton.language as tl
        import tessera
        assert triton.jit is tessera.jit and tl is tessera.language and triton.__version__ == "3.6.0"
        print("ok")
    """, {"TESSERA_AS_TRITON": "1"}, [site, PYTHON_DIR])
    assert proc.stdout.strip() == "ok"


@pytest.mark.parametrize("value", ["", "0", "off"])
def test_pth_hook_without_the_variable_does_nothing(tmp_path, value):
    site = tmp_path / "site"
    write_stand_in_packages(site)
    proc = run_python(f"""
        import builtins, site, sys
        plain = builtins.__import__
        site.addsitedir({str(pth_site(tmp_path))!r})
        assert builtins.__import__ is plain and "tessera" not in sys.modules
        import triton
        assert triton.REAL
        print("ok")
    """, {"TESSERA_AS_TRITON": value}, [site, PYTHON_DIR])
    assert proc.stdout.strip() == "ok"


def test_pth_hook_never_breaks_the_program(tmp_path):
    # tessera cannot be imported (only the hook module is on the path): `import triton` still works.
    site = tmp_path / "site"
    write_stand_in_packages(site)
    hook_only = tmp_path / "hook_only"
    hook_only.mkdir()
    (hook_only / "_tessera_as_triton.py").write_text((PYTHON_DIR / "_tessera_as_triton.py").read_text())
    proc = run_python(f"""
        import site
        site.addsitedir({str(pth_site(tmp_path))!r})
        import triton
        assert triton.REAL
        print("ok")
    """, {"TESSERA_AS_TRITON": "1"}, [site, hook_only])
    assert proc.stdout.strip() == "ok"
    assert "could not start (ModuleNotFoundError: No module named 'tessera')" in proc.stderr


CONSTEXPR_ASSIGNMENT = '''
import triton
import triton.language as tl


def make(literal):
    from triton.language.core import constexpr_type  # as test_core.py: a closure variable, not a global

    @triton.jit
    def kernel(input_literal: tl.constexpr, tensor_type: tl.constexpr):
        patched_literal: tl.constexpr = PATCHED
        tl.static_assert(patched_literal.type == constexpr_type(PATCHED))
        tl.static_assert(input_literal.type == constexpr_type(PATCHED))
        assigned_literal: tl.constexpr = input_literal
        tl.static_assert(assigned_literal.type == constexpr_type(PATCHED))
        tl.static_assert(assigned_literal == patched_literal)
        if tensor_type is not None:
            assigned_variable = input_literal
            tl.static_assert(assigned_variable.type == tensor_type)
    return kernel, constexpr_type
'''


@pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")
@pytest.mark.parametrize("literal, dtype", [(10, "int32"), (32.1, "float32"), ((5, 6, 7), None)])
def test_constexpr_type_from_triton_language_core(compat, tmp_path, monkeypatch, literal, dtype):
    # test_core.py's test_constexpr_assignment (its patch_kernel written out)
    monkeypatch.setenv("TESSERA_INTERPRET", "1")
    name = "constexpr_assignment_" + str(abs(hash(literal)))
    module = import_kernel_file(tmp_path, name, CONSTEXPR_ASSIGNMENT.replace("PATCHED", repr(literal)))
    kernel, constexpr_type = module.make(literal)
    tl = module.tl
    assert tl.constexpr(literal).type == constexpr_type(literal) != constexpr_type("other")
    kernel[(1,)](literal, getattr(tl, dtype) if dtype else None)


@pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")
def test_constexpr_type_mismatch_fails_static_assert(compat, tmp_path, monkeypatch):
    monkeypatch.setenv("TESSERA_INTERPRET", "1")
    module = import_kernel_file(tmp_path, "constexpr_assignment_mismatch",
                                CONSTEXPR_ASSIGNMENT.replace("PATCHED", "10"))
    kernel, _ = module.make(10)
    with pytest.raises(tessera.CompilationError, match="static_assert"):
        kernel[(1,)](11, None)
