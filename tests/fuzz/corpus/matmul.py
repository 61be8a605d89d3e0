import tessera
import tessera.language as tl
from tessera.language import constexpr as C


@tessera.jit(num_warps=4, num_stages=3)
def gemm(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
         TM: tl.constexpr, TN: tl.constexpr, TK: tl.constexpr, GROUP: C = 8, EPILOGUE: tl.constexpr = ""):
    tiles_m = tl.cdiv(M, TM)
    tiles_n = tl.cdiv(N, TN)
    tile = tl.program_id(0)
    band = tile // (GROUP * tiles_n)
    band_rows = min(tiles_m - band * GROUP, GROUP)
    tm = band * GROUP + (tile % band_rows)
    tn = (tile % (GROUP * tiles_n)) // band_rows

    rows = (tm * TM + tl.arange(0, TM)) % M
    cols = (tn * TN + tl.arange(0, TN)) % N
    ks = tl.arange(0, TK)
    a_tile = a_ptr + rows[:, None] * sam + ks[None, :] * sak
    b_tile = b_ptr + ks[:, None] * sbk + cols[None, :] * sbn
    acc = tl.zeros((TM, TN), dtype=tl.float32)
    for step in range(0, tl.cdiv(K, TK)):
        left = K - step * TK
        acc += tl.dot(tl.load(a_tile, mask=ks[None, :] < left, other=0.0),
                      tl.load(b_tile, mask=ks[:, None] < left, other=0.0))
        a_tile += TK * sak
        b_tile += TK * sbk
    if EPILOGUE == "relu":
        acc = tl.maximum(acc, 0)
    elif EPILOGUE == "leaky":
        acc = tl.where(acc > 0, acc, acc * 0.01)
    else:
        pass
    out_rows = tm * TM + tl.arange(0, TM)
    out_cols = tn * TN + tl.arange(0, TN)
    tl.store(c_ptr + out_rows[:, None] * scm + out_cols[None, :] * scn, acc.to(tl.float16),
             mask=(out_rows[:, None] < M) & (out_cols[None, :] < N))
