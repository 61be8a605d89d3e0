"""What torch's Inductor (torch 2.11, torch/_inductor/runtime/triton_heuristics.py) does with the
`triton` API, replayed here so that tests check tessera's side of that contract without torch:
the ASTSource arguments its generated code carries for each kernel below (signature, constants,
attrs as torch/_inductor/runtime/hints.py spells them), CachingAutotuner.prepare_for_pickle /
restore_after_unpickle, TritonCompileResult.__getstate__ / __setstate__ (how a compiled kernel
crosses from a compile worker to the parent), and the launcher TritonCompileResult.make_launcher
generates. docs/torch-compile.md describes the contract."""
import collections
import pickle


def divisible(*indices):
    """attrs as torch's AttrsDescriptorWrapper (torch/_inductor/runtime/hints.py) writes them for Triton 3.6."""
    return {(i,): [["tt.divisibility", 16]] for i in indices}


# kernel name -> (signature, constants (one config's), attrs, num_warps)
CASES = {
    "triton_poi_fused_add_gelu_0": (
        {"in_ptr0": "*bf16", "in_ptr1": "*bf16", "out_ptr0": "*fp32", "xnumel": "i32", "XBLOCK": "constexpr"},
        {"XBLOCK": 256}, divisible(0, 1, 2, 3), 4),
    "triton_per_fused_native_layer_norm_1": (
        {"in_out_ptr0": "*fp32", "in_ptr0": "*fp32", "in_ptr1": "*fp32", "in_ptr2": "*fp32", "out_ptr0": "*fp32",
         "xnumel": "i32", "r0_numel": "i32", "XBLOCK": "constexpr"},
        {"XBLOCK": 8}, divisible(0, 1, 2, 3, 4, 5, 6), 4),
    "triton_per_fused__softmax_2": (
        {"in_ptr0": "*fp32", "out_ptr2": "*fp32", "xnumel": "i32", "r0_numel": "i32", "XBLOCK": "constexpr"},
        {"XBLOCK": 8}, divisible(0, 1, 2), 2),
    "triton_red_fused_sum_3": (
        {"in_ptr0": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32", "r0_numel": "i32", "XBLOCK": "constexpr",
         "R0_BLOCK": "constexpr"},
        {"XBLOCK": 1, "R0_BLOCK": 128}, divisible(0, 1), 4),
    # ks0 is a size known to be 1: Inductor types it "constexpr" and puts 1 in the constants.
    "triton_poi_fused_clamp_mul_4": (
        {"in_ptr0": "*fp32", "out_ptr0": "*fp32", "ks0": "constexpr", "xnumel": "i32", "XBLOCK": "constexpr"},
        {"XBLOCK": 128, "ks0": 1}, divisible(0, 1), 4),
    "triton_poi_fused_index_5": (
        {"in_ptr0": "*i32", "in_ptr1": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32", "XBLOCK": "constexpr"},
        {"XBLOCK": 64}, divisible(0, 1, 2), 2),
    # dynamic shapes: sizes as i64 ("ks" arguments), an unspecialised float scalar as fp32
    "triton_poi_fused_mul_6": (
        {"in_ptr0": "*fp32", "out_ptr0": "*fp32", "ks0": "i64", "scale": "fp32", "xnumel": "i64",
         "XBLOCK": "constexpr"},
        {"XBLOCK": 128}, divisible(0, 1), 4),
    # under Inductor's heuristics decorator (the stand-in's), with its metadata
    "triton_poi_fused_relu_7": (
        {"in_ptr0": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32", "XBLOCK": "constexpr"},
        {"XBLOCK": 1024}, divisible(0, 1, 2), 4),
}

# Triton's compile options as CachingAutotuner._precompile_config passes them for a CUDA device.
def options(num_warps, num_stages=1, debug=True):
    return {"num_warps": num_warps, "num_stages": num_stages, "debug": debug, "sanitize_overflow": False,
            "launch_cooperative_grid": False, "launch_pdl": False}


def compile_case(triton, module, name, arch=90, **option_changes):
    """triton.compile(ASTSource(fn, signature, constants, attrs), target=GPUTarget("cuda", arch, 32),
    options=...) as Inductor calls it."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import ASTSource
    signature, constants, attrs, num_warps = CASES[name]
    opts = {**options(num_warps), **option_changes}
    return triton.compile(ASTSource(getattr(module, name), signature, dict(constants), attrs),
                          target=GPUTarget("cuda", arch, 32), options=opts)


def prepare_for_pickle(fn):
    """CachingAutotuner.prepare_for_pickle's changes to its JITFunction; returns the old values."""
    old = (fn.fn, fn.__globals__, fn.used_global_vals, fn.repr, getattr(fn, "_hash_lock", None))
    fn.fn = None
    fn.__globals__ = None
    fn.used_global_vals = None
    fn.repr = _ConstRepr(fn.repr(fn))
    fn._hash_lock = None
    return old


def restore_after_unpickle(fn, old):
    fn.fn, fn.__globals__, fn.used_global_vals, fn.repr, fn._hash_lock = old


class _ConstRepr:
    def __init__(self, value):
        self.value = value

    def __call__(self, _=None):
        return self.value


def _serialize_metadata(metadata):
    if isinstance(metadata, tuple) and hasattr(metadata, "_asdict") and hasattr(metadata, "_fields"):
        return metadata._asdict()
    return metadata


def _deserialize_metadata(metadata):
    if isinstance(metadata, dict):
        return collections.namedtuple("KernelMetadata", sorted(metadata))(**metadata)
    return metadata


class CompileResult:
    """TritonCompileResult's pickling: the kernel's __dict__ with metadata as a dict and the
    handles (module, function, run) as None; rebuilt with CompiledKernel.__new__ + __dict__.update."""

    def __init__(self, kernel):
        self.kernel = kernel

    def __getstate__(self):
        kernel = self.kernel
        state = {**kernel.__dict__, "metadata": _serialize_metadata(kernel.metadata),
                 "packed_metadata": _serialize_metadata(getattr(kernel, "packed_metadata", None)),
                 "module": None, "function": None, "run": None}
        return {**self.__dict__, "kernel": state}

    def __setstate__(self, state):
        from triton.compiler import CompiledKernel
        kernel = CompiledKernel.__new__(CompiledKernel)
        kernel.__dict__.update({**state["kernel"], "metadata": _deserialize_metadata(state["kernel"]["metadata"]),
                                "packed_metadata": _deserialize_metadata(state["kernel"]["packed_metadata"])})
        self.__dict__.update(state)
        self.kernel = kernel


def send_from_worker(kernel):
    """The compiled kernel as the parent process receives it from a compile worker."""
    old = prepare_for_pickle(kernel.src.fn)
    try:
        data = pickle.dumps(CompileResult(kernel))
    finally:
        restore_after_unpickle(kernel.src.fn, old)
    return pickle.loads(data).kernel


def make_launcher(binary, constants, grid_x, enter_hook=None, exit_hook=None):
    """TritonCompileResult.make_launcher for Triton >= 3.2 (attrs dict): a function of the runtime
    arguments and the stream, calling binary.run with every parameter, constexprs written in as their
    values. grid_x: the Python expression of the x grid (Inductor's GridExpr)."""
    fn = binary.src.fn
    binary._init_handles()
    known = {fn.arg_names[i] for i in fn.constexprs}
    implicit = (known | {"num_warps", "num_stages"}) & set(constants)
    def_args = [a for a in fn.arg_names if a not in implicit]
    call_args = [repr(constants[a]) if a in implicit else a for a in fn.arg_names]
    launch_metadata = (f"bin.launch_metadata((grid_0, grid_1, grid_2), stream, {', '.join(call_args)})"
                       if enter_hook else "None")
    code = "\n".join([
        f"def launcher({', '.join(def_args)}, stream):",
        f"    grid_0 = {grid_x}",
        "    grid_1 = 1",
        "    grid_2 = 1",
        f"    runner(grid_0, grid_1, grid_2, stream, function, metadata, {launch_metadata}, launch_enter_hook, "
        f"launch_exit_hook, {', '.join(call_args)})",
    ])
    scope = {"bin": binary, "runner": binary.run, "function": binary.function, "metadata": binary.packed_metadata,
             "launch_enter_hook": enter_hook, "launch_exit_hook": exit_hook}
    exec(code, scope)
    return scope["launcher"]
