"""A uint8 torch tensor wrapped by tessera.reinterpret(t, tl.float8e4b15) (Triton's way to pass fp8e4b15,
which torch has no dtype for) launches through the fake driver as a *fp8e4b15 pointer, with a
specialisation of its own (the plain uint8 tensor gets a *u8 one)."""
import torch

import tessera
import tessera.language as tl

P = 0x7F0000002000


@tessera.jit
def widen(src, dst, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(src + offs).to(tl.float32))


def test_reinterpreted_uint8_tensor_is_an_fp8e4b15_pointer(fake):
    src = tessera.reinterpret(torch.Tensor(P, torch.uint8), tl.float8e4b15)
    dst = torch.Tensor(P + 4096, torch.float32)
    pgm = widen[(1,)](src, dst, BLOCK=128)
    last = fake.last()
    assert last["kernel"] == "widen" and last["grid"] == (1, 1, 1)
    assert "signature='*fp8e4b15:16,*fp32:16'" in repr(pgm), repr(pgm)
    plain = widen[(1,)](torch.Tensor(P, torch.uint8), dst, BLOCK=128)  # the bytes as uint8: another kernel
    assert "signature='*u8:16,*fp32:16'" in repr(plain), repr(plain)
