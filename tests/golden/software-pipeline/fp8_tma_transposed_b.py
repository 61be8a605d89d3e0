import tessera
import tessera.language as tl


@tessera.jit
def fp8_tma_kmajor_b(a_desc, bt_desc, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # B^T (N x K, K contiguous) through TMA, transposed for the dot: the ring's tile is the
    # K-major B that fp8 wgmma needs, so the pipeline stages it (no copy through registers).
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = a_desc.load([tl.program_id(0) * BM, k * BK])
        b = tl.trans(bt_desc.load([tl.program_id(1) * BN, k * BK]))
        acc = tl.dot(a, b, acc)
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    tl.store(c_ptr + offs, acc)
