"""What a launch returns on the GPU: `pgm = kernel[grid](...)` is the CompiledKernel of the
specialisation that ran (as Triton's JITFunction.run returns its CompiledKernel), and its
attributes describe the kernel that ran: pgm.asm["ptx"], pgm.n_regs and pgm.n_spills (the
loaded function's attributes, as Triton reads them), pgm.metadata.shared (the dynamic shared
memory the launch asked for). The CPU tests of the same: tests/fake_driver/test_launch_returns.py."""
import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402
import tessera.language as tl  # noqa: E402
from kernels.vector_add import add_kernel  # noqa: E402


@tessera.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b))


def test_launch_returns_the_kernel_that_ran():
    a = torch.randn(64, 32, device="cuda", dtype=torch.float16)
    b = torch.randn(32, 64, device="cuda", dtype=torch.float16)
    c = torch.full((64, 64), float("nan"), device="cuda")
    pgm = dot_kernel[(1,)](a, b, c, M=64, N=64, K=32)
    torch.cuda.synchronize()
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-3)
    assert isinstance(pgm, tessera.CompiledKernel)
    ptx = pgm.asm["ptx"]
    assert ".visible .entry dot_kernel(" in ptx and "mma" in ptx
    attrs = pgm._init_handles()
    assert attrs["device"] == torch.cuda.current_device()
    # n_regs / n_spills: the loaded function's (CU_FUNC_ATTRIBUTE_NUM_REGS, LOCAL_SIZE_BYTES / 4).
    assert 0 < pgm.n_regs <= 255 and pgm.n_regs == attrs["n_regs"]
    assert pgm.n_spills == attrs["n_spills"] // 4
    # metadata.shared: the dynamic shared memory the launch asks for (the dot's operand tiles).
    assert pgm.metadata.shared > 0 and pgm.metadata.shared == attrs["shared_dynamic"]
    assert pgm.packed_metadata == (4, 1, pgm.metadata.shared)
    assert pgm.metadata.target == tessera._C.target_arch()
    assert pgm.asm["cubin"][:4] == b"\x7fELF"
    assert dot_kernel[(1,)](a, b, c, M=64, N=64, K=32) is pgm  # the same specialisation: the same object
    assert dot_kernel.run(a, b, c, M=64, N=64, K=32, grid=(1,), warmup=False) is pgm


def test_launch_returns_per_specialisation():
    n = 4096
    x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
    out = torch.empty_like(x)
    first = add_kernel[(n // 1024,)](x, y, out, n, BLOCK_SIZE=1024)
    again = add_kernel[(n // 1024,)](x, y, out, n, BLOCK_SIZE=1024)
    other = add_kernel[(n // 256,)](x, y, out, n, BLOCK_SIZE=256)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)
    assert again is first and other is not first
    assert first.metadata.constexprs == {"BLOCK_SIZE": 1024} and other.metadata.constexprs == {"BLOCK_SIZE": 256}
    assert first.n_regs > 0 and first.n_spills == 0 and first.metadata.shared == 0
    # The returned kernel launches again with the runtime arguments only.
    out.zero_()
    first[(n // 1024,)](x, y, out, n)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)
