"""A stand-in for torch's torch/_inductor/runtime/triton_heuristics.py decorators, in their call form:
pointwise(size_hints=..., filename=__file__, triton_meta={...}, inductor_meta={...}). torch's return
a CachingAutotuner whose .fn is the @triton.jit function; these keep the metadata on the function
and return it, so that tests see what the front-end reads: the decorator lines above the kernel."""
import enum
import typing


class DeviceProperties(typing.NamedTuple):
    type: str
    index: int
    multi_processor_count: int
    cc: int
    major: typing.Optional[int] = None
    regs_per_multiprocessor: typing.Optional[int] = None
    max_threads_per_multi_processor: typing.Optional[int] = None
    warp_size: typing.Optional[int] = None


class ReductionHint(enum.Enum):
    INNER = 0
    OUTER = 1


def _keep(kind, **meta):
    def decorator(fn):
        fn.inductor_heuristic = (kind, meta)
        return fn
    return decorator


def pointwise(size_hints, triton_meta, tile_hint=None, filename=None, min_elem_per_thread=0, inductor_meta=None):
    return _keep("pointwise", size_hints=size_hints, triton_meta=triton_meta, inductor_meta=inductor_meta)


def persistent_reduction(size_hints, reduction_hint=False, triton_meta=None, filename=None, inductor_meta=None):
    return _keep("persistent_reduction", size_hints=size_hints, triton_meta=triton_meta, inductor_meta=inductor_meta)
