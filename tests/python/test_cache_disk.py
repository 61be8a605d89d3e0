"""The disk kernel cache from Python and the CLI, without a GPU (entries then
hold PTX and metadata; cubins join them on a GPU, see tests/gpu/test_cache_autotune.py):
hits skip the compiler, the key ignores the source's path, corrupt entries are
rebuilt, an unwritable directory warns once, the cap holds, stages are kept on
request, and the launch path's two argument passes build the same key."""
import os
import subprocess
import sys

import pytest

from conftest import CLI, ROOT

sys.path.insert(0, str(ROOT))

import tessera  # noqa: E402
from kernels.vector_add import add_kernel  # noqa: E402

SIG = "*fp32:16,*fp32:16,*fp32:16,i32"


def C():
    return tessera._C


def compile_add(block=1024, num_warps=4, target="sm_90a"):
    return tessera.compile(add_kernel, signature=SIG, constexprs={"BLOCK_SIZE": block}, num_warps=num_warps,
                           target=target)


def entries(d):
    return sorted(p for p in (d / "kernels").rglob("*.tsc"))


def test_second_compile_is_a_hit_with_the_same_ptx(cache):
    before = C().cache_stats()
    first = compile_add()
    assert not first._h.from_cache
    assert len(entries(cache)) == 1
    second = compile_add()
    after = C().cache_stats()
    assert second._h.from_cache
    assert after["hits"] == before["hits"] + 1 and after["stores"] == before["stores"] + 1
    assert second.asm["ptx"] == first.asm["ptx"]
    assert second.metadata.shared == first.metadata.shared and second.metadata.num_warps == 4
    # The other stages are compiled again on request (the cache keeps only the PTX).
    assert second.asm["ir"] == first.asm["ir"] and "add_kernel" in second.asm["llvm"]


def test_each_input_has_its_own_entry(cache):
    compile_add()
    compile_add(block=512)
    compile_add(num_warps=8)
    compile_add(target="sm_80")
    assert len(entries(cache)) == 4
    listed = {(e["entry"]["kernel"], e["entry"]["arch"], e["entry"]["num_warps"]) for e in C().cache_list()}
    assert listed == {("add_kernel", "sm_90a", 4), ("add_kernel", "sm_90a", 8), ("add_kernel", "sm_80", 4)}


def test_the_key_is_the_source_text_not_its_path_or_line(cache, tmp_path):
    text = (ROOT / "kernels" / "vector_add.py").read_text()
    args = ("add_kernel", SIG, {"BLOCK_SIZE": 256}, 4, 3, "sm_90a")
    a = C().compile(text, "/somewhere/a.py", 1, *args)
    b = C().compile(text, "/elsewhere/b.py", 7, *args)
    assert not a.from_cache and b.from_cache
    c = C().compile(text + "\n# a comment changes the text\n", "/somewhere/a.py", 1, *args)
    assert not c.from_cache
    assert len(entries(cache)) == 2


def run_python(code, **env):
    """Runs `code` in a new process (its stderr is what C++ printed); returns the CompletedProcess."""
    prelude = f"import sys\nsys.path[:0] = [{str(ROOT / 'python')!r}, {str(ROOT)!r}]\n"
    proc = subprocess.run([sys.executable, "-c", prelude + code], env=dict(os.environ, **env), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc


COMPILE = f"""
import tessera
from kernels.vector_add import add_kernel
k = tessera.compile(add_kernel, signature={SIG!r}, constexprs={{"BLOCK_SIZE": 1024}})
print(k._h.from_cache)
"""


def test_truncated_and_bit_flipped_entries_are_reported_once_and_rebuilt(cache):
    good = compile_add().asm["ptx"]
    (path,) = entries(cache)
    data = path.read_bytes()
    for damage, why in ((data[: len(data) // 2], "truncated"), (data[:100] + bytes([data[100] ^ 0x10]) + data[101:],
                                                              "checksum mismatch")):
        path.write_bytes(damage)
        proc = run_python(COMPILE + COMPILE)  # the second compile in the process finds the rebuilt entry
        assert proc.stdout.split() == ["False", "True"]
        assert proc.stderr.count("is corrupt") == 1 and why in proc.stderr and str(path) in proc.stderr, proc.stderr
        assert C().cache_decode(path.read_bytes())["ptx"] == good
    # Reported once per entry and process: the same entry broken twice in one process.
    path.write_bytes(data[:10])
    code = COMPILE + f"open({str(path)!r}, 'wb').write(b'xx')\n" + COMPILE
    proc = run_python(code)
    assert proc.stdout.split() == ["False", "False"] and proc.stderr.count("is corrupt") == 1, proc.stderr


def test_an_unwritable_directory_warns_once_and_compiles(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("x")
    code = f"""
import sys
sys.path[:0] = [{str(ROOT / 'python')!r}, {str(ROOT)!r}]
import tessera
from kernels.vector_add import add_kernel
for block in (128, 256, 128):
    k = tessera.compile(add_kernel, signature={SIG!r}, constexprs={{"BLOCK_SIZE": block}})
    assert ".entry add_kernel" in k.asm["ptx"] and not k._h.from_cache
print("stats", tessera._C.cache_stats())
"""
    env = dict(os.environ, TESSERA_CACHE_DIR=str(blocker / "cache"))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("tessera: warning: cannot write to the kernel cache") == 1, proc.stderr
    assert "compiling without caching" in proc.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_directory_warns_once(cache):
    cache.mkdir()
    cache.chmod(0o555)
    try:
        proc = subprocess.run([sys.executable, "-c", f"""
import sys
sys.path[:0] = [{str(ROOT / 'python')!r}, {str(ROOT)!r}]
import tessera
from kernels.vector_add import add_kernel
for b in (64, 128):
    tessera.compile(add_kernel, signature={SIG!r}, constexprs={{"BLOCK_SIZE": b}})
"""], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr.count("cannot write to the kernel cache") == 1, proc.stderr
    finally:
        cache.chmod(0o755)


def test_eviction_keeps_the_cache_under_its_cap(cache, monkeypatch):
    # Entries of one size: BLOCK_SIZE changes the PTX's length, arch and num_warps hardly do.
    variants = [(arch, w) for w in (4, 8) for arch in ("sm_80", "sm_86", "sm_89", "sm_90", "sm_90a")]
    compile_add(block=256, target="sm_90a", num_warps=8)
    one_entry = max(p.stat().st_size for p in entries(cache))
    C().cache_clear()
    cap = int(3.5 * one_entry)
    monkeypatch.setenv("TESSERA_CACHE_MAX_BYTES", str(cap))
    for arch, warps in variants:
        compile_add(block=256, target=arch, num_warps=warps)
        assert C().cache_usage()["bytes"] <= cap
    assert C().cache_usage()["entries"] == 3
    last = variants[-1]
    assert compile_add(block=256, target=last[0], num_warps=last[1])._h.from_cache  # the newest survive
    assert not compile_add(block=256, target="sm_80", num_warps=4)._h.from_cache  # the oldest went first


def test_keep_stages_writes_them_next_to_the_entry(cache, monkeypatch):
    monkeypatch.setenv("TESSERA_KEEP_STAGES", "1")
    compile_add()
    (path,) = entries(cache)
    stem = str(path)[: -len(".tsc")]
    for suffix, needle in ((".ir", "add_kernel"), (".ir-opt", "add_kernel"), (".ll", "define"), (".ptx", ".entry")):
        assert needle in open(stem + suffix).read(), suffix
    hit = compile_add()
    assert hit._h.from_cache and "add_kernel" in hit.asm["ir"]


def test_cache_off_and_dump_ir_store_nothing(cache, monkeypatch):
    monkeypatch.setenv("TESSERA_CACHE", "off")
    compile_add()
    assert not cache.exists()
    monkeypatch.delenv("TESSERA_CACHE")
    monkeypatch.setenv("TESSERA_DUMP_IR", "1")
    compile_add()  # the user wants the dumps: no cache
    assert not cache.exists() or not entries(cache)
    # Whenever the passes dump (any value but "0", compiler/support/Environment.h), the cache
    # is bypassed: one rule for both.
    monkeypatch.setenv("TESSERA_DUMP_IR", "off")
    compile_add()
    assert not cache.exists() or not entries(cache)


def test_the_cli_lists_verifies_and_clears(cache):
    compile_add()
    compile_add(block=512)
    env = dict(os.environ, TESSERA_CACHE_DIR=str(cache))

    def cli(*args):
        return subprocess.run([str(CLI), *args], env=env, capture_output=True, text=True, timeout=60)
    out = cli("cache", "info")
    assert out.returncode == 0 and str(cache) in out.stdout and "2 entries" in out.stdout, out.stdout + out.stderr
    out = cli("cache", "list")
    assert out.stdout.count("add_kernel") == 2 and "(ptx only)" in out.stdout
    assert cli("cache", "verify").returncode == 0
    (victim,) = entries(cache)[:1]
    victim.write_bytes(victim.read_bytes()[:-3])
    out = cli("cache", "verify")
    assert out.returncode == 1 and "CORRUPT (truncated" in out.stdout
    out = cli("cache", "clear")
    assert out.returncode == 0 and "removed 2 files" in out.stdout
    assert not entries(cache)


def test_entry_format_round_trips_through_the_binding():
    entry = {"key": "k\n", "kernel": "add_kernel", "arch": "sm_90a", "signature": "*f32:16,i32", "num_warps": 8,
             "num_stages": 2, "shared": 1024, "ptx": ".version 8.0\n", "cubins": {"sm_90/cuda13000": b"\x7fELF\x00\x01"}}
    data = C().cache_encode(entry)
    assert C().cache_decode(data) == entry
    with pytest.raises(ValueError, match="truncated"):
        C().cache_decode(data[:-1])
    flipped = bytearray(data)
    flipped[40] ^= 1
    with pytest.raises(ValueError, match="checksum mismatch"):
        C().cache_decode(bytes(flipped))


class CudaArray:
    def __init__(self, ptr, typestr="<f4"):
        self.__cuda_array_interface__ = {"data": (ptr, False), "typestr": typestr, "shape": (64,), "strides": None,
                                         "version": 3}


class FakeTensor:
    class D:
        type, index = "cuda", 0

    class T:
        def __str__(self):
            return "torch.bfloat16"

    def __init__(self, ptr):
        self.p, self.device, self.dtype = ptr, FakeTensor.D(), FakeTensor.T()

    def data_ptr(self):
        return self.p


@pytest.mark.parametrize("args,kwargs", [
    ((CudaArray(1 << 20), CudaArray(1 << 20), CudaArray(1 << 20), 1000), {"BLOCK_SIZE": 1024}),
    ((CudaArray(1 << 20), CudaArray(8), CudaArray(1 << 20, "<f2"), 1), {"BLOCK_SIZE": 64, "num_warps": 8}),
    ((FakeTensor(256), FakeTensor(260), FakeTensor(512), 2 ** 40), {"BLOCK_SIZE": True}),
    ((CudaArray(16), CudaArray(16), CudaArray(16), 32), {"BLOCK_SIZE": 2.5, "num_stages": 2}),
    ((CudaArray(16), CudaArray(16), CudaArray(16), -7), {"BLOCK_SIZE": "s"}),
    ((CudaArray(16), CudaArray(16), CudaArray(16), 2 ** 63 + 5), {"BLOCK_SIZE": None}),
])
def test_the_fast_and_full_argument_passes_agree(args, kwargs):
    fast, full = add_kernel._get_handle()._launch_keys(args, kwargs)
    assert fast == full


TorchLike = type("Tensor", (), {
    "__module__": "torch",  # what the launch path's torch fast path keys on
    "is_cuda": property(lambda self: self._cuda),
    "dtype": property(lambda self: FakeTensor.T()),
    "device": property(lambda self: FakeTensor.D() if self._cuda else type("D", (), {"type": "cpu", "index": None})()),
    "data_ptr": lambda self: 4096,
})


def torch_like(cuda):
    t = TorchLike()
    t._cuda = cuda
    return t


def test_the_torch_fast_path_defers_to_the_general_one_for_errors():
    with pytest.raises(TypeError, match="argument 'x_ptr' is a CPU tensor"):
        add_kernel[(1,)](torch_like(False), CudaArray(16), CudaArray(16), 4, BLOCK_SIZE=4)
    if not tessera.driver_available():  # a CUDA "tensor" needs the device count: the driver
        with pytest.raises(tessera.DriverNotFoundError):
            add_kernel[(1,)](torch_like(True), CudaArray(16), CudaArray(16), 4, BLOCK_SIZE=4)


def test_a_new_process_builds_the_jit_handle_without_reducing_the_source(cache):
    # The reduction and the search for called constexprs live in _source.py and _compose.py: a warm
    # start does not even import them (nor ast or inspect).
    code = """
from kernels.softmax import softmax_kernel as k
h = k._get_handle()
calls = sorted(k._function_params())
print(len(h.source), [p[0] for p in h.params], calls)
print(sorted(m for m in ("tessera._source", "tessera._compose", "ast", "inspect") if m in sys.modules))
"""
    first = run_python(code).stdout.splitlines()
    second = run_python(code).stdout.splitlines()
    assert first[0] == second[0] and "BLOCK_SIZE" in second[0] and "['EPILOGUE', 'PROLOGUE']" in second[0]
    assert first[1] != "[]", "the cold process did not reduce the source: the test shows nothing"
    assert second[1] == "[]", "a warm start imported the source reduction: " + second[1]
    assert list((cache / "kernels").rglob("*.src"))


def test_a_new_process_remembers_which_constexprs_the_kernel_calls(cache, tmp_path):
    """Which constexpr parameters receive @jit functions (_compose.callable_constexpr_params) is
    remembered with the source entry; a change to any file it read (here a helper's, in another
    module) means finding out again."""
    pkg = tmp_path / "mods"
    pkg.mkdir()
    helper = pkg / "helpers.py"
    helper.write_text("import tessera\n\n@tessera.jit\ndef apply(x, F):\n    return x\n")
    (pkg / "kern.py").write_text(
        "import tessera\nimport tessera.language as tl\nfrom helpers import apply\n\n"
        "@tessera.jit\ndef k(x_ptr, F: tl.constexpr, G: tl.constexpr):\n"
        "    x = tl.load(x_ptr)\n    tl.store(x_ptr, apply(G(x), F))\n")
    code = f"""
sys.path.insert(0, {str(pkg)!r})
import tessera._compose as c
if FORBID:
    def fail(*a, **k):
        raise AssertionError("inspected the source again")
    c.callable_constexpr_params = fail
from kern import k
print(sorted(k._function_params()))
"""
    assert run_python("FORBID = False\n" + code).stdout.strip() == "['G']"
    assert run_python("FORBID = True\n" + code).stdout.strip() == "['G']"  # remembered
    assert list((cache / "kernels").rglob("*.src"))
    helper.write_text("import tessera\n\n@tessera.jit\ndef apply(x, F):\n    return F(x)\n")  # now calls F
    assert run_python("FORBID = False\n" + code).stdout.strip() == "['F', 'G']"
