"""tk.matmul on an sm_90a device (the fake driver's default compute capability 9.0) with the
stand-in torch, end to end: for row-major operands the wrapper launches the TMA kernels --
matmul_tma_epilogue_kernel with an epilogue (docs/fusion.md), matmul_tma_kernel without --
compiled by tessera for sm_90a, autotuned over the Hopper configs (each compiled and timed with
its own descriptor blocks: the configs' pre_hook), their descriptors encoded by the driver;
tma=False and column-major operands launch the cp.async kernels."""
import importlib

import pytest
import torch

import tessera
import tessera.kernels as tk
import tessera.language as tl

MM = importlib.import_module("tessera.kernels.matmul")
P = 0x7F0000001000  # 16-byte aligned "device pointers" (never dereferenced)


@tessera.jit
def ep_bias_gelu(acc, bias):
    y = acc + bias
    return 0.5 * y * (1.0 + tl.erf(y * 0.7071067811865476))


@pytest.fixture(autouse=True)
def environment(monkeypatch):
    for name in ("TESSERA_MATMUL_TMA", "TESSERA_MATMUL_AUTOTUNE", "TESSERA_AUTOTUNE", "TESSERA_WGMMA"):
        monkeypatch.delenv(name, raising=False)


def operands(M, N, K, dtype=torch.bfloat16, b_strides=None):
    step = 1 << 26
    return (torch.Tensor(P, dtype, shape=(M, K)), torch.Tensor(P + step, dtype, shape=(K, N), strides=b_strides),
            torch.Tensor(P + 2 * step, dtype, shape=(M, N)), torch.Tensor(P + 3 * step, dtype, shape=(N,)))


def test_the_device_takes_the_hopper_table():
    assert tessera._C.target_arch(0) == "sm_90a"
    assert tk.matmul_configs() is tk.HOPPER_MATMUL_CONFIGS


def test_autotuned_runs_the_tma_kernels_with_every_config_timed(fake):
    """A small problem: the pruning keeps only tiles of at most 128 x 128, none of the shape the
    descriptors are made with (the table's first, 128 x 256); each still compiles and is timed."""
    M, N, K = 120, 128, 200
    a, b, out, bias = operands(M, N, K)
    before = fake.count
    assert tk.matmul(a, b, out, epilogue=ep_bias_gelu, epilogue_args=(bias,)) is out
    tuner = tk.matmul_epilogue_autotuner(ep_bias_gelu)
    kept = MM.prune_matmul_configs(tuner.configs, {"M": M, "N": N, "K": K}, NUM_SMS=132)  # no persistent one
    assert [MM.matmul_config_name(c) for c in kept] == ["128x128x64/w4/s3", "128x128x64/w4/s4",
                                                         "64x128x64/w4/s4", "64x64x64/w4/s3",
                                                         "128x128x64/w8/s3", "128x128x32/w4/s4"]
    assert not tuner.failures, tuner.failures
    assert set(tuner.configs_timings) == set(kept) and None not in tuner.configs_timings.values()
    assert fake.count > before + len(kept)  # the timed runs, then the winner
    last = fake.last()
    best = tuner.best_config.kwargs
    assert last["kernel"] == "matmul_tma_epilogue_kernel"
    assert last["grid"] == (tessera.cdiv(M, best["BLOCK_M"]) * tessera.cdiv(N, best["BLOCK_N"]), 1, 1)
    assert last["block"] == (32 * tuner.best_config.num_warps, 1, 1)
    # Two 128-byte descriptors, C, M, N, K, C's strides, then the bias (a row: strides 0, 1) and 9 zeros;
    # then each descriptor's hidden parameters: base, shape (i32), the leading stride (i64), padding (i32).
    assert [size for size, _ in last["params"]] == [128, 128, 8, 4, 4, 4, 4, 4, 8] + [4] * 11 + [8, 4, 4, 8, 4] * 2
    assert [value for _, value in last["params"][2:20]] == [P + (2 << 26), M, N, K, N, 1, P + (3 << 26), 0, 1] + [0] * 9
    assert [value for _, value in last["params"][20:]] == [P, M, K, K, 0, P + (1 << 26), K, N, N, 0]
    # The plain GEMM: matmul_tma_kernel, tuned the same way.
    tk.matmul(a, b, out)
    assert fake.last()["kernel"] == "matmul_tma_kernel"
    assert not tk.matmul_tma_autotuner().failures and None not in tk.matmul_tma_autotuner().configs_timings.values()


def test_forced_configs_tma_false_and_column_major(fake):
    M, N, K = 1000, 520, 264
    a, b, out, bias = operands(M, N, K)
    tk.matmul(a, b, out, epilogue=ep_bias_gelu, epilogue_args=(bias,), config="64x128x64/w4/s4")
    last = fake.last()
    assert last["kernel"] == "matmul_tma_epilogue_kernel" and last["grid"] == (16 * 5, 1, 1)
    assert fake.last_tensor_map()["box_dim"][:2] == (64, 64)  # B's 64 x 128 block: two 128-byte boxes of 64 rows
    tk.matmul(a, b, out, epilogue=ep_bias_gelu, epilogue_args=(bias,), config="64x128x64/w4/s4", tma=False)
    assert fake.last()["kernel"] == "matmul_epilogue_kernel"
    assert fake.last()["params"][:3] == [(8, P), (8, P + (1 << 26)), (8, P + (2 << 26))]
    b_col = operands(M, N, K, b_strides=(1, K))[1]
    tk.matmul(a, b_col, out, epilogue=ep_bias_gelu, epilogue_args=(bias,), config="64x128x64/w4/s4")
    assert fake.last()["kernel"] == "matmul_epilogue_kernel"
    tk.matmul(a, b, out, config="64x128x64/w4/s4")
    assert fake.last()["kernel"] == "matmul_tma_kernel"


def test_persistent_launches_as_many_programs_as_sms(fake):
    """persistent=True: matmul_tma_persistent_kernel on min(SMs, tiles) programs, NUM_SMS the
    device's SM count (the tile loop's step), with a producer warpgroup (8 + 4 warps, the asked-for
    4 stages cut to 3: the ring stays allocated while a tile is stored); without the TMA path it
    is one clear error."""
    sms = tessera._C.device_properties(-1)["multiprocessor_count"]
    M, N, K = 4096, 4096, 512
    a, b, out, bias = operands(M, N, K)
    tk.matmul(a, b, out, persistent=True, config="128x256x64/w8/s4")
    last = fake.last()
    assert last["kernel"] == "matmul_tma_persistent_kernel"
    assert last["grid"] == (min(sms, (M // 128) * (N // 256)), 1, 1)
    assert last["block"] == (384, 1, 1)
    tk.matmul(a, b, out, config="128x256x64/w8/s4/persistent")  # the config's name says it too
    assert fake.last()["kernel"] == "matmul_tma_persistent_kernel" and fake.last()["grid"] == last["grid"]
    tk.matmul(a, b, out, persistent=True)  # autotuned
    assert fake.last()["kernel"] == "matmul_tma_persistent_kernel"
    assert not tk.matmul_tma_persistent_autotuner().failures
    a2, b2, out2, _ = operands(100, 64, 64)  # fewer tiles than SMs: a program each
    tk.matmul(a2, b2, out2, persistent=True, config="64x64x64/w4/s3")
    assert fake.last()["grid"] == (2, 1, 1)
    with pytest.raises(ValueError, match="persistent=True needs the TMA kernel"):
        tk.matmul(a, b, out, persistent=True, tma=False)
    with pytest.raises(ValueError, match="persistent=True needs the TMA kernel"):
        tk.matmul(a, b, out, epilogue=ep_bias_gelu, epilogue_args=(bias,), persistent=True)


def test_epilogue_persistent_forms(fake):
    """With an epilogue, a persistent config (forced as '.../persistent', or picked by the epilogue's
    autotuner where there are more tiles than SMs) launches matmul_tma_epilogue_kernel on one program
    an SM with a producer warpgroup, NUM_SMS the device's SM count."""
    sms = tessera._C.device_properties(-1)["multiprocessor_count"]
    M, N, K = 4096, 2048, 256
    a, b, out, bias = operands(M, N, K)
    tk.matmul(a, b, out, epilogue=ep_bias_gelu, epilogue_args=(bias,), config="128x128x64/w4/s3/persistent")
    last = fake.last()
    assert last["kernel"] == "matmul_tma_epilogue_kernel"
    assert last["grid"] == (sms, 1, 1) and last["block"] == (256, 1, 1)
    tk.matmul(a, b, out, epilogue=ep_bias_gelu, epilogue_args=(bias,))  # autotuned, persistent forms included
    tuner = tk.matmul_epilogue_autotuner(ep_bias_gelu)
    timed = [MM.matmul_config_name(c) for c in tuner.configs_timings]
    assert "128x128x64/w4/s3/persistent" in timed and "128x256x64/w8/s3/persistent" in timed
    assert not tuner.failures, tuner.failures
    best = tuner.best_config
    tiles = tessera.cdiv(M, best.kwargs["BLOCK_M"]) * tessera.cdiv(N, best.kwargs["BLOCK_N"])
    assert fake.last()["grid"] == ((min(sms, tiles) if best.kwargs.get("PERSISTENT") else tiles), 1, 1)
