"""tk.attention_forward on an sm_90a device (the fake driver's default) with the stand-in torch:
where K and V are packed as (B, H_KV, N_KV, D) and N_KV is a multiple of the TMA table's
BLOCK_N, the wrapper launches attn_fwd_kernel with TMA=True and two tensor descriptors over the
(B * H_KV * N_KV, D) view of K and V (encoded by the driver); otherwise the pointer kernel; a
config asking for TMA on inputs it cannot read is one ValueError saying why."""
import pytest
import torch

import tessera
import tessera.kernels as tk

BF16 = 9  # CUtensorMapDataType


def qkv(B, H, Hk, N, Nk, D):
    q = torch.empty((B, H, N, D), dtype=torch.bfloat16)
    k, v = (torch.empty((B, Hk, Nk, D), dtype=torch.bfloat16) for _ in range(2))
    return q, k, v


def test_the_device_takes_the_tma_table():
    assert tessera._C.target_arch(0) == "sm_90a"
    assert tk.attention_config(128, wgmma=True, tma=True)["TMA"]
    assert not tk.attention_config(128, wgmma=True)["TMA"]  # only where the caller says K/V allow it


@pytest.mark.parametrize("D, block_n", [(64, 128), (128, 128)])
def test_packed_keys_go_through_two_descriptors(fake, D, block_n):
    B, H, Hk, N, Nk = 2, 4, 2, 300, 2048  # D128 causal up to 1024 keys keeps the pointer kernel
    q, k, v = qkv(B, H, Hk, N, Nk, D)
    maps = fake.tensor_map_count
    tk.attention_forward(q, k, v, causal=True)
    last = fake.last()
    assert last["kernel"] == "attn_fwd_kernel"
    assert fake.tensor_map_count == maps + 2  # K's and V's, encoded at the launch
    m = fake.last_tensor_map()  # V's; K's is the same map of another address
    assert m["data_type"] == BF16 and m["rank"] == 2 and m["address"] == v.data_ptr()
    assert m["global_dim"] == (D, B * Hk * Nk)  # innermost first
    assert m["global_strides"] == (2 * D,)  # bytes
    assert m["box_dim"] == (min(D, 64), block_n)


def test_d64_causal_up_to_1024_keys_takes_64_key_blocks(fake):
    q, k, v = qkv(1, 2, 2, 256, 1024, 64)  # HOPPER_FORWARD_TMA_BY_KEYS: 64 x 64 / 4 warps / 3 stages
    maps = fake.tensor_map_count
    tk.attention_forward(q, k, v, causal=True)
    assert fake.tensor_map_count == maps + 2 and fake.last_tensor_map()["box_dim"] == (64, 64)
    assert fake.last()["grid"][0] == 256 // 64
    tk.attention_forward(q, k, v)  # not causal: 128-key blocks
    assert fake.last_tensor_map()["box_dim"] == (64, 128)


def test_ragged_keys_and_unpacked_heads_take_the_pointer_kernel(fake):
    maps = fake.tensor_map_count
    q, k, v = qkv(1, 2, 2, 256, 1024, 128)  # D128 causal, 1024 keys: HOPPER_FORWARD_BY_KEYS' 64 x 64 blocks
    tk.attention_forward(q, k, v, causal=True)
    assert fake.last()["grid"][0] == 256 // 64
    q, k, v = qkv(1, 2, 2, 256, 200, 64)  # 200 keys: not a multiple of BLOCK_N
    tk.attention_forward(q, k, v)
    buffer = torch.empty((1, 256, 2, 64), dtype=torch.bfloat16)  # (B, N, H, D) memory seen as (B, H, N, D)
    q, kv = torch.empty((1, 2, 256, 64), dtype=torch.bfloat16), buffer.transpose(1, 2)
    tk.attention_forward(q, kv, kv)
    assert fake.tensor_map_count == maps
    assert fake.last()["kernel"] == "attn_fwd_kernel"


def test_tma_asked_for_on_inputs_it_cannot_read_is_an_error(fake):
    q, k, v = qkv(1, 2, 2, 256, 200, 64)
    with pytest.raises(ValueError, match="multiple of BLOCK_N"):
        tk.attention_forward(q, k, v, config={"TMA": True})
    buffer = torch.empty((1, 256, 2, 64), dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"k packed as \(B, H_KV, N_KV, D\)"):
        tk.attention_forward(torch.empty((1, 2, 256, 64), dtype=torch.bfloat16), buffer.transpose(1, 2),
                             buffer.transpose(1, 2), config={"TMA": True})


def test_overlap_reads_through_the_descriptors_too(fake):
    q, k, v = qkv(1, 2, 2, 256, 256, 64)
    maps = fake.tensor_map_count
    tk.attention_forward(q, k, v, config={"TMA": True, "OVERLAP": True})
    assert fake.tensor_map_count == maps + 2


def test_autotuned_forward_times_the_candidates_and_launches_the_winner(fake):
    """autotune=True: @tessera.autotune times AUTOTUNE_FORWARD (the table's blocks first) on K/V
    descriptors whose block shape each config's pre_hook sets, keyed by the power-of-two bucket
    of the number of keys, and launches the winner; a config with it is an error."""
    import sys
    A = sys.modules["tessera.kernels.attention"]
    q, k, v = qkv(1, 4, 2, 256, 1536, 64)  # a multiple of 128 keys: every candidate applies
    tk.attention_forward(q, k, v, causal=True, autotune=True)
    tuner = tk.attention_forward_autotuner(True, 64, True)
    assert set(c.kwargs["BLOCK_N"] for c in tuner.configs_timings) == {64, 128}
    assert len(tuner.configs_timings) == len(A.AUTOTUNE_FORWARD) and not tuner.failures
    # HOPPER_FORWARD_TMA's D64 entry (4 warps: no producer warpgroup)
    assert tuner.configs[0].kwargs == {"BLOCK_M": 64, "BLOCK_N": 128, "WARP_SPECIALIZE": False}
    best = tuner.best_config
    last = fake.last()
    assert last["kernel"] == "attn_fwd_kernel" and last["grid"][0] == 256 // best.kwargs["BLOCK_M"]
    assert fake.last_tensor_map()["box_dim"] == (64, best.kwargs["BLOCK_N"])
    timed = tuner.bench_count
    k2, v2 = (torch.empty((1, 2, 2048, 64), dtype=torch.bfloat16) for _ in range(2))
    tk.attention_forward(q, k2, v2, causal=True, autotune=True)  # 2048 keys: the same bucket
    assert tuner.bench_count == timed
    q4 = torch.empty((64, 4, 256, 64), dtype=torch.bfloat16)  # 64 times the query rows: tuned again
    k4, v4 = (torch.empty((64, 2, 2048, 64), dtype=torch.bfloat16) for _ in range(2))
    tk.attention_forward(q4, k4, v4, causal=True, autotune=True)
    assert tuner.bench_count == timed + len(A.AUTOTUNE_FORWARD)
    q3, k3, v3 = qkv(1, 4, 2, 256, 960, 64)  # 960 keys: only the 64-key blocks read whole blocks
    tk.attention_forward(q3, k3, v3, causal=True, autotune=True)
    assert {c.kwargs["BLOCK_N"] for c in tuner.configs_timings} == {64}
    with pytest.raises(ValueError, match="pass one"):
        tk.attention_forward(q, k, v, autotune=True, config={"BLOCK_M": 64})
