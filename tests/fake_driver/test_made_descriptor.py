"""A kernel that makes its tensor descriptors (tl.make_tensor_descriptor) through the fake
CUDA driver: it takes exactly its own parameters (no hidden global-scratch pointer: the
descriptors become masked loads and stores, docs/tma.md) and launches with or without an
allocator set, which is never called."""
import torch

import tessera
import kernels as K

P = 0x7F0000001000  # 16-byte aligned "device pointers" (the fake driver never dereferences them)


def test_launch_takes_no_scratch_and_calls_no_allocator(fake):
    calls = []
    x, y = torch.Tensor(P, torch.float32), torch.Tensor(P + 65536, torch.float32)
    before = fake.count
    K.made_descriptor_copy[(4, )](x, y, 256, 64, 64, 64)  # no allocator set: Triton would raise here
    tessera.set_allocator(lambda size, alignment, stream: calls.append((size, alignment, stream)))
    try:
        K.made_descriptor_copy[(4, )](x, y, 256, 64, 64, 64)
    finally:
        tessera.set_allocator(None)
    assert fake.count == before + 2
    last = fake.last()
    assert last["kernel"] == "made_descriptor_copy"
    assert last["grid"] == (4, 1, 1)
    assert last["params"] == [(8, P), (8, P + 65536), (4, 256), (4, 64)]
    assert calls == []
