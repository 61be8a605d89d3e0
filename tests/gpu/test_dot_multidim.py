"""On the GPU, against torch in float64: tl.dot of rank 2..6 (Triton's test_dot_multidim),
input_precision "bf16x3" / "bf16x6" on f32 operands (Triton's bf16 emulation: its accuracy
class, agreement with the interpreter, the bf16 tensor-core instructions), and tl.permute of a
4-D block in every order (test_trans_4d's shapes), for the GPU's own target and for sm_80.
The kernels are tests/python/lang_kernels/dot_multidim.py; the CPU side is
tests/python/test_dot_multidim.py."""
import importlib.util
import itertools
import pathlib
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402
import tessera.language as tl  # noqa: E402

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

_spec = importlib.util.spec_from_file_location(
    "dot_multidim", pathlib.Path(__file__).resolve().parents[1] / "python/lang_kernels/dot_multidim.py")
kernels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernels)

SIG4 = "*fp32:16,*fp32:16,*fp32:16,*fp32:16"
TARGETS = ["", "sm_80"]  # "": the GPU's own


@pytest.mark.parametrize("target", TARGETS, ids=["native", "sm_80"])
@pytest.mark.parametrize("trans_b", [False, True])
@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("rank", [2, 3, 4, 5, 6])
def test_dot_multidim_as_triton(rank, trans_a, trans_b, target):
    # bf16 integers in [-4, 4] (exact), plus an accumulator: every sum is exact.
    shape = (2,) * (rank - 2) + (32, 32)
    g = torch.Generator(device="cuda").manual_seed(rank)
    a, b, acc = (torch.randint(-4, 5, shape, device="cuda", generator=g).float() for _ in range(3))
    z = torch.full(shape, float("nan"), device="cuda")
    k = tessera.compile(kernels.dot_multidim_kernel, signature=SIG4, target=target,
                        constexprs=dict(RANK=rank, TRANS_A=int(trans_a), TRANS_B=int(trans_b), IN=tl.bfloat16,
                                        USE_ACC=1, OUT=tl.float32, PRECISION="tf32"))
    k[(1,)](a, b, acc, z)
    torch.cuda.synchronize()
    x = a.transpose(-1, -2) if trans_a else a
    y = b.transpose(-1, -2) if trans_b else b
    assert torch.equal(z.double(), x.double() @ y.double() + acc.double())


def run_precision(precision, target, M=64, N=64, K=64, x=None, y=None, chain=False):
    g = torch.Generator(device="cuda").manual_seed(3)
    x = torch.randn((M, K), device="cuda", generator=g) if x is None else x
    y = torch.randn((K, N), device="cuda", generator=g) if y is None else y
    acc = torch.zeros((M, N), device="cuda")
    z = torch.full((M, N), float("nan"), device="cuda")
    k = tessera.compile(kernels.dot_precision_kernel, signature=SIG4, target=target, num_warps=4,
                        constexprs=dict(M=M, N=N, K=K, PRECISION=precision, USE_ACC=0, CHAIN=int(chain)))
    k[(1,)](x, y, acc, z)
    torch.cuda.synchronize()
    return x, y, z, k


@pytest.mark.parametrize("target", TARGETS, ids=["native", "sm_80"])
@pytest.mark.parametrize("precision, bound", [("bf16x3", 3e-5), ("bf16x6", 1e-5)])
def test_bf16xn_against_torch(precision, bound, target):
    x, y, z, k = run_precision(precision, target)
    ref = x.double() @ y.double()
    magnitude = x.double().abs() @ y.double().abs()
    err = ((z.double() - ref).abs() / magnitude).max().item()
    one_pass = ((x.bfloat16().double() @ y.bfloat16().double() - ref).abs() / magnitude).max().item()
    assert err <= bound and err < one_pass / 50, (err, one_pass)
    # The interpreter computes the same decomposition (each bf16 dot summed in float64).
    host = np.full(tuple(z.shape), np.nan, np.float32)
    interp = tessera.jit(kernels.dot_precision_kernel.fn, interpret=True)
    interp[(1,)](x.cpu().numpy(), y.cpu().numpy(), np.zeros_like(host), host, M=64, N=64, K=64,
                 PRECISION=precision, USE_ACC=0, CHAIN=0)
    assert (np.abs(z.cpu().numpy() - host) <= 1e-5 * magnitude.cpu().numpy()).all()
    assert re.search(r'(mma|wgmma.mma_async).sync.aligned.m\d+n\d+k16(?:.row.col)?.f32.bf16.bf16', k.asm["ptx"])


@pytest.mark.parametrize("target", TARGETS, ids=["native", "sm_80"])
@pytest.mark.parametrize("precision, bound", [("bf16x3", 3e-5), ("bf16x6", 1e-5)])
def test_bf16xn_k_loop_against_torch(precision, bound, target):
    M, N, K = 300, 200, 500
    g = torch.Generator(device="cuda").manual_seed(11)
    x, y = torch.randn((M, K), device="cuda", generator=g), torch.randn((K, N), device="cuda", generator=g)
    z = torch.full((M, N), float("nan"), device="cuda")
    k = tessera.compile(kernels.matmul_precision_kernel, signature="*fp32:16,*fp32:16,*fp32:16,i32,i32,i32",
                        target=target, num_warps=4, num_stages=3,
                        constexprs=dict(PRECISION=precision, BM=128, BN=128, BK=32))
    k[(tessera.cdiv(M, 128), tessera.cdiv(N, 128))](x, y, z, M, N, K)
    torch.cuda.synchronize()
    ref = x.double() @ y.double()
    err = ((z.double() - ref).abs() / (x.double().abs() @ y.double().abs())).max().item()
    assert err <= bound, err


@pytest.mark.parametrize("precision", ["bf16x3", "bf16x6"])
@pytest.mark.parametrize("size", [32, 64])
def test_bf16xn_chain_dot_as_test_dot(precision, size):
    g = torch.Generator(device="cuda").manual_seed(17)
    x, y = (torch.randn((size, size), device="cuda", generator=g) * 0.1 for _ in range(2))
    x, y, z, _ = run_precision(precision, "", size, size, size, x, y, chain=True)
    ref = (x.double() @ y.double()) @ y.double()
    torch.testing.assert_close(z.double(), ref, rtol=0.01, atol=1e-3)  # test_dot's tolerance


@pytest.mark.parametrize("precision", ["bf16x3", "bf16x6"])
def test_bf16xn_infinite_operand(precision):
    x = torch.ones((64, 64), device="cuda")
    x[3, 5] = float("inf")
    y = torch.full((64, 64), 0.5, device="cuda")
    _, _, z, _ = run_precision(precision, "", x=x, y=y)
    assert torch.isposinf(z[3]).all()
    rest = torch.cat([z[:3], z[4:]])
    assert torch.equal(rest, torch.full_like(rest, 32.0))


@pytest.mark.parametrize("target", TARGETS, ids=["native", "sm_80"])
@pytest.mark.parametrize("shape", [(2, 2, 8, 64), (4, 4, 4, 16)])
def test_permute_4d_every_order(shape, target):
    x = torch.arange(int(np.prod(shape)), device="cuda", dtype=torch.int32)
    for i, perm in enumerate(itertools.permutations(range(4))):
        out = torch.zeros_like(x)
        k = tessera.compile(kernels.permute_kernel, signature="*i32:16,*i32:16", target=target, num_warps=8,
                            constexprs=dict(S0=shape[0], S1=shape[1], S2=shape[2], S3=shape[3], P0=perm[0],
                                            P1=perm[1], P2=perm[2], P3=perm[3], FORM=i % 4))
        k[(1,)](x, out)
        torch.cuda.synchronize()
        assert torch.equal(out, x.reshape(shape).permute(perm).reshape(-1)), perm
