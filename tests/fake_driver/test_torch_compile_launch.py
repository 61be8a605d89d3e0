"""The compatibility mode's compiled kernel launched as torch's Inductor launches it
(docs/torch-compile.md): the launcher TritonCompileResult.make_launcher generates calls
binary.run(grid_0, grid_1, grid_2, stream, function, packed_metadata, launch_metadata,
launch_enter_hook, launch_exit_hook, *every parameter), after the kernel came back from a
compile worker (pickled) and _init_handles() loaded it. What reaches cuLaunchKernel is checked
through the fake driver."""
import os
import sys

import pytest
import torch

import tessera
import tessera.compat

TESTS_PYTHON = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python")
P = 0x7F0000001000


@pytest.fixture(scope="module")
def triton():
    tessera.compat.install(process_wide=True)
    sys.path.insert(0, TESTS_PYTHON)
    try:
        import triton
        yield triton
    finally:
        sys.path.remove(TESTS_PYTHON)
        for name in [n for n in sys.modules if n.startswith("inductor_style.")]:
            del sys.modules[name]
        tessera.compat.uninstall()


@pytest.fixture(scope="module")
def generated(triton):
    import inductor_style.generated
    return inductor_style.generated


@pytest.fixture(scope="module")
def contract(triton):
    import inductor_style.contract
    return inductor_style.contract


def tensors(n, dtype=torch.float32, step=4096):
    return [torch.Tensor(P + step * i, dtype) for i in range(n)]


def test_inductors_launcher_reaches_the_driver(fake, triton, generated, contract):
    k = contract.send_from_worker(contract.compile_case(triton, generated, "triton_poi_fused_add_gelu_0"))
    launcher = contract.make_launcher(k, {"XBLOCK": 256}, "-((xnumel) // -(256))")
    assert (k.n_regs, k.n_spills, k.n_max_threads) == (32, 0, 1024)  # the fake driver's function attributes
    x, b = tensors(2, torch.bfloat16)
    out = torch.Tensor(P + 0x100000, torch.float32)
    launcher(x, b, out, 1040, stream=0x5000)  # xnumel: a multiple of 16, as its attrs say
    last = fake.last()
    assert last["kernel"] == "triton_poi_fused_add_gelu_0"
    assert last["grid"] == (5, 1, 1) and last["block"] == (128, 1, 1) and last["stream"] == 0x5000
    assert last["params"] == [(8, P), (8, P + 4096), (8, P + 0x100000), (4, 1040)]
    assert last["shared_bytes"] == k.metadata.shared == 0
    # run() also takes the runtime arguments alone (Triton's launchers before constexprs were passed)
    k.run(1, 1, 1, 0x6000, k.function, k.packed_metadata, None, None, None, x, b, out, 64)
    assert fake.last()["params"][3] == (4, 64) and fake.last()["grid"] == (1, 1, 1)


def test_a_persistent_reduction_launches_with_its_shared_memory(fake, triton, generated, contract):
    k = contract.send_from_worker(contract.compile_case(triton, generated, "triton_per_fused_native_layer_norm_1"))
    launcher = contract.make_launcher(k, {"XBLOCK": 8}, "-((xnumel) // -(8))")
    t = tensors(5)
    launcher(*t, 96, 64, stream=0)
    last = fake.last()
    assert last["kernel"] == "triton_per_fused_native_layer_norm_1"
    assert last["grid"] == (12, 1, 1) and last["block"] == (128, 1, 1)
    assert last["shared_bytes"] == k.metadata.shared == k.packed_metadata[2] > 0
    assert [v for _, v in last["params"]] == [P + 4096 * i for i in range(5)] + [96, 64]


def test_a_size_specialised_to_1_is_passed_and_checked(fake, triton, generated, contract):
    k = contract.send_from_worker(contract.compile_case(triton, generated, "triton_poi_fused_clamp_mul_4"))
    launcher = contract.make_launcher(k, {"XBLOCK": 128, "ks0": 1}, "-((xnumel) // -(128))")
    x, out = tensors(2)
    launcher(x, out, 1, 300, stream=0)
    last = fake.last()
    assert last["grid"] == (3, 1, 1) and last["params"][:2] == [(8, P), (8, P + 4096)]
    assert last["params"][-1] == (4, 300)
    count = fake.count
    with pytest.raises(ValueError, match=r"argument 'ks0' is 2, but the kernel was compiled for the value 1"):
        launcher(x, out, 2, 300, stream=0)
    assert fake.count == count


def test_launch_hooks_get_the_launch_metadata(fake, triton, generated, contract):
    seen = []
    triton.knobs.runtime.launch_enter_hook = lambda md: seen.append(("enter", md))
    try:
        k = contract.send_from_worker(contract.compile_case(triton, generated, "triton_red_fused_sum_3"))
        launcher = contract.make_launcher(k, {"XBLOCK": 1, "R0_BLOCK": 128}, "xnumel",
                                          enter_hook=triton.knobs.runtime.launch_enter_hook,
                                          exit_hook=lambda md: seen.append(("exit", md)))
        x, out = tensors(2)
        launcher(x, out, 7, 300, stream=0x77)
    finally:
        triton.knobs.runtime.launch_enter_hook = None
    assert fake.last()["grid"] == (7, 1, 1)
    assert [event for event, _ in seen] == ["enter", "exit"]
    md = seen[0][1]
    assert md["name"] == "triton_red_fused_sum_3" and md["grid"] == (7, 1, 1) and md["stream"] == 0x77
    assert k.launch_metadata((1, 1, 1), 0, x, out, 7, 300, 1, 128) is None  # no hook: None, as Triton's


def test_bad_arguments_stop_before_the_driver(fake, triton, generated, contract):
    k = contract.send_from_worker(contract.compile_case(triton, generated, "triton_per_fused__softmax_2"))
    k._init_handles()
    x, out = tensors(2)
    count = fake.count
    with pytest.raises(TypeError, match=r"triton_per_fused__softmax_2\(\) takes 4 arguments"):
        k.run(1, 1, 1, 0, k.function, k.packed_metadata, None, None, None, x, out, 16)
    assert fake.count == count
    with pytest.raises(TypeError, match=r"triton_per_fused__softmax_2.run\(\) takes grid_0, grid_1, grid_2, stream, "
                                        r".*; 4 given"):
        k.run(1, 1, 1, 0)
    assert fake.count == count
    k[(2,)](x, out, 16, 32)
    assert fake.last()["grid"] == (2, 1, 1) and fake.last()["block"] == (64, 1, 1)


def test_sizes_and_scalars_of_dynamic_shapes(fake, triton, generated, contract):
    """i64 sizes (negative ones sign-extended), an fp32 scalar given as a float or an int."""
    import struct
    k = contract.send_from_worker(contract.compile_case(triton, generated, "triton_poi_fused_mul_6"))
    launcher = contract.make_launcher(k, {"XBLOCK": 128}, "-((xnumel) // -(128))")
    x, out = tensors(2)
    launcher(x, out, 3 << 33, 0.5, 1000, stream=0)
    last = fake.last()
    assert last["grid"] == (8, 1, 1)
    assert last["params"] == [(8, P), (8, P + 4096), (8, 3 << 33), (4, struct.unpack("<I", struct.pack("<f", 0.5))[0]),
                              (8, 1000)]
    launcher(x, out, -5, 2, 100, stream=0)  # an int for the fp32 scalar: converted, as Triton's launcher does
    assert fake.last()["params"][2:] == [(8, (1 << 64) - 5), (4, struct.unpack("<I", struct.pack("<f", 2.0))[0]),
                                         (8, 100)]
