"""The bad-input catalogue, Python API misuse: tessera.jit, tessera.compile,
@autotune and @heuristics given the wrong kind of argument. Each case is one
clear TypeError / ValueError naming the argument and what it expects, never a
bare AttributeError, a pybind11 list of overloads, or a silent acceptance
(docs/errors.md lists them). All run without a GPU: the errors come before any
compile or launch."""
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT))

import tessera  # noqa: E402
from kernels.vector_add import add_kernel  # noqa: E402

SIG = "*fp32:16,*fp32:16,*fp32:16,i32"
PARAMS = "x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE"
CONFIGS = [tessera.Config({"BLOCK_SIZE": 128}), tessera.Config({"BLOCK_SIZE": 256})]


class FakeCudaArray:
    def __init__(self, ptr=0x10000):
        self.__cuda_array_interface__ = {"shape": (16,), "typestr": "<f4", "data": (ptr, False), "version": 3,
                                         "strides": None}


D = FakeCudaArray()


def raises_exactly(exc, message, fn):
    with pytest.raises(exc) as info:
        fn()
    assert str(info.value) == message
    return info.value


def never_timed(call):
    raise AssertionError("nothing may be benchmarked")


# ------------------------------------------------------------------ tessera.jit

@pytest.mark.parametrize("value, shown", [(42, "int 42"), ("add_kernel", "str 'add_kernel'"),
                                          (print, "builtin_function_or_method <built-in function print>")])
def test_jit_of_something_that_is_not_a_function(value, shown):
    raises_exactly(TypeError, "tessera.jit() takes a Python function (write @tessera.jit above a def), got " + shown,
                   lambda: tessera.jit(value))


# ------------------------------------------------------------------ tessera.compile

def test_compile_constexprs_not_a_dict():
    raises_exactly(TypeError, "tessera.compile(): constexprs must be a dict {name: value}, got list [('BLOCK', 256)]",
                   lambda: tessera.compile(add_kernel, SIG, [("BLOCK", 256)]))


def test_compile_signature_not_a_string():
    raises_exactly(TypeError, 'tessera.compile(): signature must be a string like "*fp32:16,i32" or a list of such '
                              "entries, got int 42",
                   lambda: tessera.compile(add_kernel, signature=42, constexprs={"BLOCK_SIZE": 256}))


def test_compile_signature_entry_not_a_string():
    raises_exactly(TypeError, 'tessera.compile(): signature[3] must be a string like "*fp32:16" or "i32", got int 32',
                   lambda: tessera.compile(add_kernel, ["*fp32", "*fp32", "*fp32", 32], {"BLOCK_SIZE": 256}))


def test_compile_target_not_a_string():
    raises_exactly(TypeError, 'tessera.compile(): target must be a string like "sm_90a" ("" or None: the current '
                              "GPU's), got int 90",
                   lambda: tessera.compile(add_kernel, SIG, {"BLOCK_SIZE": 256}, target=90))


@pytest.mark.parametrize("options, exc, message", [
    ({"num_warps": "4"}, TypeError, "tessera.compile(): num_warps must be an int (a power of 2 between 1 and 32), "
                                    "got str '4'"),
    ({"num_warps": -4}, ValueError, "num_warps must be a power of 2 between 1 and 32, got -4"),
    ({"num_stages": 0}, ValueError, "tessera.compile(): num_stages must be a positive int, got 0"),
    ({"num_stages": 2.5}, TypeError, "tessera.compile(): num_stages must be an int, got float 2.5"),
    ({"maxnreg": -1}, ValueError, "maxnreg must be between 16 and 255 registers a thread (or 0: no limit), got -1"),
    ({"kernel": 7}, TypeError, "tessera.compile(): kernel must be the name of a @jit function (a string), got int 7"),
])
def test_compile_option_of_the_wrong_type(options, exc, message):
    raises_exactly(exc, message, lambda: tessera.compile(add_kernel, SIG, {"BLOCK_SIZE": 256}, **options))


# ------------------------------------------------------------------ @autotune

def test_autotune_config_given_as_a_dict():
    raises_exactly(TypeError, "autotune(): configs[0] must be a tessera.Config, got dict {'BLOCK': 256} "
                              "(write tessera.Config({'BLOCK': 256}))",
                   lambda: tessera.autotune(configs=[{"BLOCK": 256}], key=["n_elements"]))


def test_autotune_configs_not_a_list():
    raises_exactly(TypeError, "autotune(): configs must be a list of tessera.Config, got one Config "
                              "(write configs=[...])",
                   lambda: tessera.autotune(configs=CONFIGS[0], key=["n_elements"]))


def test_autotune_with_no_configs_is_one_default_config():
    # Triton's rule: no configs is one Config({}) (num_warps 4, num_stages 3), not an error.
    tuned = tessera.autotune(configs=[], key=["n_elements"])(add_kernel)
    assert [(c.kwargs, c.num_warps, c.num_stages) for c in tuned.configs] == [({}, 4, 3)]


def test_autotune_key_given_as_a_string():
    # Triton iterates the string letter by letter and drops the letters that are no parameter.
    raises_exactly(TypeError, "autotune(): key must be a list of parameter names, got the string 'n_elements' "
                              "(write key=['n_elements'])",
                   lambda: tessera.autotune(configs=CONFIGS, key="n_elements"))


def test_autotune_key_entry_of_the_wrong_type():
    raises_exactly(TypeError, "autotune(): key[1] must be a parameter name or a (name, function) pair, got int 3",
                   lambda: tessera.autotune(configs=CONFIGS, key=["n_elements", 3]))


def test_autotune_key_that_names_no_parameter():
    # Left out of the key, as Triton does (libraries keep stale keys), with a warning: a tuning at
    # n = 1000 then serves n = 100000 too.
    tuned = tessera.autotune(configs=CONFIGS, key=["N"], do_bench=lambda call: 1.0)(add_kernel)
    with pytest.warns(UserWarning) as record:
        tuned.tune(D, D, D, 1000, grid=(1,))
    assert [str(w.message) for w in record] == [
        f"autotune(): key 'N' is not a parameter of add_kernel (its parameters: {PARAMS}); it is left out of the "
        "key, as in Triton"]
    assert tuned.tuning_key({"n_elements": 1000}) == tuned.tuning_key({"n_elements": 100000})


def test_autotune_bucketed_key_that_names_no_parameter():
    tuned = tessera.autotune(configs=CONFIGS, key=[("n", tessera.next_power_of_2)], do_bench=lambda call: 1.0)(add_kernel)
    with pytest.warns(UserWarning, match=r"key 'n' is not a parameter of add_kernel .*left out of the key"):
        tuned.tune(D, D, D, 1000, grid=(1,))


def test_prune_that_keeps_no_config(tmp_path, monkeypatch):
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    tuned = tessera.autotune(configs=CONFIGS, key=["n_elements"], do_bench=never_timed,
                             prune_configs_by={"early_config_prune": lambda configs, named, **kw: []})(add_kernel)
    raises_exactly(ValueError, "add_kernel: prune_configs_by's early_config_prune kept none of the 2 configs; it "
                               "must return at least one tessera.Config",
                   lambda: tuned.tune(D, D, D, 1000, grid=(1,)))


def test_prune_configs_by_with_a_misspelt_entry():
    raises_exactly(ValueError, "autotune(): prune_configs_by has no entry 'early_prune' (its entries: "
                               "early_config_prune, perf_model, top_k)",
                   lambda: tessera.autotune(configs=CONFIGS, key=["n_elements"],
                                            prune_configs_by={"early_prune": lambda c, n, **kw: c}))


def test_perf_model_top_k_of_zero(tmp_path, monkeypatch):
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    tuned = tessera.autotune(configs=CONFIGS, key=["n_elements"], do_bench=never_timed,
                             prune_configs_by={"perf_model": lambda **kw: 1.0, "top_k": 0})(add_kernel)
    raises_exactly(TypeError, "prune_configs_by['top_k'] must be an int >= 1 or a float <= 1.0, got int 0",
                   lambda: tuned.tune(D, D, D, 1000, grid=(1,)))


# ------------------------------------------------------------------ @heuristics

def test_heuristic_that_is_a_value_not_a_function():
    raises_exactly(TypeError, "heuristics(): the value for 'BLOCK' must be a function of the arguments "
                              "(lambda args: ...), got int 256",
                   lambda: tessera.heuristics({"BLOCK": 256}))


def test_heuristics_not_a_dict():
    raises_exactly(TypeError, "heuristics() takes a dict {name: function of the arguments}, got list ['BLOCK']",
                   lambda: tessera.heuristics(["BLOCK"]))
