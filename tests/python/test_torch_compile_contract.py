"""tessera's side of the torch.compile contract (docs/torch-compile.md), without torch or a GPU:
the process-wide compatibility mode (torch's own `import triton`, importlib and find_spec get
tessera), the names torch's Inductor imports from `triton`, triton.compile(ASTSource(...)) on
kernels written in the style Inductor generates (inductor_style/), the compiled kernel's fields,
and its trip from a compile worker to the parent (Inductor's pickling, then _init_handles()).
Launching through run() with Inductor's argument order: tests/fake_driver/test_torch_compile_launch.py."""
import importlib
import importlib.util
import inspect
import math
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

from conftest import PTXAS, ROOT

import tessera
import tessera.compat

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def triton():
    """The process-wide mode for this module's tests; the Inductor-style kernels imported under it."""
    assert not tessera.compat.installed()
    tessera.compat.install(process_wide=True)
    sys.path.insert(0, HERE)
    try:
        import triton
        yield triton
    finally:
        sys.path.remove(HERE)
        for name in [n for n in sys.modules if n.startswith("inductor_style.")]:
            del sys.modules[name]
        tessera.compat.uninstall()


@pytest.fixture(scope="module")
def generated(triton):
    return importlib.import_module("inductor_style.generated")


@pytest.fixture(scope="module")
def contract(triton):
    return importlib.import_module("inductor_style.contract")


# --- the process-wide mode --------------------------------------------------------------------------

def test_every_importer_gets_tesseras_triton(triton):
    facade = tessera.compat.facade_module("triton")
    assert triton is facade and sys.modules["triton"] is facade
    assert importlib.import_module("triton.language") is tessera.language
    assert importlib.util.find_spec("triton") is not None  # torch's has_triton_package()
    # torch's modules are importers like any other now (the default mode keeps them on real Triton).
    code = compile("import triton.compiler.compiler as cc\nresult = cc", "<torch>", "exec")
    scope = {"__name__": "torch._inductor.runtime.triton_heuristics"}
    exec(code, scope)
    assert scope["result"] is importlib.import_module("tessera.compat.triton.compiler.compiler")
    # Triton's DriverConfig object stays the attribute even after the module is imported by name.
    import triton.runtime.driver  # noqa: F401
    assert hasattr(triton.runtime.driver, "set_active") and hasattr(triton.runtime.driver, "active")
    with pytest.raises(ModuleNotFoundError, match="no counterpart"):
        importlib.import_module("triton.experimental.gluon")


def test_processes_started_with_its_sys_path_get_it_too(triton, tmp_path):
    """Inductor starts its compile workers with PYTHONPATH = the parent's sys.path."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    env.pop("TESSERA_AS_TRITON", None)
    code = ("import importlib.util, sys\n"
            "import triton, triton.language as tl\n"
            "from triton.compiler.compiler import ASTSource\n"
            "print(triton.__name__, tl.__name__, importlib.util.find_spec('triton.language').name)\n")
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["tessera.compat.triton", "tessera.language", "tessera.language"]


def test_turning_it_on_after_the_installed_triton_was_imported_is_an_error(tmp_path):
    code = ("import sys, types, tessera.compat as c\n"
            "real = types.ModuleType('triton'); real.__file__ = '/site-packages/triton/__init__.py'\n"
            "sys.modules['triton'] = real\n"
            "try:\n"
            "    c.install(process_wide=True)\n"
            "except RuntimeError as e:\n"
            "    print(e)\n"
            "print(c.installed(), c.process_wide_finder() in sys.meta_path, sys.modules['triton'] is real)\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    env.pop("TESSERA_AS_TRITON", None)
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("tessera.compat.install(process_wide=True): the installed Triton is imported "
                               "already (/site-packages/triton/__init__.py); turn the mode on before anything "
                               "imports triton"), lines
    assert lines[1] == "False False True"


def test_uninstall_takes_everything_back(tmp_path):
    code = ("import os, sys, importlib.util, tessera.compat as c\n"
            "c.install(process_wide=True)\n"
            "import triton\n"
            "assert c.process_wide() and os.environ['TESSERA_AS_TRITON'] == 'all'\n"
            "c.uninstall()\n"
            "print(c.installed(), c.process_wide(), 'triton' in sys.modules, c.PROCESS_WIDE_PATH in sys.path,\n"
            "      'TESSERA_AS_TRITON' in os.environ, importlib.util.find_spec('triton'))\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    env.pop("TESSERA_AS_TRITON", None)
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "False", "False", "False", "False", "None"]


def test_the_pth_hook_turns_it_on_with_tessera_as_triton_all(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"), TESSERA_AS_TRITON="all")
    code = ("import _tessera_as_triton, importlib.util\n"  # what the wheel's .pth line runs at start
            "spec = importlib.util.find_spec('triton')\n"
            "import sys, triton, tessera.compat as c\n"
            "print(spec is not None, triton.__name__, c.process_wide())\n")
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "tessera.compat.triton", "True"]


# --- the names Inductor imports -------------------------------------------------------------------------

def test_the_names_torchs_inductor_imports(triton):
    """torch/_inductor/runtime/triton_compat.py, hints.py, triton_helpers.py and torch/utils/_triton.py."""
    import triton.language as tl
    from triton import Config, knobs  # noqa: F401
    from triton.backends.compiler import BaseBackend, GPUTarget  # noqa: F401
    from triton.compiler import CompiledKernel  # noqa: F401
    from triton.compiler.compiler import ASTSource, make_backend, triton_key
    from triton.language.extra import libdevice  # noqa: F401
    from triton.language.standard import _log2  # noqa: F401
    from triton.runtime.autotuner import OutOfResources, PTXASError  # noqa: F401
    from triton.runtime.cache import triton_key as cache_triton_key
    from triton.runtime.jit import JITFunction, KernelInterface  # noqa: F401
    import triton.backends.compiler
    import triton.compiler.compiler
    # hints.py picks the attrs dict spelling (Triton >= 3.2) only when neither module has AttrsDescriptor.
    assert not hasattr(triton.backends.compiler, "AttrsDescriptor")
    assert not hasattr(triton.compiler.compiler, "AttrsDescriptor")
    assert tl.extra.libdevice is libdevice and tl.math is not None
    assert "_semantic" not in inspect.signature(triton.language.core.view).parameters
    assert triton.__version__ == "3.6.0"
    key = triton_key()
    assert key == cache_triton_key() and "tessera" in key and tessera._C.cache_versions()["build_id"] in key
    backend = make_backend(GPUTarget("cuda", 90, 32))
    assert isinstance(backend, BaseBackend)
    assert backend.hash() == make_backend(GPUTarget("cuda", 90, 32)).hash() != make_backend(
        GPUTarget("cuda", 80, 32)).hash()
    # torch's triton_helpers.get_backend_options(): make_backend(target).parse_options({}).__dict__
    options = triton.compiler.compiler.make_backend(GPUTarget("cuda", 90, 32)).parse_options(dict()).__dict__
    assert (options["num_stages"], options["num_warps"], options["num_ctas"], options["arch"]) == (3, 4, 1, "sm90")
    assert knobs.runtime.launch_enter_hook is None and knobs.runtime.launch_exit_hook is None
    assert knobs.runtime.jit_post_compile_hook is None
    assert CompiledKernel.launch_enter_hook is None and CompiledKernel.launch_exit_hook is None
    assert issubclass(PTXASError, tessera.TesseraError)


def test_set_driver_to_gpu_as_triton_helpers_does_it(triton):
    """torch's triton_helpers.set_driver_to_gpu(): a back-end whose driver class says is_active()."""
    driver = triton.runtime.driver
    backend = triton.backends.backends["nvidia"]
    assert isinstance(backend.driver.is_active(), bool)
    driver.set_active(backend.driver())
    try:
        assert isinstance(driver.active, backend.driver)
    finally:
        driver.reset_active()


def test_is_active_asks_torch_first_as_triton_does(triton, monkeypatch):
    """In Inductor's forked compile workers cuInit can fail although torch sees the GPU: Triton's
    is_active() is torch.cuda.is_available() (not ROCm); tessera's says yes there too, else the
    worker raises "Could not find an active GPU backend" (seen on an H200 with an AdamW step)."""
    import types
    driver_class = triton.backends.backends["nvidia"].driver
    for available, hip, expected in ((True, None, True), (True, "6.0", None), (False, None, None)):
        fake = types.SimpleNamespace(cuda=types.SimpleNamespace(is_available=lambda a=available: a),
                                     version=types.SimpleNamespace(hip=hip))
        monkeypatch.setitem(sys.modules, "torch", fake)
        # None: torch says no, so the answer is the driver's own (no GPU on CI: False)
        want = expected if expected is not None else bool(tessera._C.driver_available())
        assert driver_class.is_active() is want


def test_the_config_inductor_builds(triton):
    """InductorConfig(Config) with dynamic_scale_rblock; Config(..., maxnreg=, pre_hook=)."""
    class InductorConfig(triton.Config):
        def __init__(self, *args, dynamic_scale_rblock=True, **kwargs):
            super().__init__(*args, **kwargs)
            self.dynamic_scale_rblock = dynamic_scale_rblock

    cfg = InductorConfig({"XBLOCK": 8, "R0_BLOCK": 128}, num_warps=4, num_stages=1)
    assert (cfg.kwargs, cfg.num_warps, cfg.num_stages, cfg.pre_hook) == ({"XBLOCK": 8, "R0_BLOCK": 128}, 4, 1, None)
    other = triton.Config({"XBLOCK": 8}, num_warps=2, num_stages=1, maxnreg=None, pre_hook=None)
    assert {cfg: 1, other: 2}[other] == 2  # hashable: Inductor keys dicts by config


# --- triton.compile(ASTSource(...)) ---------------------------------------------------------------------

KERNELS = ["triton_poi_fused_add_gelu_0", "triton_per_fused_native_layer_norm_1", "triton_per_fused__softmax_2",
           "triton_red_fused_sum_3", "triton_poi_fused_clamp_mul_4", "triton_poi_fused_index_5",
           "triton_poi_fused_mul_6", "triton_poi_fused_relu_7"]


@pytest.mark.parametrize("name", KERNELS)
def test_compiled_kernel_has_the_fields_inductor_reads(triton, generated, contract, cache, tmp_path, name):
    k = contract.compile_case(triton, generated, name)
    signature, constants, attrs, num_warps = contract.CASES[name]
    assert isinstance(k, triton.compiler.CompiledKernel)
    assert k.name == name and k.src.fn is getattr(generated, name) and k.src.name == name
    assert k.src.signature == signature and k.src.attrs == attrs
    assert k.src.constants == {(k.src.fn.arg_names.index(n),): v for n, v in constants.items()}
    md = k.metadata
    assert isinstance(md, tuple) and hasattr(md, "_asdict")  # a namedtuple, as Inductor serialises it
    assert (md.name, md.num_warps, md.num_ctas, md.num_stages, md.cluster_dims) == (name, num_warps, 1, 1, (1, 1, 1))
    assert (md.global_scratch_size, md.profile_scratch_size, md.launch_pdl, md.launch_cooperative_grid) == \
        (0, 0, False, False)
    assert md.target == ("cuda", 90, 32) and md.arch == "sm_90a" and md.debug is True
    assert k.packed_metadata == (num_warps, 1, md.shared)
    assert k.num_warps == num_warps and k.shared == md.shared
    assert len(k.hash) == 64 and k.hash == md.hash
    assert (k.module, k.function) == (None, None)  # Triton's handles, before _init_handles()
    ptx = k.asm["ptx"]
    assert f".visible .entry {name}(" in ptx and ".target sm_90a" in ptx
    (tmp_path / "k.ptx").write_text(ptx)
    subprocess.run([str(PTXAS), "-arch=sm_90a", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")],
                   check=True)
    assert k.kernel == k.asm["cubin"] and k.asm["cubin"][:4] == b"\x7fELF"
    k._init_handles()  # no driver here: ptxas -v's numbers
    assert k.n_regs > 0 and k.n_spills == 0 and k.function == 0 and callable(k.run)


def test_compile_runs_ptxas_and_keeps_the_cubin_in_the_kernel_cache(triton, generated, contract, cache,
                                                                    monkeypatch):
    """As Triton's compile ends with a cubin: in Inductor's workers (no GPU), so that the parent only loads."""
    monkeypatch.setenv("TESSERA_JIT", "ptxas")
    k = contract.compile_case(triton, generated, "triton_per_fused__softmax_2")
    entries = [e["entry"] for e in tessera._C.cache_list() if e["entry"]
               and e["entry"]["kernel"] == "triton_per_fused__softmax_2"]
    assert len(entries) == 1
    tags = list(entries[0]["cubins"])
    assert len(tags) == 1 and tags[0].startswith("sm_90/ptxas"), tags  # the device's arch: sm_90a PTX, sm_90 GPU
    assert entries[0]["cubins"][tags[0]][:4] == b"\x7fELF"
    assert k.src.fn.arg_names  # and the kernel is what compile() returned
    monkeypatch.setenv("TESSERA_JIT", "whole")  # the driver compiles the PTX when it loads: nothing to run now
    contract.compile_case(triton, generated, "triton_red_fused_sum_3")
    entry = next(e["entry"] for e in tessera._C.cache_list() if e["entry"]
                 and e["entry"]["kernel"] == "triton_red_fused_sum_3")
    assert entry["cubins"] == {}


def test_ptxas_starts_while_the_kernel_compiles(cache, tmp_path):
    """On a cache miss triton.compile starts ptxas before the PTX exists (it reads it from a pipe:
    its start, most of its time on a small kernel, overlaps the compile); the cubin is the one
    ptxas makes of the PTX file. A compile that fails leaves no ptxas behind."""
    ptxas = tmp_path / "ptxas"
    log = tmp_path / "ptxas.log"
    ptxas.write_text(f"#!/bin/sh\necho \"$@\" >> {log}\nexec {PTXAS} \"$@\"\n")
    ptxas.chmod(0o755)
    code = ("import os, sys; sys.path.insert(0, %r)\n"
            "import tessera.compat; tessera.compat.install(process_wide=True)\n"
            "import triton, tessera\n"
            "from triton.compiler.compiler import ASTSource\n"
            "from triton.backends.compiler import GPUTarget\n"
            "from inductor_style import generated, contract\n"
            "k = contract.compile_case(triton, generated, 'triton_per_fused_native_layer_norm_1')\n"
            "open('k.ptx', 'w').write(k.asm['ptx'])\n"
            "(entry,) = [e['entry'] for e in tessera._C.cache_list() if e['entry']]\n"
            "open('entry.cubin', 'wb').write(next(iter(entry['cubins'].values())))\n"
            "sig, _, attrs, _ = contract.CASES['triton_poi_fused_relu_7']\n"
            "try:  # XBLOCK=3: tl.arange needs a power of 2, an error of the compile ptxas started with\n"
            "    triton.compile(ASTSource(generated.triton_poi_fused_relu_7, sig, {'XBLOCK': 3}, attrs),\n"
            "                   target=GPUTarget('cuda', 90, 32), options=contract.options(4))\n"
            "except Exception as e:\n"
            "    print(type(e).__name__)\n"
            "def parent(p):\n"
            "    try:\n"
            "        return open(f'/proc/{p}/stat').read().rsplit(')', 1)[1].split()[1]\n"
            "    except OSError:  # gone meanwhile\n"
            "        return None\n"
            "print(len([p for p in os.listdir('/proc') if p.isdigit() and parent(p) == str(os.getpid())]))\n"
            % HERE)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"), TESSERA_PTXAS=str(ptxas), TESSERA_JIT="ptxas")
    env.pop("TESSERA_AS_TRITON", None)
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["CompilationError", "0"], proc.stdout  # no ptxas left running
    runs = [line for line in log.read_text().splitlines() if "--version" not in line]
    # (the second, killed when its compile failed, may die before its wrapper logs it)
    assert len(runs) in (1, 2) and all(r.endswith(" /dev/stdin") and "-arch=sm_90a" in r for r in runs), runs
    subprocess.run([str(PTXAS), "-arch=sm_90a", "-o", str(tmp_path / "file.cubin"), str(tmp_path / "k.ptx")],
                   check=True)
    assert (tmp_path / "entry.cubin").read_bytes() == (tmp_path / "file.cubin").read_bytes()


def test_a_child_forked_while_ptxas_waits_does_not_hold_it(cache, tmp_path):
    """A process forked (without exec) while a kernel compiles gets a copy of the pipe ptxas waits on:
    it closes it, so ptxas ends when the parent hands it the PTX, not when the child exits, and the
    child's copy of the compile does not kill the parent's ptxas."""
    code = ("import os, sys, time; sys.path.insert(0, %r)\n"
            "import tessera\n"
            "from tessera import _ext\n"
            "C = _ext.require()\n"
            "text = open(%r).read()\n"
            "h = C.compile(text, 'k.py', 1, 'triton_red_fused_sum_3', '*fp32:16,*fp32:16,i32,i32',\n"
            "              {'XBLOCK': 1, 'R0_BLOCK': 128}, 4, 1, 'sm_90a', '', 0, -1, False, 'sm_90')\n"
            "pid = os.fork()\n"
            "if pid == 0:  # keeps its copy of the compile (and exits without destroying it)\n"
            "    time.sleep(6)\n"
            "    os._exit(0)\n"
            "t = time.perf_counter()\n"
            "assert h.assemble('sm_90')\n"
            "print(time.perf_counter() - t < 5)\n"
            "os.waitpid(pid, 0)\n" % (str(ROOT / "python"), str(tmp_path / "k.py")))
    kernels = open(os.path.join(HERE, "inductor_style", "generated.py")).read()
    (tmp_path / "k.py").write_text("import triton\nimport triton.language as tl\n\n\n@triton.jit\n" +
                                   kernels.split("@triton.jit\n")[4])
    env = dict(os.environ, TESSERA_JIT="ptxas")
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True"], proc.stdout


def test_a_ptxas_that_cannot_read_a_pipe_runs_again_from_a_file(cache, tmp_path):
    """Where ptxas started early fails (a system without /dev/stdin), it runs again on the PTX file as
    before, and that run's result (here the cubin) is the answer."""
    ptxas = tmp_path / "ptxas"
    log = tmp_path / "ptxas.log"
    ptxas.write_text(f"#!/bin/sh\necho \"$@\" >> {log}\n"
                     "case \"$*\" in *' /dev/stdin') echo 'ptxas fatal   : no /dev/stdin here' >&2; exit 1;; esac\n"
                     f"exec {PTXAS} \"$@\"\n")
    ptxas.chmod(0o755)
    code = ("import sys; sys.path.insert(0, %r)\n"
            "import tessera.compat; tessera.compat.install(process_wide=True)\n"
            "import triton, tessera\n"
            "from inductor_style import generated, contract\n"
            "k = contract.compile_case(triton, generated, 'triton_red_fused_sum_3')\n"
            "(entry,) = [e['entry'] for e in tessera._C.cache_list() if e['entry']]\n"
            "print([c[:4] for c in entry['cubins'].values()] == [b'\\x7fELF'])\n" % HERE)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"), TESSERA_PTXAS=str(ptxas), TESSERA_JIT="ptxas")
    env.pop("TESSERA_AS_TRITON", None)
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True"], proc.stdout
    runs = [line for line in log.read_text().splitlines() if "--version" not in line]
    assert len(runs) == 2 and runs[0].endswith(" /dev/stdin") and runs[1].endswith("kernel.ptx"), runs


def test_a_ptxas_failure_is_tritons_ptxas_error(triton, generated, contract, cache, monkeypatch, tmp_path):
    failing = tmp_path / "ptxas"
    failing.write_text("#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'Cuda compilation tools, release 13.0, "
                       "V13.0.88'; exit 0; fi\necho 'ptxas fatal   : out of registers' >&2\nexit 255\n")
    failing.chmod(0o755)
    code = ("import sys; sys.path.insert(0, %r)\n"
            "import tessera.compat; tessera.compat.install(process_wide=True)\n"
            "import triton\n"
            "from inductor_style import generated, contract\n"
            "from triton.runtime.autotuner import PTXASError\n"
            "try:\n"
            "    contract.compile_case(triton, generated, 'triton_red_fused_sum_3')\n"
            "except PTXASError as e:\n"
            "    print('PTXASError', e)\n" % HERE)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"), TESSERA_PTXAS=str(failing), TESSERA_JIT="ptxas")
    env.pop("TESSERA_AS_TRITON", None)
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("PTXASError triton_red_fused_sum_3: ") and "out of registers" in proc.stdout, \
        proc.stdout


def _fresh_copy(fn):
    """A new JITFunction of the same Python function: nothing read or reduced yet."""
    return type(fn)(fn.fn, **fn.options)


def test_compile_asks_for_the_ptx_only(triton, generated, contract, cache, monkeypatch):
    """CompiledKernel.asm holds every stage: a kernel from the disk cache is compiled again to give
    them (and its AST printed), which made each warm triton.compile as slow as a cold front-end."""
    from tessera._compiled_kernel import CompiledKernel as TesseraKernel
    contract.compile_case(triton, generated, "triton_red_fused_sum_3")

    def every_stage(self):
        raise AssertionError("triton.compile read CompiledKernel.asm")
    monkeypatch.setattr(TesseraKernel, "asm", property(every_stage))
    k = contract.compile_case(triton, generated, "triton_red_fused_sum_3")
    assert k._compiled._h.from_cache and ".visible .entry triton_red_fused_sum_3(" in k.asm["ptx"]


def test_the_source_is_reduced_once_per_kernel(triton, generated, contract, cache, monkeypatch):
    """Inductor compiles each config of a kernel, and ASTSource reads its parameters: one reduction
    of the kernel's file (and of the helpers it calls) serves them all."""
    from tessera import _compose
    calls = []
    reduce = _compose.kernel_source_and_dependencies
    monkeypatch.setattr(_compose, "kernel_source_and_dependencies", lambda fn, *more: calls.append(fn) or reduce(fn, *more))
    name = "triton_per_fused_native_layer_norm_1"
    module = type(generated)("copy")
    setattr(module, name, _fresh_copy(getattr(generated, name)))
    for xblock in (8, 16):
        k = contract.compile_case(triton, module, name, num_warps=4)
        k = triton.compile(triton.compiler.compiler.ASTSource(getattr(module, name), contract.CASES[name][0],
                                                              {"XBLOCK": xblock}, contract.CASES[name][2]),
                           target=triton.backends.compiler.GPUTarget("cuda", 90, 32),
                           options=contract.options(4))
        assert k.src.fn.cache_key and ".visible .entry" in k.asm["ptx"]
    assert len(calls) == 1


def test_compiling_reads_each_helper_once_and_not_what_launches_need(triton, generated, contract, cache,
                                                                     monkeypatch):
    """A helper of triton_helpers (maximum) that several kernels call is read (inspect, ast) once a
    process; which constexpr parameters a kernel calls is a question of kernel[grid] launches with
    @jit functions as arguments, which triton.compile never asks (3-4 ms of a cold compile)."""
    from tessera import _compose
    read, read_text = [], getattr(_compose, "_read_function_text", None)
    monkeypatch.setattr(_compose, "_read_function_text", lambda fn: read.append(fn.__name__) or read_text(fn),
                        raising=False)

    def never(*_):
        raise AssertionError("triton.compile asked which constexpr parameters the kernel calls")
    monkeypatch.setattr(_compose, "callable_constexpr_params", never)
    module = type(generated)("copy")
    for name in ("triton_poi_fused_clamp_mul_4", "triton_poi_fused_relu_7"):
        setattr(module, name, _fresh_copy(getattr(generated, name)))
        assert ".visible .entry" in contract.compile_case(triton, module, name).asm["ptx"]
    assert read.count("maximum") <= 1 and read.count("minimum") <= 1


def test_a_warm_process_compiles_nothing(cache, tmp_path):
    """What a warm start of torch.compile does (no static launcher: Inductor calls triton.compile
    again for each kernel): in a new process on the caches a first one filled, each triton.compile
    is a disk-cache hit that reduces no source (the composed text is remembered with the
    triton_helpers it read, tessera/_source_cache.py), compiles nothing, runs no ptxas, and the
    kernel is the same."""
    ptxas = tmp_path / "ptxas"
    log = tmp_path / "ptxas.log"
    ptxas.write_text(f"#!/bin/sh\necho \"$@\" >> {log}\nexec {PTXAS} \"$@\"\n")
    ptxas.chmod(0o755)
    code = ("import sys; sys.path.insert(0, %r)\n"
            "import tessera.compat; tessera.compat.install(process_wide=True)\n"
            "import triton, tessera\n"
            "from tessera import _compose\n"
            "from inductor_style import generated, contract\n"
            "reduced, reduce = [], _compose.kernel_source_and_dependencies\n"
            "_compose.kernel_source_and_dependencies = lambda fn, *more: reduced.append(fn) or reduce(fn, *more)\n"
            "kernels = [contract.compile_case(triton, generated, name) for name in contract.CASES]\n"
            "print(all(k._compiled._h.from_cache for k in kernels), len(reduced),\n"
            "      tessera._C.step_times()['compile'] > 0)\n"
            "print(' '.join(k.hash for k in kernels))\n" % HERE)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"), TESSERA_PTXAS=str(ptxas), TESSERA_JIT="ptxas")
    env.pop("TESSERA_AS_TRITON", None)
    outputs = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc.stdout.splitlines())
    assert outputs[0][0] == "False 8 True"  # cold: each kernel reduced once, compiled
    assert outputs[1][0] == "True 0 False", outputs[1]  # warm: nothing of that
    assert outputs[1][1] == outputs[0][1]
    assert len([line for line in log.read_text().splitlines() if "--version" not in line]) == len(
        outputs[0][1].split())  # one ptxas run a kernel, all in the first process


def test_the_specialisation_tessera_compiles(triton, generated, contract):
    spec = triton.compiler.compiler.specialisation
    from triton.compiler.compiler import ASTSource
    sig, consts, attrs, _ = contract.CASES["triton_poi_fused_clamp_mul_4"]
    entries, constexprs = spec(ASTSource(generated.triton_poi_fused_clamp_mul_4, sig, consts, attrs))
    assert entries == ["*fp32:16", "*fp32:16", "i32:1", "i32"] and constexprs == {"XBLOCK": 128}
    sig, consts, attrs, _ = contract.CASES["triton_per_fused__softmax_2"]
    entries, constexprs = spec(ASTSource(generated.triton_per_fused__softmax_2, sig, consts, attrs))
    assert entries == ["*fp32:16", "*fp32:16", "i32:16", "i32"] and constexprs == {"XBLOCK": 8}
    # A None argument is the constexpr None (no signature entry); constants may be keyed by (index,).
    sig = dict(contract.CASES["triton_poi_fused_add_gelu_0"][0], in_ptr1="constexpr")
    entries, constexprs = spec(ASTSource(generated.triton_poi_fused_add_gelu_0, sig, {(1,): None, (4,): 64}))
    assert entries == ["*bf16", "*fp32", "i32"] and constexprs == {"in_ptr1": None, "XBLOCK": 64}


def test_compile_options_reach_the_compiler(triton, generated, contract):
    name = "triton_poi_fused_index_5"
    checked = contract.compile_case(triton, generated, name).asm["ptx"]
    unchecked = contract.compile_case(triton, generated, name, debug=False).asm["ptx"]
    assert "__assertfail" in checked and "__assertfail" not in unchecked  # Inductor's debug=True
    fused = contract.compile_case(triton, generated, name, debug=False).asm["ptx"]
    separate = contract.compile_case(triton, generated, name, debug=False, enable_fp_fusion=False).asm["ptx"]
    assert "fma.rn.f32" in fused and "fma.rn.f32" not in separate
    k = contract.compile_case(triton, generated, "triton_red_fused_sum_3", num_warps=8, num_stages=3, maxnreg=64)
    assert (k.metadata.num_warps, k.metadata.num_stages, k.metadata.maxnreg) == (8, 3, 64)
    assert ".maxnreg 64" in k.asm["ptx"]
    assert contract.compile_case(triton, generated, "triton_red_fused_sum_3", arch=80).metadata.arch == "sm_80"


def test_bad_specialisations_are_one_clear_error(triton, generated, contract):
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import ASTSource
    fn = generated.triton_poi_fused_clamp_mul_4
    sig, consts, attrs, _ = contract.CASES["triton_poi_fused_clamp_mul_4"]
    target = GPUTarget("cuda", 90, 32)

    def compile_with(sig=sig, consts=consts, options=None, target=target, attrs=attrs):
        return triton.compile(ASTSource(fn, sig, consts, attrs), target=target, options=options or {})

    with pytest.raises(ValueError, match=r"clamp_mul_4\): the signature has no type for parameter 'xnumel'"):
        compile_with(sig={k: v for k, v in sig.items() if k != "xnumel"})
    with pytest.raises(NotImplementedError, match=r"'ks0' is not a tl.constexpr; tessera specialises such a "
                                                  r"parameter to None or 1, not to 2"):
        compile_with(consts={**consts, "ks0": 2})
    with pytest.raises(ValueError, match=r"'ks0' is 'constexpr' in the signature but has no value"):
        compile_with(consts={"XBLOCK": 128})
    with pytest.raises(NotImplementedError, match="nvTmaDesc"):
        compile_with(sig={**sig, "in_ptr0": "nvTmaDesc"})
    with pytest.raises(NotImplementedError, match="launch_cooperative_grid=True"):
        compile_with(options={"launch_cooperative_grid": True})
    with pytest.raises(ValueError, match="compiles for CUDA GPUs, not for target"):
        compile_with(target=GPUTarget("hip", "gfx942", 64))
    with pytest.raises(ValueError, match=r"constexpr 'YBLOCK' is not a parameter"):
        ASTSource(fn, sig, {"YBLOCK": 4})
    with pytest.raises(TypeError, match="triton.compile\\(\\) takes an ASTSource"):
        triton.compile("kernel.ttir")


# --- what the kernels compute (the interpreter, against numpy) ------------------------------------------

def _interpret(fn, grid, *args, **constexprs):
    fn.interpret = True
    try:
        fn[grid](*args, **constexprs)
    finally:
        fn.interpret = False


def test_the_inductor_style_kernels_compute_what_torch_would(generated):
    rng = np.random.default_rng(0)
    # add + GELU(erf) with a broadcast bias of 48
    x, b = rng.standard_normal(480, dtype=np.float32), rng.standard_normal(48, dtype=np.float32)
    out = np.zeros(480, np.float32)
    _interpret(generated.triton_poi_fused_add_gelu_0, (2,), x, b, out, 480, XBLOCK=256)
    y = (x.reshape(10, 48) + b).astype(np.float64).ravel()
    gelu = 0.5 * y * (1.0 + np.vectorize(math.erf)(y / math.sqrt(2.0)))
    np.testing.assert_allclose(out, gelu, rtol=1e-5, atol=1e-6)
    # layer norm over rows of 64 (the persistent reduction), 20 rows in blocks of 8
    x = rng.standard_normal((20, 64), dtype=np.float32)
    w, bias = rng.standard_normal(64, dtype=np.float32), rng.standard_normal(64, dtype=np.float32)
    rstd, out = np.zeros(20, np.float32), np.zeros((20, 64), np.float32)
    _interpret(generated.triton_per_fused_native_layer_norm_1, (3,), rstd, x, w, bias, out, 20, 64, XBLOCK=8)
    xd = x.astype(np.float64)
    mean, var = xd.mean(1, keepdims=True), xd.var(1, keepdims=True)
    np.testing.assert_allclose(rstd, 1 / np.sqrt(var[:, 0] + 1e-5), rtol=1e-5)
    np.testing.assert_allclose(out, (xd - mean) / np.sqrt(var + 1e-5) * w + bias, rtol=1e-4, atol=1e-5)
    # softmax over rows of 32 through triton_helpers.max2 and tl_math.exp
    x = rng.standard_normal((12, 32), dtype=np.float32) * 4
    out = np.zeros((12, 32), np.float32)
    _interpret(generated.triton_per_fused__softmax_2, (2,), x, out, 12, 32, XBLOCK=8)
    e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)
    # a looped reduction (r0_numel not a multiple of R0_BLOCK)
    x = rng.standard_normal((5, 300), dtype=np.float32)
    out = np.zeros(5, np.float32)
    _interpret(generated.triton_red_fused_sum_3, (5,), x, out, 5, 300, XBLOCK=1, R0_BLOCK=128)
    np.testing.assert_allclose(out, x.astype(np.float64).sum(1), rtol=1e-5, atol=1e-5)
    # clamp(0, 6) through triton_helpers.maximum / minimum, NaN kept
    x = np.array([-1.0, 0.5, 7.0, np.nan, 6.0, 0.0], np.float32)
    out = np.zeros(6, np.float32)
    _interpret(generated.triton_poi_fused_clamp_mul_4, (1,), x, out, 1, 6, XBLOCK=128)
    np.testing.assert_array_equal(out, np.array([0.0, 0.5, 6.0, np.nan, 6.0, 0.0], np.float32))
    # an indirect load with Inductor's wrap-around of negative indices and its bounds assert
    idx, table = np.array([3, -1, 0, 15, -16], np.int32), rng.standard_normal(16, dtype=np.float32)
    out = np.zeros(5, np.float32)
    _interpret(generated.triton_poi_fused_index_5, (1,), idx, table, out, 5, XBLOCK=64)
    t = table[idx % 16].astype(np.float64)
    np.testing.assert_allclose(out, t * 2.0 * t + 1.0, rtol=1e-6)
    # i64 sizes and an fp32 scalar (dynamic shapes)
    x, out = rng.standard_normal(7, dtype=np.float32), np.zeros(20, np.float32)
    _interpret(generated.triton_poi_fused_mul_6, (1,), x, out, np.int64(7), np.float32(0.25), np.int64(20),
               XBLOCK=128)
    np.testing.assert_allclose(out, x[np.arange(20) % 7] * 0.25, rtol=1e-6)
    # under the heuristics decorator (xnumel fixed to 2048 in the body, as Inductor writes static sizes)
    x, out = rng.standard_normal(2048, dtype=np.float32), np.zeros(2048, np.float32)
    _interpret(generated.triton_poi_fused_relu_7, (2,), x, out, 2048, XBLOCK=1024)
    np.testing.assert_array_equal(out, np.maximum(x, 0))
    assert generated.triton_poi_fused_relu_7.inductor_heuristic[0] == "pointwise"


# --- from a compile worker to the parent -----------------------------------------------------------------

def test_jitfunction_pickles_as_inductor_prepares_it(triton, generated, contract):
    fn = generated.triton_per_fused__softmax_2
    assert fn.repr(fn) == "triton_per_fused__softmax_2" and fn.used_global_vals == {}
    names, constexprs = fn.arg_names, fn.constexprs
    old = contract.prepare_for_pickle(fn)
    try:
        assert fn.__globals__ is None and fn.repr() == "triton_per_fused__softmax_2"
        copy = pickle.loads(pickle.dumps(fn))
    finally:
        contract.restore_after_unpickle(fn, old)
    assert fn.__globals__ is generated.__dict__ and fn.fn is not None and "_globals" not in fn.__dict__
    assert copy is not fn and copy.fn is None and copy.__name__ == fn.__name__
    assert repr(copy) == "JITFunction(inductor_style.generated:triton_per_fused__softmax_2)" == repr(fn)
    assert copy.arg_names == names and copy.constexprs == constexprs == [4]
    assert copy.params[4].is_constexpr and copy.params[0].name == "in_ptr0"
    # torch's triton_helpers.get_constexprs(kernel)
    assert [p.num for p in copy.params if p.is_constexpr] == [4]


@pytest.mark.parametrize("name", ["triton_poi_fused_add_gelu_0", "triton_per_fused_native_layer_norm_1",
                                  "triton_poi_fused_clamp_mul_4"])
def test_the_kernel_crosses_from_a_worker_and_init_handles_rebuilds_it(triton, generated, contract, cache, name):
    k = contract.compile_case(triton, generated, name)
    received = contract.send_from_worker(k)
    assert received is not k and type(received) is type(k)
    assert (received.name, received.hash, received.asm["ptx"]) == (k.name, k.hash, k.asm["ptx"])
    assert received.metadata.shared == k.metadata.shared and received.metadata.num_warps == k.metadata.num_warps
    assert tuple(received.packed_metadata) == k.packed_metadata
    assert received.src.fn.fn is None and received.src.fn.arg_names == k.src.fn.arg_names
    assert received.src.fn.constexprs == k.src.fn.constexprs
    assert (received.module, received.function) == (None, None)
    received._init_handles()  # compiles again from the recipe: the kernel cache answers
    assert received._compiled._h.from_cache and received._compiled._h.ptx == k.asm["ptx"]
    assert received.n_regs == k._compiled.n_regs and received.function == 0 and callable(received.run)
    # Pickled a second time (FX graph caching pickles compile results again), it still works.
    again = contract.send_from_worker(received)
    again._init_handles()
    assert again.asm["ptx"] == k.asm["ptx"]


def test_the_compiled_kernel_pickles_on_its_own(triton, generated, contract, cache):
    k = contract.compile_case(triton, generated, "triton_red_fused_sum_3")
    old = contract.prepare_for_pickle(k.src.fn)
    try:
        copy = pickle.loads(pickle.dumps(k))
    finally:
        contract.restore_after_unpickle(k.src.fn, old)
    assert copy.metadata == k.metadata and copy.asm["ptx"] == k.asm["ptx"]
    copy._init_handles()
    assert copy.n_regs == k._compiled.n_regs


def test_the_kernel_crosses_between_processes(cache, tmp_path):
    """A worker process compiles and pickles; another process, which never imports the kernel's module,
    unpickles it and _init_handles() rebuilds it from the kernel cache."""
    worker = ("import pickle, sys; sys.path.insert(0, %r)\n"
              "import tessera.compat; tessera.compat.install(process_wide=True)\n"
              "import triton\n"
              "from inductor_style import generated, contract\n"
              "k = contract.compile_case(triton, generated, 'triton_per_fused_native_layer_norm_1')\n"
              "old = contract.prepare_for_pickle(k.src.fn)\n"
              "open(%r, 'wb').write(pickle.dumps(contract.CompileResult(k)))\n"
              "print(k.hash)\n" % (HERE, str(tmp_path / "kernel.pickle")))
    parent = ("import pickle, sys; sys.path.insert(0, %r)\n"
              "import tessera.compat; tessera.compat.install(process_wide=True)\n"
              "k = pickle.loads(open(%r, 'rb').read()).kernel\n"
              "assert 'inductor_style.generated' not in sys.modules\n"
              "k._init_handles()\n"
              "print(k.hash, k._compiled._h.from_cache, k.src.fn.arg_names[-1], k.packed_metadata[0], k.n_regs > 0)\n"
              % (HERE, str(tmp_path / "kernel.pickle")))
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    env.pop("TESSERA_AS_TRITON", None)
    outputs = []
    for code in (worker, parent):
        proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc.stdout.split())
    assert outputs[1] == [outputs[0][0], "True", "XBLOCK", "4", "True"]
