"""GPU checks of the code paths added for real third-party kernels' speed (their PTX properties are
checked on the CPU): a row loop cut short by min() (tests/python/test_clamped_loop_ptx.py, whole and
cut groups), f32 division as div.full.f32 (tests/python/test_division_rounding.py) and attention over
a paged KV cache with 1-3 stages (tests/python/test_paged_attention_ptx.py), each against torch."""
import pathlib
import sys

import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python" / "lang_kernels"))

from division import divide  # noqa: E402
from grouped_rows import rotate_row_groups  # noqa: E402
from paged_attention import paged_attention  # noqa: E402


@pytest.mark.parametrize("n_rows", [32, 30, 29, 1])
@pytest.mark.parametrize("group", [4, 8])
def test_row_groups_whole_and_cut(n_rows, group):
    half = 64
    x0 = torch.randn(n_rows, 2 * half, device="cuda").to(torch.bfloat16)
    c = torch.randn(half, device="cuda").to(torch.bfloat16)
    s = torch.randn(half, device="cuda").to(torch.bfloat16)
    x = x0.clone()
    rotate_row_groups[(tessera.cdiv(n_rows, group) + 1,)](x, c, s, n_rows, ROW_STRIDE=x.stride(0), GROUP=group,
                                                          HALF=half)
    x1, x2 = x0[:, :half].float(), x0[:, half:].float()
    want = torch.cat([x1 * c.float() - x2 * s.float(), x2 * c.float() + x1 * s.float()], 1)
    torch.testing.assert_close(x.float(), want, rtol=2e-2, atol=5e-2)


@pytest.mark.parametrize("form", ["slash", "by_constant", "by_power_of_two", "reciprocal", "fdiv", "fdiv_ieee",
                                  "div_rn", "sigmoid"])
def test_division_forms(form):
    x = torch.randn(128, device="cuda") * 100
    y = torch.randn(128, device="cuda") + 3
    out = torch.empty_like(x)
    divide[(1,)](x, y, out, FORM=form, BLOCK=128)
    xd, yd = x.double(), y.double()
    want = {"slash": xd / yd, "by_constant": xd / 30, "by_power_of_two": xd / 32, "reciprocal": 1 / xd,
            "fdiv": xd / yd, "fdiv_ieee": xd / yd, "div_rn": xd / yd, "sigmoid": torch.sigmoid(xd)}[form]
    if form in ("fdiv_ieee", "div_rn", "by_power_of_two"):  # correctly rounded
        torch.testing.assert_close(out, want.float(), rtol=0, atol=0)
    else:  # div.full.f32: at most 2 ulp (sigmoid: and ex2.approx, whose relative error grows on tiny results)
        torch.testing.assert_close(out.double(), want, rtol=1e-5 if form == "sigmoid" else 3e-7, atol=1e-30)


@pytest.mark.parametrize("stages", [1, 2, 3])
@pytest.mark.parametrize("n_context", [1, 100, 1000])
def test_paged_attention(stages, n_context):
    M, D, page_size = 64, 128, 16
    n_pages = tessera.cdiv(n_context, page_size) + 3
    q = torch.randn(M, D, device="cuda").to(torch.bfloat16)
    kc = torch.randn(n_pages, D, page_size, device="cuda").to(torch.bfloat16)
    vc = torch.randn(n_pages, page_size, D, device="cuda").to(torch.bfloat16)
    table = torch.randperm(n_pages, generator=torch.Generator().manual_seed(1)).to(torch.int32).cuda()
    ctx = torch.tensor([n_context], dtype=torch.int32, device="cuda")
    out = torch.empty(M, D, device="cuda", dtype=torch.bfloat16)
    scale = D ** -0.5
    paged_attention[(1,)](q, kc, vc, table, ctx, out, scale, page_size, q.stride(0), kc.stride(0), kc.stride(1),
                          kc.stride(2), vc.stride(0), vc.stride(1), out.stride(0), BLOCK_M=M, HEAD_DIM=D, BLOCK_N=64,
                          num_warps=4, num_stages=stages)
    pos = torch.arange(n_context, device="cuda")
    pages = table.long()[pos // page_size]
    keys = kc[pages, :, pos % page_size].double()
    values = vc[pages, pos % page_size, :].double()
    p = torch.softmax(q.double() @ keys.T * scale, 1)
    torch.testing.assert_close(out.double(), p @ values, rtol=2e-2, atol=2e-2)
