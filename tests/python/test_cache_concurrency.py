"""Many processes and threads compiling overlapping kernels into one cache
directory at once (no GPU: the entries hold PTX). Afterwards every entry is
intact, there is exactly one per distinct kernel, no temporary file is left,
and every process got the same PTX for the same kernel as every other."""
import json
import os
import subprocess
import sys
import time

from conftest import CLI, ROOT

WORKER = r"""
import hashlib, json, random, sys, threading, time
sys.path[:0] = [ROOT + "/python", ROOT]
import tessera
from kernels.vector_add import add_kernel

SIG = "*fp32:16,*fp32:16,*fp32:16,i32"
variants = [(block, warps) for block in (64, 128, 256, 512, 1024, 2048) for warps in (4, 8)]
rng = random.Random(SEED)
results, errors = {}, []

def work(t):
    order = rng.sample(variants, 6)  # an overlapping subset, in a random order
    for block, warps in order:
        try:
            k = tessera.compile(add_kernel, signature=SIG, constexprs={"BLOCK_SIZE": block}, num_warps=warps)
            results[f"{block}/{warps}"] = hashlib.sha256(k.asm["ptx"].encode()).hexdigest()
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

while time.time() < START:  # every process starts compiling at the same moment
    time.sleep(0.001)
threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps({"results": results, "errors": errors, "stats": tessera._C.cache_stats()}))
"""


def run_workers(cache, processes, threads, extra_env=None):
    env = dict(os.environ, TESSERA_CACHE_DIR=str(cache), **(extra_env or {}))
    start = time.time() + 3.0
    procs = []
    for i in range(processes):
        code = (f"ROOT = {str(ROOT)!r}; SEED = {i}; THREADS = {threads}; START = {start}\n" + WORKER)
        procs.append(subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    outputs = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        assert "is corrupt" not in err and "cannot write" not in err, err
        outputs.append(json.loads(out.strip().splitlines()[-1]))
    return outputs


def check_directory(cache):
    verify = subprocess.run([str(CLI), "cache", "verify"], env=dict(os.environ, TESSERA_CACHE_DIR=str(cache)),
                            capture_output=True, text=True, timeout=120)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    leftovers = [p for p in cache.rglob("*") if ".tmp." in p.name]
    assert not leftovers, leftovers


def test_16_processes_by_4_threads_share_one_cache(tmp_path):
    cache = tmp_path / "cache"
    outputs = run_workers(cache, processes=16, threads=4)
    ptx = {}
    for out in outputs:
        assert not out["errors"], out["errors"]
        for kernel, digest in out["results"].items():
            assert ptx.setdefault(kernel, digest) == digest, f"two processes got different PTX for {kernel}"
    check_directory(cache)
    entries = list((cache / "kernels").rglob("*.tsc"))
    assert len(entries) == len(ptx), "one entry per distinct kernel"
    hits = sum(o["stats"]["hits"] for o in outputs)
    assert hits > 0, "no process found another's entry"
    # The running total the cap is kept by (updated under a flock): never below the bytes there,
    # or the cap would not hold. (Two processes storing one key at once may both count it.)
    on_disk = sum(p.stat().st_size for p in (cache / "kernels").rglob("*") if p.is_file())
    assert int((cache / "kernels.usage").read_text()) >= on_disk


def test_concurrent_compiles_with_eviction_stay_valid_and_under_the_cap(tmp_path):
    cache = tmp_path / "cache"
    cap = 16 * 1024  # a few entries: processes evict each other's entries while others read them
    outputs = run_workers(cache, processes=8, threads=2, extra_env={"TESSERA_CACHE_MAX_BYTES": str(cap)})
    for out in outputs:
        assert not out["errors"], out["errors"]
    check_directory(cache)
    total = sum(p.stat().st_size for p in (cache / "kernels").rglob("*") if p.is_file())
    assert total <= cap


WRITER = r"""
import random, sys
sys.path[:0] = [ROOT + "/python", ROOT]
import tessera
rng = random.Random(SEED)
for i in range(300):  # the same few files, replaced with bytes of another size each time
    name = rng.choice("abc")
    assert tessera._C.cache_write(f"{DIR}/kernels/{name[0]}0/{name}.src", b"x" * rng.randrange(1, 5000))
"""


def test_concurrent_replacements_of_different_sizes_keep_the_total_exact(tmp_path):
    # Each writer's stat of the size it replaces is taken under the total's lock; taken before it
    # (as it once was), two writers replacing one file both subtracted the same old size.
    cache = tmp_path / "cache"
    env = dict(os.environ, TESSERA_CACHE_DIR=str(cache))
    procs = [subprocess.Popen([sys.executable, "-c", f"ROOT = {str(ROOT)!r}; SEED = {i}; DIR = {str(cache)!r}\n" + WRITER],
                              env=env, stderr=subprocess.PIPE, text=True) for i in range(8)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    on_disk = sum(p.stat().st_size for p in (cache / "kernels").rglob("*") if p.is_file())
    assert int((cache / "kernels.usage").read_text()) == on_disk


PRELUDE_WORKER = r"""
import hashlib, sys, threading
sys.path[:0] = [ROOT + "/python"]
import tessera
KERNEL = '''import tessera
import tessera.language as tl


@tessera.jit
def uses_prelude(x_ptr, y_ptr, B: tl.constexpr):
    o = tl.arange(0, B)
    x = tl.load(x_ptr + o)
    tl.store(y_ptr + o, tl.softmax(tl.sigmoid(x)) + tl.sum(x, axis=0) + tl.argmax(x, axis=0).to(tl.float32))
'''
FILE = TMP + "/uses_prelude.py"
open(FILE, "w").write(KERNEL)
def ptx(block):
    k = tessera.compile(FILE, "*fp32:16,*fp32:16", {"B": block}, target="sm_90a", kernel="uses_prelude")
    return hashlib.sha256(k.asm["ptx"].encode()).hexdigest()
results = {}
def work(t):
    results[t] = [ptx(b) for b in (64, 128, 256)]
threads = [threading.Thread(target=work, args=(t,)) for t in range(6)]
for t in threads: t.start()
for t in threads: t.join()
alone = [ptx(b) for b in (64, 128, 256)]
assert all(r == alone for r in results.values()), results
print("ok", len(set(alone)))
"""


def test_threads_share_the_prelude_parsed_once(tmp_path):
    """The language prelude's AST is parsed once a process and read by every compile after that
    (dsl/BuiltinsLanguage.cpp): six threads compiling prelude functions (softmax, sigmoid, sum,
    argmax) at once, in a new process, each get the PTX a lone compile gets."""
    env = {**os.environ, "TESSERA_CACHE": "off"}
    code = f"ROOT = {str(ROOT)!r}; TMP = {str(tmp_path)!r}\n" + PRELUDE_WORKER
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["ok", "3"]
