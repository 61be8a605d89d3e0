"""A small generator of random elementwise and row-reduction kernels, for
differential testing (tests/gpu/test_differential.py runs them through the
interpreter and on the GPU; tests/python/test_generated_kernels.py compiles
them to PTX, runs ptxas and interprets them on the CPU).

Each kernel is a random expression tree over two loaded inputs x and y
(+, -, *, /, tl.maximum, tl.minimum, tl.where, tl.exp, tl.abs, casts)
emitted as source text together with an equivalent numpy expression (the
float32 reference). Values stay bounded (|inputs| <= 2, exp of a clamped
argument, division by |b| + 1), tl.where conditions and discontinuous casts
(to int32) apply to the inputs only, so rounding differences between two
correct back-ends cannot flip a branch. Masks are ragged (n is not a multiple
of the block; the reductions' n_cols is not a power of 2).

    spec = generate(seed)                 # a GeneratedKernel
    module = load(spec, tmp_path)         # writes <tmp>/gen_<seed>.py and imports it
    kernel = getattr(module, spec.name)
"""
import dataclasses
import importlib.util
import random

BINARY = ("+", "-", "*", "/", "max", "min")
UNARY = ("exp", "abs", "neg", "f16")


@dataclasses.dataclass
class GeneratedKernel:
    seed: int
    name: str
    kind: str        # "elementwise" or "reduce"
    reduce_op: str   # "sum" / "max" / "min" for kind == "reduce", else ""
    dtype: str       # element type of x, y and out: "fp32" or "fp16"
    expr: str        # the tl expression
    np_expr: str     # the numpy expression (float32), over x, y
    source: str      # the whole module's text
    has_f16_cast: bool

    @property
    def signature(self):
        t = "*" + self.dtype
        if self.kind == "elementwise":
            return f"{t}:16,{t}:16,{t}:16,i32"
        return f"{t}:16,{t}:16,{t}:16,i32,i32,i32"


class _Gen:
    def __init__(self, rng, dtype):
        self.rng = rng
        self.dtype = dtype
        self.f16 = False

    def leaf(self):
        r = self.rng.random()
        if r < 0.4:
            self.uses_input = True
            return "x", "x"
        if r < 0.8:
            self.uses_input = True
            return "y", "y"
        if r < 0.9:
            c = self.rng.choice((0.5, 1.5, 2.0, -0.75, 3.0))
            return repr(c), f"np.float32({c!r})"
        # A discontinuous cast, on an input only: truncation toward zero through int32.
        v = self.rng.choice("xy")
        self.uses_input = True
        return (f"(({v} * 2.0).to(tl.int32).to(tl.float32))",
                f"np.trunc({v} * np.float32(2.0)).astype(np.int32).astype(np.float32)")

    def node(self, depth):
        if depth == 0 or self.rng.random() < 0.2:
            return self.leaf()
        r = self.rng.random()
        if r < 0.55:
            op = self.rng.choice(BINARY)
            (a, na), (b, nb) = self.node(depth - 1), self.node(depth - 1)
            if op == "/":
                return f"({a} / (tl.abs({b}) + 1.0))", f"({na} / (np.abs({nb}) + np.float32(1.0)))"
            if op == "max":
                return f"tl.maximum({a}, {b})", f"np.maximum({na}, {nb})"
            if op == "min":
                return f"tl.minimum({a}, {b})", f"np.minimum({na}, {nb})"
            return f"({a} {op} {b})", f"({na} {op} {nb})"
        if r < 0.8:
            op = self.rng.choice(UNARY)
            outer, self.uses_input = self.uses_input, False
            a, na = self.node(depth - 1)
            tensor, self.uses_input = self.uses_input, outer or self.uses_input
            if op == "f16" and not tensor:  # a Python constant has no .to()
                op = "neg"
            if op == "exp":
                return f"tl.exp(tl.minimum({a}, 3.0))", f"np.exp(np.minimum({na}, np.float32(3.0)))"
            if op == "abs":
                return f"tl.abs({a})", f"np.abs({na})"
            if op == "neg":
                return f"(-{a})", f"(-{na})"
            self.f16 = True
            return f"({a}).to(tl.float16).to(tl.float32)", f"({na}).astype(np.float16).astype(np.float32)"
        # where, on a condition over the inputs only
        cond, ncond = self.rng.choice((("x > y", "x > y"), ("x > 0.0", "x > 0"), ("y < 0.5", "y < 0.5")))
        (a, na), (b, nb) = self.node(depth - 1), self.node(depth - 1)
        return f"tl.where({cond}, {a}, {b})", f"np.where({ncond}, {na}, {nb})"

    def tree(self, depth):
        while True:
            self.uses_input, self.f16 = False, False
            e, ne = self.node(depth)
            if self.uses_input:  # a tensor, not a constant
                return e, ne


def generate(seed, depth=4):
    """The kernel of this seed: even seeds elementwise, odd ones a row reduction; fp16 for one in four."""
    rng = random.Random(seed)
    dtype = "fp16" if seed % 4 == 3 else "fp32"
    g = _Gen(rng, dtype)
    expr, np_expr = g.tree(depth)
    name = f"gen_{seed}"
    # The expression is computed in fp32 (the loads are upcast), stored as the output's type.
    head = ("import tessera\nimport tessera.language as tl\n\n\n"
            f"# generated by tests/gpu/kernel_generator.py, seed {seed}\n")
    if seed % 2 == 0:
        kind, op = "elementwise", ""
        body = f"""@tessera.jit
def {name}(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0).to(tl.float32)
    y = tl.load(y_ptr + offs, mask=mask, other=1.0).to(tl.float32)
    r = {expr}
    tl.store(out_ptr + offs, r.to(out_ptr.dtype.element_ty), mask=mask)
"""
    else:
        kind = "reduce"
        op = rng.choice(("sum", "max", "min"))
        neutral = {"sum": "0.0", "max": "-float(\"inf\")", "min": "float(\"inf\")"}[op]
        body = f"""@tessera.jit
def {name}(x_ptr, y_ptr, out_ptr, n_rows, n_cols, stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offs = rows[:, None] * stride + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=1.0).to(tl.float32)
    y = tl.load(y_ptr + offs, mask=mask, other=1.0).to(tl.float32)
    v = tl.where(mask, {expr}, {neutral})
    r = tl.{op}(v, axis=1)
    tl.store(out_ptr + rows, r.to(out_ptr.dtype.element_ty), mask=rows < n_rows)
"""
    return GeneratedKernel(seed, name, kind, op, dtype, expr, np_expr, head + "\n" + body, g.f16)


def load(spec, directory):
    """Writes the kernel's module to directory/gen_<seed>.py and imports it (tessera reads the file)."""
    path = directory / f"{spec.name}.py"
    path.write_text(spec.source)
    mod_spec = importlib.util.spec_from_file_location(f"tessera_generated_{spec.name}", path)
    module = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(module)
    return module


def np_dtype(spec):
    import numpy as np
    return np.float32 if spec.dtype == "fp32" else np.float16


def make_inputs(spec, seed_offset=0):
    """(args for the kernel as numpy arrays / ints, grid, meta, output index, valid count):
    ragged sizes chosen from the seed."""
    import numpy as np
    rng = np.random.default_rng(spec.seed + seed_offset)
    dt = np_dtype(spec)
    if spec.kind == "elementwise":
        n = int(rng.choice((1, 17, 1000, 4099)))
        block = int(rng.choice((64, 256, 1024)))
        x = (rng.random(n) * 4 - 2).astype(dt)
        y = (rng.random(n) * 4 - 2).astype(dt)
        out = np.full(n, np.nan, dt)
        return [x, y, out, n], (-(-n // block),), {"BLOCK": block}
    n_rows = int(rng.choice((1, 5, 37)))
    n_cols = int(rng.choice((1, 3, 100, 129)))
    stride = n_cols + int(rng.choice((0, 3)))
    block_n = 1 << max(0, (n_cols - 1).bit_length())
    block_m = int(rng.choice((1, 2, 4)))
    x = (rng.random(n_rows * stride) * 4 - 2).astype(dt)
    y = (rng.random(n_rows * stride) * 4 - 2).astype(dt)
    out = np.full(n_rows, np.nan, dt)
    return [x, y, out, n_rows, n_cols, stride], (-(-n_rows // block_m),), {"BLOCK_M": block_m, "BLOCK_N": block_n}


def reference(spec, args):
    """The numpy float32 result for make_inputs' args."""
    import numpy as np
    if spec.kind == "elementwise":
        x, y = args[0].astype(np.float32), args[1].astype(np.float32)
        with np.errstate(all="ignore"):
            r = eval(spec.np_expr, {"np": np, "x": x, "y": y})  # noqa: S307 (our own generated text)
        return np.broadcast_to(np.asarray(r, np.float32), x.shape).astype(np.float32)
    x, y, _, n_rows, n_cols, stride = args
    x = x.astype(np.float32).reshape(n_rows, stride)[:, :n_cols]
    y = y.astype(np.float32).reshape(n_rows, stride)[:, :n_cols]
    with np.errstate(all="ignore"):
        v = np.broadcast_to(np.asarray(eval(spec.np_expr, {"np": np, "x": x, "y": y}), np.float32), x.shape)  # noqa: S307
    return getattr(np, spec.reduce_op)(v, axis=1).astype(np.float32)


def rel_err(out, ref):
    """||out - ref|| / ||ref|| in float64; inf when out has NaN where ref has none."""
    import numpy as np
    out, ref = np.asarray(out, np.float64), np.asarray(ref, np.float64)
    if (np.isnan(out) != np.isnan(ref)).any():
        return float("inf")
    ok = ~np.isnan(ref)
    den = np.linalg.norm(ref[ok])
    num = np.linalg.norm(out[ok] - ref[ok])
    return num / den if den else num


def tolerance(spec):
    """Relative-norm tolerance for two correct back-ends (fp16 results and fp16 casts round once more)."""
    if spec.dtype == "fp16" or spec.has_f16_cast:
        return 2e-3
    return 1e-5
