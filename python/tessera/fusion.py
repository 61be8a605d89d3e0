"""@tessera.elementwise (also tessera.fuse): one elementwise function, one kernel.

    @tessera.elementwise
    def bias_gelu(x, b):
        y = x + b
        return 0.5 * y * (1.0 + tl.erf(y * 0.7071067811865476))

    y = bias_gelu(x, b)          # x: (M, N), b: (N,) -> one kernel over (M, N)

The function is written on blocks with `tl` ops (as a @jit helper). Calling it
on tensors (torch CUDA tensors; numpy arrays / CPU tensors with interpret=True
or TESSERA_INTERPRET=1) broadcasts them as numpy does, allocates the output
(`out=` / `out_dtype=` override) and launches one generated kernel. Python
scalars are runtime scalar arguments (a new value does not recompile).

The kernel is generated as source text (see _kernel_text) and compiled
through the normal path; it is cached per (function, which arguments are
tensors, rank after merging dims, contiguity, 32/64-bit offsets); dtypes and
alignments are the JIT's specialisation as for any kernel.

* Contiguous fast path: every tensor has the output's shape and is
  contiguous: `x + offs` addressing, so the axis analysis proves contiguity
  and the loads and stores become 16-byte vectors.
* General path (broadcasting, strided or transposed inputs, `out=` views):
  dims that are contiguous in every operand are merged first (so a bias
  add on (M, N) + (N,) is rank 2 and a contiguous (B, M, N) + (B, M, N)
  is rank 1); the last dim is a block axis with each operand's stride (a
  stride of 1 is specialised to the constant 1: vector loads), and the other
  dims are indexed per row with scalar-per-row div/mod. An operand constant
  along every dim but the last (the bias row of bias + GELU) is loaded once
  per program as a [BLOCK_C] row and broadcast over its rows in registers.

The block size (and warps) come from @tessera.autotune over
ELEMENTWISE_CONFIGS, keyed on the problem size (autotune=False, or
TESSERA_ELEMENTWISE_AUTOTUNE=0, takes the first config).

The user function gets the loaded blocks (in their own dtypes) and the
scalars; its result is cast to the output dtype, by default the promoted
dtype of the tensor arguments (numpy's result_type; Python scalars do not
promote). One result per function.

fn.kernel_source(*args) shows the generated kernel; fn.jit_function is the
@jit function itself (usable as an epilogue: tk.matmul(..., epilogue=fn)).
"""
from . import _compose, _env
from .autotune import Config
from .jit import JITFunction, SourceKernel, jit

ELEMENTWISE_CONFIGS = (
    Config({"BLOCK": 1024}, num_warps=4),
    Config({"BLOCK": 2048}, num_warps=4),
    Config({"BLOCK": 4096}, num_warps=8),
    Config({"BLOCK": 8192}, num_warps=8),
    Config({"BLOCK": 512}, num_warps=4),
)

_INTERPRET_BLOCK = 256
_MAX_BLOCK_C = 512  # the widest last-dim block of the general path (<= the smallest BLOCK)


# ---------------------------------------------------------------- operands

class _Tensor:
    def __init__(self, x, index):
        self.x = x
        self.index = index
        if type(x).__module__.startswith("numpy") or (hasattr(x, "__array_interface__") and not hasattr(x, "data_ptr")):
            self.kind = "numpy"
            self.shape = tuple(x.shape)
            self.strides = tuple(s // x.itemsize for s in x.strides)
            self.dtype = x.dtype
            self.device = "cpu"
        else:
            self.kind = "torch"
            self.shape = tuple(x.shape)
            self.strides = tuple(x.stride())
            self.dtype = x.dtype
            self.device = x.device.type


def _is_tensor(x):
    if type(x).__module__ == "numpy" and type(x).__name__ != "ndarray":
        return False  # a numpy scalar: a scalar argument
    return hasattr(x, "shape") and hasattr(x, "dtype") and (hasattr(x, "data_ptr") or hasattr(x, "__array_interface__"))


def _broadcast_shape(shapes):
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for i, d in enumerate(s):
            j = ndim - len(s) + i
            if d == 1:
                continue
            if out[j] not in (1, d):
                raise ValueError(f"elementwise: shapes {', '.join(str(tuple(x)) for x in shapes)} do not broadcast")
            out[j] = d
    return tuple(out)


def _broadcast_strides(shape, strides, out_shape):
    pad = len(out_shape) - len(shape)
    result = [0] * pad
    for d, (size, stride) in enumerate(zip(shape, strides)):
        result.append(0 if size == 1 and out_shape[pad + d] != 1 else stride)
    return result


def _collapse(out_shape, stride_lists):
    """Drops size-1 dims and merges adjacent dims that are contiguous in every operand."""
    dims = [d for d, size in enumerate(out_shape) if size != 1]
    shape = [out_shape[d] for d in dims]
    strides = [[s[d] for d in dims] for s in stride_lists]
    if not shape:
        return [1], [[0] for _ in stride_lists]
    merged_shape = [shape[0]]
    merged = [[s[0]] for s in strides]
    for d in range(1, len(shape)):
        if all(m[-1] == s[d] * shape[d] for m, s in zip(merged, strides)):
            merged_shape[-1] *= shape[d]
            for m, s in zip(merged, strides):
                m[-1] = s[d]
        else:
            merged_shape.append(shape[d])
            for m, s in zip(merged, strides):
                m.append(s[d])
    return merged_shape, merged


def _max_offset(shape, strides):
    return sum((n - 1) * abs(s) for n, s in zip(shape, strides))


# ------------------------------------------------------------ kernel text

def _kernel_text(fn_name, kinds, ndim, fast, wide):
    """The generated kernel: kinds[i] is 'T' (tensor), 'R' (a tensor constant along every dim but the
    last, a bias row: _row_kinds) or 'S' (scalar) for argument i."""
    params = ["OUT"]
    lines = []
    if fast:
        params += [f"X{i}" if k == "T" else f"S{i}" for i, k in enumerate(kinds)]
        params += ["N", "BLOCK: tl.constexpr"]
        pid = "tl.program_id(0).to(tl.int64)" if wide else "tl.program_id(0)"
        lines += [f"    offs = {pid} * BLOCK + tl.arange(0, BLOCK)",
                  "    mask = offs < N"]
        call = []
        for i, k in enumerate(kinds):
            if k == "T":
                lines.append(f"    x{i} = tl.load(X{i} + offs, mask=mask)")
                call.append(f"x{i}")
            else:
                call.append(f"S{i}")
        lines.append(f"    y = {fn_name}({', '.join(call)})")
        lines.append("    tl.store(OUT + offs, y.to(OUT.dtype.element_ty), mask=mask)")
    else:
        outer = ndim - 1
        params += [f"OUT_s{d}" for d in range(ndim)]
        for i, k in enumerate(kinds):
            if k in "TR":
                params += [f"X{i}"] + [f"X{i}_s{d}" for d in range(ndim)]
            else:
                params.append(f"S{i}")
        params += ["n_rows", "n_cols"] + [f"D{d}" for d in range(1, outer)]
        params += ["BLOCK: tl.constexpr", "BLOCK_C: tl.constexpr"]
        pid = "tl.program_id(0).to(tl.int64)" if wide else "tl.program_id(0)"
        lines += ["    BLOCK_R: tl.constexpr = BLOCK // BLOCK_C",
                  f"    rows = {pid} * BLOCK_R + tl.arange(0, BLOCK_R)",
                  "    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)"]
        if wide:
            lines.append("    cols = cols.to(tl.int64)")
        lines.append("    mask = (rows < n_rows)[:, None] & (cols < n_cols)[None, :]")
        # Outer indices: rows = ((i0 * D1 + i1) * D2 + i2) ...
        if outer == 0:
            lines.append("    i0 = rows * 0")
        elif outer == 1:
            lines.append("    i0 = rows")
        else:
            lines.append("    r = rows")
            for d in range(outer - 1, 0, -1):
                lines.append(f"    i{d} = r % D{d}")
                lines.append(f"    r = r // D{d}")
            lines.append("    i0 = r")

        def offset(prefix):
            if outer == 0:
                return f"cols[None, :] * {prefix}_s0"
            row = " + ".join(f"i{d} * {prefix}_s{d}" for d in range(outer))
            return f"({row})[:, None] + cols[None, :] * {prefix}_s{outer}"
        call = []
        for i, k in enumerate(kinds):
            if k == "R":  # one [BLOCK_C] row, loaded once and kept in registers for the program's rows
                lines.append(f"    x{i} = tl.load(X{i} + cols * X{i}_s{outer}, mask=cols < n_cols)[None, :]")
                call.append(f"x{i}")
            elif k == "T":
                lines.append(f"    x{i} = tl.load(X{i} + {offset(f'X{i}')}, mask=mask)")
                call.append(f"x{i}")
            else:
                call.append(f"S{i}")
        lines.append(f"    y = {fn_name}({', '.join(call)})")
        lines.append(f"    tl.store(OUT + {offset('OUT')}, y.to(OUT.dtype.element_ty), mask=mask)")
    header = ["import tessera", "import tessera.language as tl", "", "",
              "@tessera.jit", f"def _elementwise_{fn_name}({', '.join(params)}):"]
    return "\n".join(header + lines) + "\n"


# -------------------------------------------------------------- function

class ElementwiseFunction:
    """What @tessera.elementwise returns: call it on tensors; it is also a @jit function
    (inlined when called from a kernel, usable as an epilogue)."""

    def __init__(self, fn, autotune=None, interpret=None):
        self.jit_function = fn if isinstance(fn, JITFunction) else jit(fn)
        self.fn = self.jit_function.fn
        self.__name__ = self.fn.__name__
        self.__doc__ = self.fn.__doc__
        self.__wrapped__ = self.fn
        self._autotune = autotune
        self._interpret = interpret
        self._kernels = {}

    def __repr__(self):
        return f"ElementwiseFunction({self.fn.__module__}:{self.__name__})"

    # The text and the kernel object for one variant.
    def _variant(self, kinds, ndim, fast, wide, interpret):
        key = (kinds, ndim, fast, wide, interpret)
        hit = self._kernels.get(key)
        if hit is not None:
            return hit
        name = self.__name__
        text = _kernel_text(name, kinds, ndim, fast, wide)
        text += _compose.function_source([self.jit_function], text)
        path = f"<tessera.elementwise {self.fn.__module__}.{name}>"
        kernel = SourceKernel(text, f"_elementwise_{name}", path, interpret=interpret)
        tuner = None
        if not interpret:
            from .autotune import autotune
            keys = ["N"] if fast else ["n_rows", "n_cols"]
            tuner = autotune(configs=list(ELEMENTWISE_CONFIGS), key=keys)(kernel)
        self._kernels[key] = hit = (kernel, tuner, text)
        return hit

    def _plan(self, args, out, out_dtype):
        tensors = [_Tensor(a, i) for i, a in enumerate(args) if _is_tensor(a)]
        if not tensors:
            raise TypeError(f"{self.__name__}: at least one argument must be a tensor")
        kinds = tuple("T" if _is_tensor(a) else "S" for a in args)
        for i, a in enumerate(args):
            if kinds[i] == "S" and not isinstance(a, (bool, int, float)) and not hasattr(a, "item"):
                raise TypeError(f"{self.__name__}: argument {i} is a {type(a).__name__}; arguments are tensors "
                                "or Python scalars")
        shape = _broadcast_shape([t.shape for t in tensors])
        if out is not None:
            o = _Tensor(out, -1)
            if o.shape != shape:
                raise ValueError(f"{self.__name__}: out has shape {o.shape}, the arguments broadcast to {shape}")
        return tensors, kinds, shape

    def _prepare(self, args, out=None, out_dtype=None, interpret=None):
        tensors, kinds, shape = self._plan(args, out, out_dtype)
        first = tensors[0]
        if interpret is None:
            interpret = self._interpret
        if interpret is None:
            interpret = first.device != "cuda" and _env.flag("TESSERA_INTERPRET")
        if not interpret and first.device != "cuda":
            raise TypeError(f"{self.__name__}: arguments are on the host; pass CUDA tensors, or interpret=True "
                            "(TESSERA_INTERPRET=1) to run on the host interpreter")
        if out is None:
            out = _allocate(first, tensors, shape, out_dtype)
        o = _Tensor(out, -1)
        numel = 1
        for d in shape:
            numel *= d
        if numel and any(s == 0 and n > 1 for n, s in zip(o.shape, o.strides)):
            raise ValueError(f"{self.__name__}: out has a zero stride (several elements at one address)")
        stride_lists = [_broadcast_strides(o.shape, o.strides, shape)]
        stride_lists += [_broadcast_strides(t.shape, t.strides, shape) for t in tensors]
        mshape, mstrides = _collapse(shape, stride_lists)
        ndim = len(mshape)
        fast = ndim == 1 and all(s[0] == 1 for s in mstrides)
        wide = numel >= 2 ** 31 or any(_max_offset(mshape, s) >= 2 ** 31 for s in mstrides)
        if not fast:
            kinds = _row_kinds(kinds, mstrides[1:])
        return dict(tensors=tensors, kinds=kinds, shape=shape, out=out, numel=numel, mshape=mshape,
                    mstrides=mstrides, ndim=ndim, fast=fast, wide=wide, interpret=bool(interpret))

    def kernel_source(self, *args, out=None, out_dtype=None, interpret=None):
        """The generated kernel's source for these arguments (with the function appended)."""
        p = self._prepare(args, out, out_dtype, interpret)
        return self._variant(p["kinds"], p["ndim"], p["fast"], p["wide"], p["interpret"])[2]

    def __call__(self, *args, out=None, out_dtype=None, autotune=None, config=None, interpret=None):
        p = self._prepare(args, out, out_dtype, interpret)
        out = p["out"]
        if p["numel"] == 0:
            return out
        kernel, tuner, _ = self._variant(p["kinds"], p["ndim"], p["fast"], p["wide"], p["interpret"])
        launch_args = [out]
        tensors = iter(p["tensors"])
        strides = p["mstrides"]
        if p["fast"]:
            for a, k in zip(args, p["kinds"]):
                launch_args.append(next(tensors).x if k == "T" else _scalar(a))
            launch_args.append(p["numel"])
        else:
            launch_args += list(strides[0])
            t_index = 1
            for a, k in zip(args, p["kinds"]):
                if k in "TR":
                    launch_args.append(next(tensors).x)
                    launch_args += list(strides[t_index])
                    t_index += 1
                else:
                    launch_args.append(_scalar(a))
            mshape = p["mshape"]
            n_cols = mshape[-1]
            n_rows = 1
            for d in mshape[:-1]:
                n_rows *= d
            launch_args += [n_rows, n_cols] + list(mshape[1:-1])
        block_c = None if p["fast"] else min(_MAX_BLOCK_C, _next_pow2(mshape[-1]))
        extra = {} if block_c is None else {"BLOCK_C": block_c}

        def grid(meta):
            if p["fast"]:
                return (_cdiv(p["numel"], meta["BLOCK"]),)
            return (_cdiv(n_rows, meta["BLOCK"] // block_c), _cdiv(n_cols, block_c))
        if p["interpret"]:
            kernel[grid](*launch_args, BLOCK=max(_INTERPRET_BLOCK, block_c or 0), **extra)
            return out
        use_tuner = _env.flag("TESSERA_ELEMENTWISE_AUTOTUNE", default=True) if autotune is None else autotune
        if self._autotune is not None and autotune is None:
            use_tuner = self._autotune
        if config is not None:
            kernel[grid](*launch_args, **extra, **config.all_kwargs())
        elif use_tuner:
            tuner[grid](*launch_args, **extra)
        else:
            kernel[grid](*launch_args, **extra, **ELEMENTWISE_CONFIGS[0].all_kwargs())
        return out


def _row_kinds(kinds, tensor_strides):
    """kinds with 'R' for each tensor whose merged strides are 0 on every dim but the last (a bias
    (N,) beside an (M, N) tensor): the kernel loads its [BLOCK_C] row once and broadcasts it over the
    program's rows in registers, where a 2-D load would fetch it again for every row."""
    strides = iter(tensor_strides)
    out = []
    for k in kinds:
        if k == "T":
            s = next(strides)
            k = "R" if len(s) > 1 and not any(s[:-1]) else "T"
        out.append(k)
    return tuple(out)


def _scalar(a):
    return a.item() if hasattr(a, "item") and not isinstance(a, (bool, int, float)) else a


def _next_pow2(n):
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


def _cdiv(a, b):
    return (a + b - 1) // b


def _allocate(first, tensors, shape, out_dtype):
    if first.kind == "numpy":
        import numpy as np
        dtype = np.result_type(*[t.dtype for t in tensors]) if out_dtype is None else np.dtype(out_dtype)
        return np.empty(shape, dtype=dtype)
    import torch
    if out_dtype is None:
        dtype = tensors[0].dtype
        for t in tensors[1:]:
            dtype = torch.promote_types(dtype, t.dtype)
    else:
        dtype = out_dtype
    return torch.empty(shape, dtype=dtype, device=first.x.device)


def elementwise(fn=None, *, autotune=None, interpret=None):
    """@tessera.elementwise / @tessera.elementwise(autotune=False, interpret=True): see the module doc."""
    if fn is None:
        return lambda f: ElementwiseFunction(f, autotune=autotune, interpret=interpret)
    return ElementwiseFunction(fn, autotune=autotune, interpret=interpret)


fuse = elementwise

__all__ = ["elementwise", "fuse", "ElementwiseFunction", "ELEMENTWISE_CONFIGS"]
