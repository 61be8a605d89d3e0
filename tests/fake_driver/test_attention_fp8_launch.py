"""tk.attention_fp8 on an sm_90a device (the fake driver's default) with the stand-in torch: packed
K (B, H_KV, N_KV, D) and V^T (B, H_KV, D, N_KV) with N_KV a multiple of BLOCK_N launch
attn_fwd_fp8_kernel with TMA and a producer warpgroup and two fp8 tensor maps (K's over its
(B * H_KV * N_KV, D) view, V^T's over (B * H_KV * D, N_KV)); ragged keys, unpacked heads and
v_layout='bhnd' take the pointer kernel; TMA asked for where it cannot apply is one ValueError."""
import pytest
import torch

import tessera.kernels as tk

UINT8 = 0  # CUtensorMapDataType of fp8 (bytes)


def inputs(B, H, Hk, N, Nk, D, v_layout="vt"):
    q = torch.empty((B, H, N, D), dtype=torch.float8_e4m3fn)
    k = torch.empty((B, Hk, Nk, D), dtype=torch.float8_e4m3fn)
    v = torch.empty((B, Hk, D, Nk) if v_layout == "vt" else (B, Hk, Nk, D), dtype=torch.float8_e4m3fn)
    scales = [torch.empty((1,), dtype=torch.float32) for _ in range(3)]
    return q, k, v, scales


@pytest.mark.parametrize("D", [64, 128])
def test_packed_k_and_vt_go_through_two_fp8_descriptors(fake, D):
    B, H, Hk, N, Nk = 2, 4, 2, 300, 1024
    q, k, v, scales = inputs(B, H, Hk, N, Nk, D)
    maps = fake.tensor_map_count
    tk.attention_fp8(q, k, v, *scales, causal=True)
    last = fake.last()
    assert last["kernel"] == "attn_fwd_fp8_kernel"
    assert last["grid"][:2] == ((N + 127) // 128, B * H)
    assert fake.tensor_map_count == maps + 2
    m = fake.last_tensor_map()  # V^T's
    assert m["data_type"] == UINT8 and m["rank"] == 2 and m["address"] == v.data_ptr()
    assert m["global_dim"] == (Nk, B * Hk * D)  # innermost first
    assert m["global_strides"] == (Nk,)  # bytes
    assert m["box_dim"] == (128, D)


def test_ragged_keys_unpacked_heads_and_v_itself_take_the_pointer_kernel(fake):
    maps = fake.tensor_map_count
    q, k, v, scales = inputs(1, 2, 2, 256, 200, 128)  # 200 keys: not a multiple of BLOCK_N
    tk.attention_fp8(q, k, v, *scales)
    q, k, v, scales = inputs(1, 2, 2, 256, 256, 128, v_layout="bhnd")
    tk.attention_fp8(q, k, v, *scales, v_layout="bhnd")
    q, k, v, scales = inputs(1, 2, 2, 256, 256, 64)
    tk.attention_fp8(q, k.transpose(1, 2).transpose(1, 2), v.transpose(2, 3), *scales, v_layout="bhnd")
    assert fake.tensor_map_count == maps
    assert fake.last()["kernel"] == "attn_fwd_fp8_kernel"


def test_tma_asked_for_where_it_cannot_apply_is_an_error(fake):
    q, k, v, scales = inputs(1, 2, 2, 256, 200, 64)
    with pytest.raises(ValueError, match="multiple of BLOCK_N"):
        tk.attention_fp8(q, k, v, *scales, config={"TMA": True})
    q, k, v, scales = inputs(1, 2, 2, 256, 256, 64, v_layout="bhnd")
    with pytest.raises(ValueError, match="v_layout='vt'"):
        tk.attention_fp8(q, k, v, *scales, v_layout="bhnd", config={"TMA": True})


def test_e5m2_is_refused(fake):
    q, k, v, scales = inputs(1, 2, 2, 128, 128, 64)
    with pytest.raises(TypeError, match="float8_e5m2; attention_fp8 takes float8_e4m3fn only"):
        tk.attention_fp8(q, torch.empty((1, 2, 128, 64), dtype=torch.float8_e5m2), v, *scales)

