"""Helpers of the GPU suite: why it skips, what it runs on, and the checks
(poisoned outputs, relative errors in float64)."""
import functools


@functools.lru_cache(None)
def skip_reason():
    """None when torch, a CUDA GPU and the tessera extension are all there; else why not.
    A missing extension raises (a wrong build must fail, not skip)."""
    try:
        import torch
    except ImportError as e:
        return f"torch is not installed ({e})"
    if not torch.cuda.is_available():
        return "torch sees no CUDA GPU (torch.cuda.is_available() is False)"
    import tessera
    if tessera._C is None:
        return None  # not a reason to skip: extension_error() makes every test fail
    if not tessera.driver_available():
        return "tessera finds no CUDA driver: " + tessera._C.driver_status()["error"]
    return None


def extension_error():
    """Why tessera._C cannot be imported (None when it can)."""
    import tessera
    if tessera._C is not None:
        return None
    from tessera._loader import missing_message
    return missing_message(tessera._C_error)


def describe():
    reason = skip_reason()
    if reason:
        return f"skipping every test: {reason}"
    if extension_error():
        return "every test fails: " + extension_error()
    import torch
    import tessera
    props = tessera._C.device_properties(torch.cuda.current_device())
    return (f"{props['name']} ({props['arch']}, {props['multiprocessor_count']} SMs), tessera target "
            f"{tessera._C.target_arch(torch.cuda.current_device())}, torch {torch.__version__}, "
            f"CUDA driver {tessera._C.driver_version()}, {tessera._C.version()}")


def poisoned(shape, dtype, device="cuda"):
    """An output buffer full of NaN: a kernel that does not write an element fails the check."""
    import torch
    if isinstance(shape, int):
        shape = (shape,)
    return torch.full(tuple(shape), float("nan"), dtype=dtype, device=device)


def rel_err(out, ref):
    """||out - ref|| / ||ref|| in float64 (inf when out has NaNs, i.e. unwritten elements)."""
    import torch
    out64, ref64 = out.double(), ref.double()
    if torch.isnan(out64).any():
        return float("inf")
    den = torch.linalg.vector_norm(ref64).item()
    num = torch.linalg.vector_norm(out64 - ref64).item()
    return num / den if den else num


def assert_rel_err(out, ref, tol, what=""):
    err = rel_err(out, ref)
    assert err <= tol, f"{what}: relative error {err:.3e} > {tol:.0e}"


@functools.lru_cache(None)
def real_triton():
    """The real Triton package (torch's), or None where it is missing or is tessera's
    compatibility mode (python/tessera_as_triton.pth installed)."""
    try:
        import triton
    except ImportError:
        return None
    if "tessera" in getattr(triton, "__name__", "") or "tessera" in str(getattr(triton, "__file__", "")):
        return None
    return triton


def kernels_through_triton(path, tmp_dir):
    """The module of a tessera kernel file (`import tessera`, `import tessera.language as tl`,
    `@tessera.jit`) compiled by the real Triton: the same text with `tessera` bound to triton.
    None without Triton. tmp_dir holds the copy (Triton's @jit reads the source file)."""
    import importlib.util
    import pathlib
    if real_triton() is None:
        return None
    text = pathlib.Path(path).read_text()
    text = text.replace("import tessera.language as tl", "import triton.language as tl")
    text = text.replace("import tessera\n", "import triton as tessera\n")
    copy = pathlib.Path(tmp_dir) / ("triton_" + pathlib.Path(path).name)
    copy.write_text(text)
    spec = importlib.util.spec_from_file_location(copy.stem, copy)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def error_against(out, ref):
    """(max, mean) of |out - ref| in float64."""
    err = (out.double() - ref).abs()
    return err.max().item(), err.mean().item()


def assert_error_as_triton(what, ours, theirs, ref, slack=2.0, floor=0.0):
    """Our output's error against the float64 reference `ref` is at most `slack` times Triton's
    (max and mean, each plus `floor`); both are printed."""
    (om, oa), (tm, ta) = error_against(ours, ref), error_against(theirs, ref)
    print(f"{what}: max / mean error tessera {om:.3g} / {oa:.3g}, Triton {tm:.3g} / {ta:.3g}")
    assert om <= slack * tm + floor, f"{what}: max error {om:.3g}, Triton's {tm:.3g}"
    assert oa <= slack * ta + floor, f"{what}: mean error {oa:.3g}, Triton's {ta:.3g}"
