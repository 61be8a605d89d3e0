"""Attention over a paged key/value cache (vLLM's prefix prefill form, tests/python/lang_kernels/
paged_attention.py), compiled as Triton runs it there (4 warps, num_stages=1):
- the K pointer block is built from a loaded row of page numbers and then loaded in another layout
  than it was built in: the row is converted (64 values), not the 128 x 64 pointers (64-bit values
  through shared memory, 128 st.shared.u64 a thread, every iteration);
- the query tile, computed before the loop, is staged into shared memory once, not by every
  iteration's dot, with one stage as with several;
- with several stages the K and V blocks are pipelined (cp.async), their page numbers read ahead;
- on the interpreter with every pass applied, the results match numpy."""
import re
import sys

import numpy as np
import pytest

from conftest import ROOT
from lang_support import assemble, compile_kernel

sys.path.insert(0, str(ROOT / "tests" / "python" / "lang_kernels"))

import tessera  # noqa: E402

SIG = "*bf16:16,*bf16:16,*bf16:16,*i32:16,*i32:16,*bf16:16,fp32,i32:16,i32:16,i32:16,i32:1,i32:16,i32:16,i32:16,i32:16"
CX = {"BLOCK_M": 64, "HEAD_DIM": 128, "BLOCK_N": 64}


def compile_paged(stages, emit="ptx"):
    return compile_kernel("paged_attention.py", "paged_attention", SIG, CX, emit=emit,
                          extra=["--num-stages", str(stages)])


@pytest.mark.parametrize("stages", [1, 2])
def test_pointer_block_is_not_converted(tmp_path, stages):
    ir = compile_paged(stages, "ir-opt")
    converted_pointers = [l for l in ir.splitlines() if "convert_layout" in l and "ptr<" in l]
    assert not converted_pointers, converted_pointers
    ptx = compile_paged(stages)
    assert not re.search(r"st\.shared(\.v\d)?\.u64", ptx)
    assemble(ptx, "sm_90a", tmp_path)


@pytest.mark.parametrize("stages", [1, 2, 3])
def test_query_tile_is_staged_once(stages):
    ir = compile_paged(stages, "ir-opt")
    before_loop = ir.split(" = for ")[0]
    assert "local_alloc" in before_loop and "local_store" in before_loop, before_loop
    body = ir.split(" = for ", 1)[1]
    assert "local_load" in body


@pytest.mark.parametrize("stages", [2, 3])
def test_paged_loads_are_pipelined(stages):
    """The K and V blocks go through cp.async rings although their addresses come from the block
    table loaded in the loop: the pipeline reads the page numbers ahead too (masked past the end)."""
    ir = compile_paged(stages, "ir-opt")
    assert ir.count("async_copy") >= 4, ir  # K and V: the prologue copies and the one in the loop
    before_loop = ir.split(" = for ")[0]
    assert re.search(r"= load .*: <64xi32>", before_loop), before_loop  # the page numbers of the first iterations


@pytest.mark.parametrize("stages", [1, 2, 3])
def test_paged_attention_interpreted_after_all_passes(monkeypatch, stages):
    monkeypatch.setenv("TESSERA_INTERPRET_PASSES", "1")
    from paged_attention import paged_attention
    kernel = tessera.jit(paged_attention.fn, interpret=True)
    rng = np.random.default_rng(stages)
    M, D, page_size, n_context, n_pages = 64, 64, 16, 100, 8
    q = (rng.standard_normal((M, D)) * 0.5).astype(np.float16)
    kc = (rng.standard_normal((n_pages, D, page_size)) * 0.5).astype(np.float16)  # [page, d, slot]
    vc = (rng.standard_normal((n_pages, page_size, D)) * 0.5).astype(np.float16)  # [page, slot, d]
    table = rng.permutation(n_pages).astype(np.int32)
    ctx = np.array([n_context], np.int32)
    out = np.zeros((M, D), np.float16)
    scale = D ** -0.5
    kernel[(1,)](q, kc, vc, table, ctx, out, scale, page_size, D, kc.strides[0] // 2, kc.strides[1] // 2, 1,
                 vc.strides[0] // 2, vc.strides[1] // 2, D, BLOCK_M=M, HEAD_DIM=D, BLOCK_N=32, num_stages=stages)
    pos = np.arange(n_context)
    keys = kc[table[pos // page_size], :, pos % page_size].astype(np.float64)  # [n, d]
    values = vc[table[pos // page_size], pos % page_size, :].astype(np.float64)
    s = q.astype(np.float64) @ keys.T * scale
    p = np.exp(s - s.max(1, keepdims=True))
    ref = p @ values / p.sum(1, keepdims=True)
    np.testing.assert_allclose(out.astype(np.float64), ref, rtol=2e-2, atol=2e-2)
