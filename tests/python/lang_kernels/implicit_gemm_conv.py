"""An implicit-GEMM 2-D convolution over NCHW activations and [O, C, KH, KW] weights (the pattern of
attorch's conv2d_forward_kernel): each program computes a [pixels, out channels] tile as a sum over
the filter taps and input-channel blocks of [pixels, channels] x [channels, out channels] dots.
Neither operand tile has a contiguous dim (a pixel's channels are a plane apart, a weight's input
channels KH*KW elements apart): both are gathers of 16-bit elements. Also a plain gather tile."""
import tessera
import tessera.language as tl


@tessera.jit
def conv2d_nchw(x_ptr, w_ptr, y_ptr, N, C, H, W, O, OH, OW,
                sxn, sxc, sxh, sxw, swo, swc, swh, sww, syn, syo, syh, syw,
                KH: tl.constexpr, KW: tl.constexpr, STRIDE: tl.constexpr, PAD: tl.constexpr,
                BP: tl.constexpr, BC: tl.constexpr, BO: tl.constexpr):
    pix = tl.program_id(0) * BP + tl.arange(0, BP)
    outs = tl.program_id(1) * BO + tl.arange(0, BO)
    n = pix // (OH * OW)
    oh = (pix // OW) % OH
    ow = pix % OW
    acc = tl.zeros((BP, BO), dtype=tl.float32)
    for kh in range(KH):
        for kw in range(KW):
            ih = oh * STRIDE - PAD + kh
            iw = ow * STRIDE - PAD + kw
            inside = (n < N) & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
            for c0 in range(0, C, BC):
                cs = c0 + tl.arange(0, BC)
                x = tl.load(x_ptr + (n * sxn + ih * sxh + iw * sxw)[:, None] + (cs * sxc)[None, :],
                            mask=inside[:, None] & (cs < C)[None, :], other=0.0)
                w = tl.load(w_ptr + (cs * swc)[:, None] + (outs * swo)[None, :] + kh * swh + kw * sww,
                            mask=(cs < C)[:, None] & (outs < O)[None, :], other=0.0)
                acc += tl.dot(x, w)
    tl.store(y_ptr + (n * syn + oh * syh + ow * syw)[:, None] + (outs * syo)[None, :], acc.to(y_ptr.dtype.element_ty),
             mask=(pix < N * OH * OW)[:, None] & (outs < O)[None, :])


@tessera.jit
def gather_tile(x_ptr, y_ptr, s0, s1, B0: tl.constexpr, B1: tl.constexpr):
    offs = tl.arange(0, B0)[:, None] * s0 + tl.arange(0, B1)[None, :] * s1
    tl.store(y_ptr + tl.arange(0, B0)[:, None] * B1 + tl.arange(0, B1)[None, :], tl.load(x_ptr + offs))
