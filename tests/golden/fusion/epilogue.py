"""Golden input for the fusion pass: one GEMM tile with a fused epilogue
(EPILOGUE is a constexpr naming a @jit function of this file, as the launcher
passes it). scale_relu's chain (mul, max, cast) moves above the conversion of
the accumulator, which then moves f16; add_bias's loaded bias stops the chain
(it lives in the store's layout), so that conversion stays as it was.
tile_gemm_residual adds a 16-bit residual tile: its conversion into the
accumulator's layout moves above the cast to f32 (16-bit, not 32-bit, through
shared memory)."""
import tessera
import tessera.language as tl


@tessera.jit
def scale_relu(acc, alpha):
    return tl.maximum(acc * alpha, 0.0)


@tessera.jit
def add_bias(acc, bias):
    return acc + bias


@tessera.jit
def tile_gemm(a_ptr, b_ptr, c_ptr, bias_ptr, alpha, BLOCK: tl.constexpr, EPILOGUE: tl.constexpr,
              WITH_BIAS: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs[:, None] * BLOCK + offs[None, :])
    b = tl.load(b_ptr + offs[:, None] * BLOCK + offs[None, :])
    acc = tl.dot(a, b)
    if WITH_BIAS:
        bias = tl.load(bias_ptr + offs)
        acc = EPILOGUE(acc, bias[None, :])
    else:
        acc = EPILOGUE(acc, alpha)
    tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], acc.to(c_ptr.dtype.element_ty))


@tessera.jit
def tile_gemm_residual(a_ptr, b_ptr, c_ptr, r_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs[:, None] * BLOCK + offs[None, :])
    b = tl.load(b_ptr + offs[:, None] * BLOCK + offs[None, :])
    acc = tl.dot(a, b)
    acc += tl.load(r_ptr + offs[:, None] * BLOCK + offs[None, :])
    tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], acc.to(c_ptr.dtype.element_ty))
