"""kernels/attention.py compiles, with the launch configurations of
tessera.kernels.attention_config, to PTX that ptxas accepts for sm_80 and sm_90a:
every dot on tensor cores (mma.sync m16n8k16 + ldmatrix), no register spills,
at most 48 KiB of shared memory.
The signatures are what a launch from torch specialises to (16-byte aligned
pointers, strides multiples of 16, the head-dim stride equal to 1); one more
case compiles with no hints at all (any strides)."""
import re
import inspect
import subprocess

import pytest

import tessera
import tessera.kernels as tk
from conftest import PTXAS, ROOT

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")

KERNEL_FILE = ROOT / "kernels" / "attention.py"
FP32_POINTERS = {"LSE", "DELTA", "DQ_ACC"}
INT_SCALARS = {"H", "H_KV", "N_Q", "N_KV"}


def params(kernel):
    from tessera.kernels import _files
    fn = getattr(_files.load("attention"), kernel).fn
    return [(name, p.annotation) for name, p in inspect.signature(fn).parameters.items()]


def signature(kernel, dtype, hints=True):
    """The signature a torch launch specialises to (hints=False: none of the divisibility facts)."""
    out = []
    for name, annotation in params(kernel):
        if "constexpr" in str(annotation):
            continue
        if name.startswith("stride_"):
            entry = ("i32:1" if name.endswith("d") else "i32:16") if hints else "i32"
        elif name in INT_SCALARS:
            entry = "i32"
        elif name == "sm_scale":
            entry = "fp32"
        else:
            entry = ("*fp32" if name in FP32_POINTERS else f"*{dtype}") + (":16" if hints else "")
        out.append(entry)
    return ",".join(out)


def launch_config(kernel, D, causal, arch="sm_80"):
    c = tk.attention_config(D, causal, wgmma=arch == "sm_90a")
    if kernel == "attn_fwd_kernel":
        return {"BLOCK_M": c["BLOCK_M"], "BLOCK_N": c["BLOCK_N"]}, c["num_warps"]
    if kernel == "attn_bwd_dkdv_kernel":
        return {"BLOCK_M": c["DKDV_BLOCK_M"], "BLOCK_N": c["DKDV_BLOCK_N"]}, c["dkdv_num_warps"]
    return {"BLOCK_M": c["DQ_BLOCK_M"], "BLOCK_N": c["DQ_BLOCK_N"]}, c["dq_num_warps"]


def ptxas(ptx, arch, tmp_path):
    src = tmp_path / "k.ptx"
    src.write_text(ptx)
    proc = subprocess.run([str(PTXAS), f"-arch={arch}", "-v", str(src), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stderr


def compile_kernel(kernel, D, causal, dtype, arch, hints=True):
    constexprs, warps = launch_config(kernel, D, causal, arch)
    constexprs.update(HEAD_DIM=D, CAUSAL=causal)
    # What the wrapper launches with on a GPU of that arch.
    config = tk.attention_config(D, causal, wgmma=arch == "sm_90a")
    stages = config["num_stages" if kernel == "attn_fwd_kernel" else "bwd_num_stages"]
    maxnreg = config["maxnreg"] if kernel == "attn_fwd_kernel" else None
    return tessera.compile(str(KERNEL_FILE), kernel=kernel, signature=signature(kernel, dtype, hints),
                           constexprs=constexprs, num_warps=warps, num_stages=stages, target=arch, maxnreg=maxnreg)


CASES = [(arch, dtype) for arch in ("sm_80", "sm_90a") for dtype in ("fp16", "bf16")]


@pytest.mark.parametrize("arch, dtype", CASES, ids=[f"{a}-{t}" for a, t in CASES])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("kernel", ["attn_fwd_kernel", "attn_bwd_dkdv_kernel", "attn_bwd_dq_kernel"])
def test_kernel_uses_tensor_cores_without_spills(kernel, D, causal, arch, dtype, tmp_path):
    assert PTXAS.exists(), f"ptxas not found at {PTXAS}"
    compiled = compile_kernel(kernel, D, causal, dtype, arch)
    # The pipelined K/V ring (num_stages buffers) plus scratch fits what a
    # block may opt in to (the runtime does): 163 KiB on sm_80, 227 KiB on sm_90.
    assert compiled.metadata.shared <= (227 if arch == "sm_90a" else 163) * 1024, compiled.metadata.shared
    ptx = compiled.asm["ptx"]
    ty = "f16" if dtype == "fp16" else "bf16"
    if "wgmma.mma_async" in ptx:  # sm_90a, dots whose 64-row slabs fit the warpgroups
        assert arch == "sm_90a" and f"f32.{ty}.{ty}" in ptx
    else:
        assert f"mma.sync.aligned.m16n8k16.row.col.f32.{ty}.{ty}.f32" in ptx
        assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx
    # two dots in the forward, three in each backward kernel, each a dot of >= 16 x 16 x 16
    assert ptx.count("mma.sync.aligned") + ptx.count("wgmma.mma_async") >= (2 if kernel == "attn_fwd_kernel" else 3) * 2
    info = ptxas(ptx, arch, tmp_path)
    spilled = int(re.search(r"(\d+) bytes spill stores", info).group(1))
    if arch == "sm_90a" and kernel == "attn_bwd_dkdv_kernel" and D == 128:
        # HOPPER_BACKWARD's measured-fastest dK/dV blocks spill (two 64 x 128 fp32
        # accumulators a warpgroup); keep it bounded.
        assert spilled <= 512, info
    elif arch == "sm_90a" and kernel == "attn_fwd_kernel" and (D == 128 or causal):
        # D = 128: 128 x 128 blocks at 255 registers; D = 64 causal: capped at 128 (two key
        # sweeps). ptxas parks a few values across the key loops, never inside one
        # (test_forward_key_loops_do_not_spill): at D = 64 causal 5 registers, stored once
        # before the loops and loaded once after them.
        assert spilled <= 24, info
    else:
        assert "0 bytes spill stores" in info and "0 bytes spill loads" in info, info
    if kernel == "attn_fwd_kernel":
        # P's register fragments are packed before the wgmma fence: ptxas injects no
        # warpgroup arrives between the wgmmas (C7519) and serialises none (C7514).
        assert "C7519" not in info and "C7514" not in info, info


@pytest.mark.parametrize("D", [64, 128])
def test_preprocess_kernel(D, tmp_path):
    k = tessera.compile(str(KERNEL_FILE), kernel="attn_bwd_preprocess_kernel",
                        signature=signature("attn_bwd_preprocess_kernel", "bf16"),
                        constexprs={"HEAD_DIM": D, "BLOCK_M": 64}, num_warps=4, target="sm_90a")
    ptxas(k.asm["ptx"], "sm_90a", tmp_path)


@pytest.mark.parametrize("kernel", ["attn_fwd_kernel", "attn_bwd_dkdv_kernel", "attn_bwd_dq_kernel"])
def test_kernels_compile_without_stride_hints(kernel, tmp_path):
    """Arbitrary strides (no :16 / :1 facts), e.g. a sliced packed QKV buffer."""
    ptx = compile_kernel(kernel, 64, True, "fp16", "sm_90a", hints=False).asm["ptx"]
    assert "mma.sync.aligned.m16n8k16" in ptx or "wgmma.mma_async" in ptx
    ptxas(ptx, "sm_90a", tmp_path)


def key_loops(ptx):
    """The bodies (lists of lines) of the innermost PTX loops that contain mma.sync."""
    import re
    lines = ptx.splitlines()
    labels = {m.group(1): i for i, l in enumerate(lines) if (m := re.match(r"^(\$L__BB\d+_\d+):", l.strip()))}
    loops = []
    for i, l in enumerate(lines):
        m = re.search(r"\bbra(?:\.uni)?\s+(\$L__BB\d+_\d+);", l)
        if m and m.group(1) in labels and labels[m.group(1)] < i:
            body = lines[labels[m.group(1)]:i + 1]
            if any("mma.sync" in b or "wgmma.mma_async" in b for b in body):
                loops.append((labels[m.group(1)], i, body))
    return [b for lo, hi, b in loops if not any(lo <= l2 and h2 <= hi and (l2, h2) != (lo, hi) for l2, h2, _ in loops)]


@pytest.mark.parametrize("arch, wgmma", [("sm_80", "1"), ("sm_90a", "0"), ("sm_90a", "1")],
                         ids=["sm_80", "sm_90a-mma.sync", "sm_90a-wgmma"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("D, BLOCK_M, BLOCK_N", [(64, 128, 64), (128, 128, 32)])
def test_forward_key_loop_stays_in_registers(D, BLOCK_M, BLOCK_N, causal, arch, wgmma, tmp_path, monkeypatch):
    """With all 8 warps along the query rows (accelerate-dot's chain warps), a key step of the
    forward has S, P, the row statistics and the accumulator in the mma registers
    (propagate-mma-layout) and P feeds the second dot from registers (MmaDot.cpp): its only
    barrier is the cp.async pipeline's, and it touches shared memory only through
    ldmatrix and cp.async (was 9 barriers and ~50 shared stores and loads a step). On sm_90a
    with wgmma the same holds, P being wgmma's register operand A (WgmmaDot.cpp)."""
    monkeypatch.setenv("TESSERA_WGMMA", wgmma)
    k = tessera.compile(str(KERNEL_FILE), kernel="attn_fwd_kernel", signature=signature("attn_fwd_kernel", "bf16"),
                        constexprs={"HEAD_DIM": D, "BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "CAUSAL": causal},
                        num_warps=8, num_stages=2, target=arch)
    ptx = k.asm["ptx"]
    loops = key_loops(ptx)
    assert len(loops) == 2  # the key blocks that need no mask, then the masked ones
    for body in loops:
        text = "\n".join(body)
        assert text.count("bar.sync") == 1, text
        assert "st.shared" not in text and "ld.shared" not in text
        if arch == "sm_90a" and wgmma == "1":
            # per warpgroup one 64-row slab: S = Q K^T in D/16 k-steps, P V in BLOCK_N/16 (A from registers)
            assert text.count("wgmma.mma_async") == D // 16 + BLOCK_N // 16, text
            assert len(re.findall(r"wgmma.mma_async[^\n]*\}, \{", text)) == BLOCK_N // 16
        else:
            assert text.count("mma.sync") == 2 * BLOCK_M * BLOCK_N * D // (16 * 8 * 16) // 8
    info = ptxas(ptx, arch, tmp_path)
    assert "0 bytes spill stores" in info and "0 bytes spill loads" in info, info


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("D", [64, 128])
def test_forward_wgmma_p_v_runs_into_the_next_key_step(D, causal, tmp_path):
    """sm_90a with the wrapper's 3 stages: P @ V is an async dot (the pipeline pass), its
    accumulator waited for (dot_wait) only where the next step rescales it, after S = Q K^T has
    been waited for, which drained it already: in the PTX loop exactly one wgmma.wait_group
    (S's) per key step; P is converted to bf16 in pairs (cvt.rn.bf16x2.f32) that are
    the wgmma A registers as they are, and exp2 is ex2.approx.ftz."""
    k = tessera.compile(str(KERNEL_FILE), kernel="attn_fwd_kernel", signature=signature("attn_fwd_kernel", "bf16"),
                        constexprs={"HEAD_DIM": D, "BLOCK_M": 128, "BLOCK_N": 64, "CAUSAL": causal},
                        num_warps=8, num_stages=3, target="sm_90a")
    ir = k.asm["ir-opt"]
    loop = ir[ir.index("= for "):]
    loop = loop[:loop.index("yield")]
    first_dot, waited, second_dot = loop.index("= dot "), loop.index("dot_wait"), loop.rindex("= dot ")
    assert first_dot < waited < second_dot, loop
    assert "async = 1" in loop[second_dot:loop.index("\n", second_dot)]
    assert "dot_wait" in ir[ir.index("yield"):]  # and after the loop
    for body in key_loops(k.asm["ptx"]):
        text = "\n".join(body)
        commits = [m.start() for m in re.finditer("wgmma.commit_group", text)]
        assert len(commits) == 2, text
        between = text[commits[0]:commits[1]]
        # S's own wait drains P @ V of the step before too: the dot_wait passes the accumulator
        # through without a second wait, and P @ V's commit needs no wait_group 1 after it.
        assert between.count("wgmma.wait_group.sync.aligned 0") == 1, between
        assert "wgmma group complete already" in between
        assert "wgmma.wait_group" not in text[commits[1]:]
        assert text.count("cvt.rn.bf16x2.f32") == 128 * 64 // 256 // 2  # P: 32 registers a thread, paired
        assert "cvt.rn.bf16.f32" not in text
        assert "ex2.approx.ftz.f32" in text and "ex2.approx.f32" not in text
    info = ptxas(k.asm["ptx"], "sm_90a", tmp_path)
    assert "0 bytes spill stores" in info and "C7514" not in info and "C7519" not in info, info


def sass_key_loop(sass_text):
    """The instructions (opcode text) of the largest backward-branch loop of a SASS listing."""
    ins = [(int(m.group(1), 16), m.group(2).strip())
           for m in re.finditer(r"/\*([0-9a-f]{4,})\*/\s+([^;]*);", sass_text)]
    best = None
    for addr, text in ins:
        m = re.search(r"\bBRA\s+(?:`\(\.L_x_\d+\)\s*)?0x([0-9a-f]+)", text)
        if m and int(m.group(1), 16) < addr and (best is None or addr - int(m.group(1), 16) > best[1] - best[0]):
            best = (int(m.group(1), 16), addr)
    assert best, "no loop in the SASS"
    return [t for a, t in ins if best[0] <= a <= best[1]]


def sass_loops(sass_text):
    """Every backward-branch loop of a SASS listing, as lists of instruction texts."""
    ins = [(int(m.group(1), 16), m.group(2).strip())
           for m in re.finditer(r"/\*([0-9a-f]{4,})\*/\s+([^;]*);", sass_text)]
    loops = []
    for addr, text in ins:
        m = re.search(r"\bBRA\s+(?:`\(\.L_x_\d+\)\s*)?0x([0-9a-f]+)", text)
        if m and int(m.group(1), 16) < addr:
            loops.append([t for a, t in ins if int(m.group(1), 16) <= a <= addr])
    return loops


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("D", [64, 128])
def test_forward_key_loops_do_not_spill(D, causal, tmp_path):
    """D = 128 with HOPPER_FORWARD's 128 x 128 blocks runs at 255 registers, D = 64 capped
    at 128; what ptxas spills (test_kernel_uses_tensor_cores_without_spills bounds it) stays
    outside the key loops: no local-memory access in a loop that issues HGMMAs."""
    from test_vectorized_access import sass
    path = tmp_path / "fwd.ptx"
    path.write_text(compile_kernel("attn_fwd_kernel", D, causal, "bf16", "sm_90a").asm["ptx"])
    loops = [body for body in sass_loops(sass(tmp_path, path)) if any("HGMMA" in t for t in body)]
    assert len(loops) == 2
    for body in loops:
        assert not [t for t in body if re.match(r"(@!?P\w+\s+)?(LDL|STL)", t)], body


@pytest.mark.parametrize("D, BLOCK_N", [(64, 64), (128, 128)])
def test_forward_wgmma_descriptors_are_uniform(D, BLOCK_N, tmp_path):
    """wgmma descriptors (WgmmaDot.cpp): an operand's base is two 32-bit halves joined by
    mov.b64 (the low word its start field), each k-step's descriptor the base plus a constant in
    64 bits, and the warpgroup's slab comes from a warp index read through shfl.sync.idx: ptxas
    keeps the descriptors in uniform registers, so the key step has no R2UR / register moves
    feeding the HGMMAs and no 64-bit shifts (was 8 R2UR, 13 moves and 5 64-bit shift/add pairs a
    step at D = 64), and at most one uniform move per HGMMA (joining the halves for every wgmma
    took a ULEA.HI and two UMOVs each: 31 UMOVs for 16 HGMMAs at D = 128)."""
    from test_vectorized_access import sass
    k = tessera.compile(str(KERNEL_FILE), kernel="attn_fwd_kernel", signature=signature("attn_fwd_kernel", "bf16"),
                        constexprs={"HEAD_DIM": D, "BLOCK_M": 128, "BLOCK_N": BLOCK_N, "CAUSAL": False},
                        num_warps=8, num_stages=3, target="sm_90a")
    ptx = k.asm["ptx"]
    assert "shfl.sync.idx.b32" in ptx
    for body in key_loops(ptx):
        text = "\n".join(body)
        assert "shr.u64" not in text and "bfe.u64" not in text and "and.b64" not in text, text
        assert len(re.findall(r"mov\.b64 \t?%rd\d+, \{%r\d+, %r\d+\}", text)) >= 1, text
    path = tmp_path / "fwd.ptx"
    path.write_text(ptx)
    loop = sass_key_loop(sass(tmp_path, path))
    ops = [re.sub(r"^@!?U?P\w+\s+", "", t).split()[0] for t in loop]
    assert ops.count("HGMMA.64x%dx16.F32.BF16" % D) + ops.count("HGMMA.64x%dx16.F32.BF16" % BLOCK_N) >= D // 16
    assert "R2UR" not in ops, loop
    assert not any(o.startswith("USHF.R.U64") for o in ops), loop
    # (one more allowed: ptxas's allocation varies by one UMOV with the code around the loop; the
    # D = 64 step has 9 UMOVs, 1 MOV in 347 instructions since Q is staged once for both sweeps,
    # was 8, 4 in 353)
    assert ops.count("UMOV") <= sum(o.startswith("HGMMA") for o in ops) + 1, loop


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_forward_key_mask_compares_once_per_16_keys(arch):
    """`offs_n < N_KV` with N_KV divisible by 16 (what a launch with such a length
    specialises to, i32:16) is constant over runs of 16 keys (the axis analysis), so codegen
    evaluates one compare per run a thread holds (LayoutMath's registersSharingRuns): at
    BLOCK_N = 64 a thread's 16 key columns take 4 compares instead of 16. Without the hint
    every column keeps its own."""
    def loop_compares(int_hint):
        sig = signature("attn_fwd_kernel", "bf16").split(",")
        names = [n for n, a in params("attn_fwd_kernel") if "constexpr" not in str(a)]
        sig[names.index("N_KV")] = "i32" + int_hint
        k = tessera.compile(str(KERNEL_FILE), kernel="attn_fwd_kernel", signature=",".join(sig),
                            constexprs={"HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64, "CAUSAL": False},
                            num_warps=8, num_stages=3, target=arch)
        free, masked = key_loops(k.asm["ptx"])
        # Blocks inside N_KV: no mask; what is left is the loop bound and the pipeline's prefetch guard.
        assert len(re.findall(r"setp\.lt\.s32", "\n".join(free))) <= 2
        return len(re.findall(r"setp\.lt\.s32", "\n".join(masked)))
    assert loop_compares(":16") <= loop_compares("") - 12


def test_forward_key_mask_compare_runs_can_be_switched_off(monkeypatch):
    """TESSERA_COMPARE_RUNS=0 (a benchmark A/B switch) keeps one compare per register."""
    def compares():
        k = tessera.compile(str(KERNEL_FILE), kernel="attn_fwd_kernel",
                            signature=signature("attn_fwd_kernel", "bf16").replace("i32,i32,i32,i32,fp32",
                                                                                  "i32,i32,i32,i32:16,fp32"),
                            constexprs={"HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64, "CAUSAL": False},
                            num_warps=8, num_stages=3, target="sm_90a")
        free, masked = key_loops(k.asm["ptx"])
        return len(re.findall(r"setp\.lt\.s32", "\n".join(masked)))
    on = compares()
    monkeypatch.setenv("TESSERA_COMPARE_RUNS", "0")
    monkeypatch.setenv("TESSERA_CACHE", "off")
    assert compares() >= on + 12


@pytest.mark.parametrize("D", [64, 128])
def test_overlapped_step_keeps_the_softmax_between_its_waits(D, tmp_path):
    """OVERLAP on sm_90a: a key step issues S = Q K^T and P V, waits for S only (wait_group
    1), does the softmax, then waits for P V (wait_group 0; compiler/passes/DeferWgmmaWaits).
    In the SASS the two WARPGROUP.DEPBARs still enclose every MUFU.EX2 of the step (ptxas
    would otherwise hoist the second wait to the wgmmas, DeferWgmmaWaits.h), and the carried
    bf16 P needs no PRMT repacking (its pairs go around the loop as 32-bit words)."""
    from test_vectorized_access import sass
    kernel = tessera.compile(str(KERNEL_FILE), kernel="attn_fwd_kernel", signature=signature("attn_fwd_kernel", "bf16"),
                             constexprs={"HEAD_DIM": D, "BLOCK_M": 128, "BLOCK_N": 128, "CAUSAL": False,
                                         "OVERLAP": True}, num_warps=8, num_stages=2, target="sm_90a")
    ptx = kernel.asm["ptx"]
    waits = re.findall(r"wgmma\.wait_group\.sync\.aligned (\d)", ptx)
    assert waits[:2] == ["1", "0"], waits
    first, second = [m.start() for m in re.finditer(r"wgmma\.wait_group\.sync\.aligned", ptx)][:2]
    assert "ex2.approx" in ptx[first:second]
    path = tmp_path / "k.ptx"
    path.write_text(ptx)
    code = sass(tmp_path, path)
    # The loop: from its back-edge target (the second BAR.SYNC: the step's barrier) to the branch back.
    lines = code.splitlines()
    start = [i for i, line in enumerate(lines) if "BAR.SYNC" in line][1]
    end = next(i for i in range(start, len(lines)) if re.search(r"\bBRA\b", lines[i]))
    step = lines[start:end]
    depbars = [i for i, line in enumerate(step) if "WARPGROUP.DEPBAR" in line]
    ex2 = [i for i, line in enumerate(step) if "MUFU.EX2" in line]
    assert len(depbars) == 2 and "0x1" in step[depbars[0]] and "0x0" in step[depbars[1]], [step[i] for i in depbars]
    assert depbars[0] < ex2[0] and ex2[-1] < depbars[1], (depbars, ex2[0], ex2[-1])
    assert not any("PRMT" in line for line in step)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_pingpong_warpgroups_take_turns_around_their_wgmmas(causal, tmp_path):
    """PINGPONG (D = 128, 128 x 128 blocks, 8 warps): in each key loop, each group of HGMMAs
    follows this warpgroup's turn (BAR.SYNC 1 or 2, 256 threads) and is followed by the pass
    to the other (BAR.ARV) before any wait for it (WARPGROUP.DEPBAR), so the other
    warpgroup may issue while this one waits and runs its softmax. Immediate barrier ids:
    ptxas reserves three barriers, not all sixteen."""
    from test_vectorized_access import sass
    k = tessera.compile(str(KERNEL_FILE), kernel="attn_fwd_kernel", signature=signature("attn_fwd_kernel", "bf16"),
                        constexprs={"HEAD_DIM": 128, "CAUSAL": causal, "BLOCK_M": 128, "BLOCK_N": 128,
                                    "PINGPONG": True}, num_warps=8, num_stages=3, target="sm_90a")
    path = tmp_path / "pp.ptx"
    path.write_text(k.asm["ptx"])
    assert "used 3 barriers" in ptxas(k.asm["ptx"], "sm_90a", tmp_path)
    loops = [body for body in sass_loops(sass(tmp_path, path)) if any("HGMMA" in t for t in body)]
    assert len(loops) == 2
    for body in loops:
        kinds = []
        for t in body:
            if "HGMMA" in t:
                if not kinds or kinds[-1] != "mma":
                    kinds.append("mma")
            elif re.search(r"BAR\.SYNC\S* 0x[12], 0x100", t):
                kinds.append("turn")
            elif re.search(r"BAR\.ARV 0x[12], 0x100", t):
                kinds.append("pass")
            elif "WARPGROUP.DEPBAR" in t:
                kinds.append("wait")
        # two warpgroups x (S = Q K^T, then P V): turn, turn (predicated pair), mma, pass, pass
        squeezed = [x for i, x in enumerate(kinds) if i == 0 or x != kinds[i - 1]]
        assert squeezed[:5] == ["turn", "mma", "pass", "wait", "turn"], kinds
        assert squeezed.count("mma") == 2 and squeezed.count("turn") == 2 and squeezed.count("pass") == 2, kinds


def test_pingpong_needs_no_overlap():
    with pytest.raises(tessera.CompilationError, match="OVERLAP and PINGPONG are two schedules"):
        tessera.compile(str(KERNEL_FILE), kernel="attn_fwd_kernel", signature=signature("attn_fwd_kernel", "bf16"),
                        constexprs={"HEAD_DIM": 64, "CAUSAL": False, "BLOCK_M": 128, "BLOCK_N": 64,
                                    "PINGPONG": True, "OVERLAP": True}, num_warps=8, target="sm_90a")


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("D, BLOCK_M, BLOCK_N, warps, maxnreg", [(64, 64, 64, 4, 128), (128, 128, 128, 8, None)])
def test_tma_forward_key_loops_take_k_and_v_from_the_tma_unit(D, BLOCK_M, BLOCK_N, warps, maxnreg, causal, tmp_path):
    """TMA=True: both key sweeps read K and V through the TMA unit (UTMALDG from one elected
    thread, completion on the stage's mbarrier) straight into the wgmma tiles, K's block as the
    K-major B of S = Q K^T: no cp.async (LDGSTS) and no K/V address arithmetic in the key loops,
    no spills, and (D128, one ring) the step is shorter than the cp.async one."""
    from test_vectorized_access import sass
    sig = signature("attn_fwd_kernel", "bf16").split(",")
    sig[1] = sig[2] = f"tensordesc<bf16[{BLOCK_N},{D}]>"
    constexprs = {"HEAD_DIM": D, "BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "CAUSAL": causal}
    compiled = {tma: tessera.compile(str(KERNEL_FILE), kernel="attn_fwd_kernel",
                                     signature=",".join(sig) if tma else signature("attn_fwd_kernel", "bf16"),
                                     constexprs=dict(constexprs, TMA=tma), num_warps=warps, num_stages=3,
                                     target="sm_90a", maxnreg=maxnreg) for tma in (False, True)}
    steps = {}
    for tma, k in compiled.items():
        path = tmp_path / f"fwd{int(tma)}.ptx"
        path.write_text(k.asm["ptx"])
        loops = [body for body in sass_loops(sass(tmp_path, path)) if any("HGMMA" in t for t in body)]
        steps[tma] = min(len(body) for body in loops)
        if tma:
            key_loops = [body for body in loops if any("UTMALDG" in t for t in body)]
            assert len(key_loops) >= 2, loops
            for body in key_loops:
                assert not [t for t in body if "LDGSTS" in t or re.match(r"(@!?P\w+\s+)?(LDL|STL)", t)], body
    # D64: V's own ring (its wait, stage and phase: 303 vs 287) buys a fourth program an SM.
    # D128: 509 against 520 until the cp.async kernel staged Q once for both sweeps (503 since,
    # and no longer 8 bytes spilled): about as long.
    assert steps[True] <= steps[False] * 1.02 or D == 64, steps
    info = ptxas(compiled[True].asm["ptx"], "sm_90a", tmp_path)
    assert "0 bytes spill stores" in info or D == 128 or causal, info


@pytest.mark.parametrize("D, BLOCK_M, BLOCK_N, warps, stages, ahead", [
    (64, 64, 64, 4, 3, {"K": 2, "V": 0}),     # K's ring: the stage S read last step; V's: P V runs on
    (64, 64, 128, 4, 2, {"K": 1, "V": 1}),    # one ring, no async dot: the stage read last step
    (64, 64, 64, 4, 4, {"K": 2, "V": 2}),     # one ring that P V reads: two steps ago
    (128, 128, 128, 8, 3, {"K": 1, "V": 1}),  # two warpgroups: behind the empty mbarriers, as one ring
])
def test_tma_copies_go_under_the_first_dot(D, BLOCK_M, BLOCK_N, warps, stages, ahead):
    """The ring's copies are issued right after S = Q K^T's wgmmas and before S is waited for, so
    the copying warp works while the tensor cores do; at the end of the step it held its
    warpgroup's next wgmma back (D64 +6-9 %, D128 +6-15 %). One warpgroup: behind a barrier.
    Two: behind the stage's "empty" mbarrier, on which every thread arrives at the end of the
    step (a step before the copying warp waits there). How far ahead they go shows in the
    prologue: one copy a block per step ahead."""
    sig = signature("attn_fwd_kernel", "bf16").split(",")
    sig[1] = sig[2] = f"tensordesc<bf16[{BLOCK_N},{D}]>"
    k = tessera.compile(str(KERNEL_FILE), kernel="attn_fwd_kernel", signature=",".join(sig),
                        constexprs={"HEAD_DIM": D, "BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "CAUSAL": False, "TMA": True},
                        num_warps=warps, num_stages=stages, target="sm_90a")
    ir = k.asm["ir-opt"]
    head, loop = ir[:ir.index("for ")], ir[ir.index("for "):]
    head = head[head.rindex("local_alloc : <1x"):]  # the first sweep's prologue, after Q's tile
    assert {name: len(re.findall(rf"async_tma_copy %{name},", head)) for name in "KV"} == ahead
    loop = loop[:loop.index("yield")]
    first_dot = loop.index("= dot ")
    copies = [m.start() for m in re.finditer(r"async_tma_copy", loop)]
    assert len(copies) == 2, loop
    if warps == 4:
        assert "deferred = 1" in loop[first_dot:loop.index("\n", first_dot)], loop  # S is waited for below
        s_wait = loop.index("dot_wait", first_dot)
        assert first_dot < loop.index("barrier", first_dot) < copies[0] < copies[1] < s_wait, loop
        assert "mbarrier_arrive" not in loop
    else:
        wait = loop.index("mbarrier_wait", first_dot)
        assert "{leader = 1}" in loop[wait:loop.index("\n", wait)] and first_dot < wait < copies[0], loop
        assert copies[1] < loop.index("dot_wait", first_dot) < loop.rindex("= dot ") < loop.index("mbarrier_arrive"), loop


@pytest.mark.parametrize("D, BLOCK, warps, stages, v_stages", [(64, 64, 4, 3, 2), (64, 64, 4, 4, 4), (128, 128, 8, 3, 3)])
def test_tma_forward_v_ring_takes_a_stage_fewer_where_it_fits_another_program(D, BLOCK, warps, stages, v_stages):
    """V, read by P V after the softmax, gets its own ring (its own mbarriers, waited for just
    before P V) with a stage fewer where that fits one more program on an SM: 64 x 64 / 4 warps /
    3 stages needs 57 344 bytes of tiles (Q, 3 K, 3 V), exactly a quarter of the SM less the
    driver's 1 KB, so its mbarriers would cost a program (3 instead of 4). 4 stages (3 programs
    either way) and D128 (one program either way) keep one ring."""
    sig = signature("attn_fwd_kernel", "bf16").split(",")
    sig[1] = sig[2] = f"tensordesc<bf16[{BLOCK},{D}]>"
    k = tessera.compile(str(KERNEL_FILE), kernel="attn_fwd_kernel", signature=",".join(sig),
                        constexprs={"HEAD_DIM": D, "BLOCK_M": BLOCK, "BLOCK_N": BLOCK, "CAUSAL": False, "TMA": True},
                        num_warps=warps, num_stages=stages, target="sm_90a", maxnreg=128 if D == 64 else None)
    ir = k.asm["ir-opt"]
    rings = re.findall(rf"local_alloc : <(\d+)x{BLOCK}x{D}xbf16>", ir)
    full = re.findall(r"mbarrier_alloc \{arrivals = (\d+)\} : <(\d+)x1x1xi64>", ir)
    # Q once (both key sweeps read its tile), K and V in each sweep
    assert rings == [str(x) for x in (1, stages, v_stages, stages, v_stages)], rings
    if v_stages == stages:
        assert [a for a, _ in full if a != str(warps * 32)] == ["2", "2"], full  # one ring: K and V land together
    else:
        assert full == [("1", str(stages)), ("1", str(v_stages))] * 2, full
        loop = ir[ir.index("for "):]
        waits = [m.start() for m in re.finditer(r"mbarrier_wait", loop)]
        dots = [m.start() for m in re.finditer(r"= dot ", loop)]
        assert waits[0] < dots[0] < waits[1] < dots[1], "V's wait goes between the two dots"


FUSED_CASES = [(D, causal, mask) for D in (64, 128) for causal in (False, True) for mask in (False, True)]
FUSED_IDS = [f"D{d}-{'causal' if c else 'full'}-{'ragged' if m else 'whole'}" for d, c, m in FUSED_CASES]


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("D, causal, mask_keys", FUSED_CASES, ids=FUSED_IDS)
def test_fused_backward_on_wgmma(D, causal, mask_keys, dtype, tmp_path):
    """attn_bwd_fused_kernel with attention_config's sm_90a blocks: the dots of a step on wgmma
    (at D = 128 dQ = dS K too: 64 query rows on 8 warps split along N, accelerate-dot, since its
    A, dS^T transposed, is staged in shared memory anyway), dQ added from the dot's registers as
    atom.add.v2.f32 (propagate-mma-layout: no conversion through shared memory). D = 128 (two
    128 x 128 fp32 accumulators on 8 warps, S^T and dP^T in flight together) runs at 255
    registers with a few loop-invariant values spilled, never in the unmasked steps' loop;
    D = 64 spills nothing."""
    c = tk.attention_config(D, causal, wgmma=True)
    constexprs = {"HEAD_DIM": D, "BLOCK_M": c["FUSED_BLOCK_M"], "BLOCK_N": c["FUSED_BLOCK_N"], "CAUSAL": causal,
                  "MASK_KEYS": mask_keys}
    k = tessera.compile(str(KERNEL_FILE), kernel="attn_bwd_fused_kernel",
                        signature=signature("attn_bwd_fused_kernel", dtype), constexprs=constexprs,
                        num_warps=c["fused_num_warps"], num_stages=c["bwd_num_stages"], target="sm_90a")
    ptx = k.asm["ptx"]
    ty = "f16" if dtype == "fp16" else "bf16"
    bm, bn, warps = c["FUSED_BLOCK_M"], c["FUSED_BLOCK_N"], c["fused_num_warps"]
    # dQ: BLOCK_M rows; fewer than 64 a warpgroup, the warpgroups split its D columns in halves
    # of 64 (D = 128), else it stays on mma.sync (D = 64 on 8 warps: 32 a thread).
    dq_on_wgmma = bm % (16 * warps) == 0 or D % 128 == 0
    assert ("mma.sync" in ptx) != dq_on_wgmma
    loops = key_loops(ptx)
    assert len(loops) == (2 if causal else 1)  # causal: the diagonal's masked steps, then the rest
    for body in loops:
        text = "\n".join(body)
        # per warpgroup and k-step of 16: S^T, dP^T (K = D), dV, dK (K = BLOCK_M), dQ (K = BLOCK_N)
        steps = 2 * D // 16 + 2 * bm // 16 + (bn // 16 if dq_on_wgmma else 0)
        assert text.count("wgmma.mma_async") == steps and f"f32.{ty}.{ty}" in text, text
        if not dq_on_wgmma:
            assert text.count("mma.sync.aligned.m16n8k16") == bm * D * bn // (16 * 8 * 16) // warps
        atomics = re.findall(r"atom\.[\w.]+", text)
        assert atomics and set(atomics) == {"atom.relaxed.gpu.global.add.v2.f32"}, set(atomics)
        assert len(atomics) == c["FUSED_BLOCK_M"] * D // (32 * c["fused_num_warps"]) // 2
    info = ptxas(ptx, "sm_90a", tmp_path)
    spilled = int(re.search(r"(\d+) bytes spill stores", info).group(1))
    assert spilled <= (160 if D == 128 else 0), info
    assert "C7514" not in info and "C7519" not in info, info
    if D == 128:
        # What ptxas spills stays out of the loop that runs the steps off the diagonal.
        from test_vectorized_access import sass
        path = tmp_path / "fused.ptx"
        path.write_text(ptx)
        loops = [body for body in sass_loops(sass(tmp_path, path)) if any("HGMMA" in t for t in body)]
        assert len(loops) == len(key_loops(ptx))
        assert not [t for t in loops[-1] if re.match(r"(@!?P\w+\s+)?(LDL|STL)", t)], loops[-1]


def test_fused_backward_compiles_for_sm_80(tmp_path):
    """The same kernel on mma.sync with the table's blocks for GPUs without wgmma."""
    c = tk.attention_config(128, True, wgmma=False)
    k = tessera.compile(str(KERNEL_FILE), kernel="attn_bwd_fused_kernel",
                        signature=signature("attn_bwd_fused_kernel", "bf16"),
                        constexprs={"HEAD_DIM": 128, "BLOCK_M": c["FUSED_BLOCK_M"], "BLOCK_N": c["FUSED_BLOCK_N"],
                                    "CAUSAL": True, "MASK_KEYS": True},
                        num_warps=c["fused_num_warps"], num_stages=c["bwd_num_stages"], target="sm_80")
    assert "mma.sync.aligned.m16n8k16" in k.asm["ptx"]
    ptxas(k.asm["ptx"], "sm_80", tmp_path)
