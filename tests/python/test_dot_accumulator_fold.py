"""`h += tl.dot(a, b)` where remove-layout-conversions left the dot's result in another layout
than the sum's (a convert_layout between the dot and the add: fla's chunk_gated_delta_rule_fwd_h,
whose state h starts from a loaded block) still folds into dot(a, b, h): the loop then carries h
in the #mma accumulator registers instead of converting two f32 blocks through shared memory every
iteration (compiler/passes/AccelerateDot.cpp, foldAccumulatorAdd). GPU check against torch:
tests/gpu/test_gated_state_loop.py."""
import re

import pytest

from lang_support import compile_and_assemble, compile_kernel

SIG = "*bf16:16,*bf16:16,*bf16:16,*fp32:16,*fp32:16,*bf16:16,*fp32:16,i32"


def loop_lines(ir):
    lines = ir.splitlines()
    start = next(i for i, line in enumerate(lines) if " = for " in line)
    depth, body = 0, []
    for line in lines[start:]:
        depth += line.count("{") - line.count("}")
        body.append(line)
        if depth == 0:
            break
    return body


# K != BT, so that the state [K, BV] and v [BT, BV] differ in shape
@pytest.mark.parametrize("K, BV, warps, stages", [(128, 32, 4, 2), (128, 64, 4, 3), (128, 32, 8, 2)])
def test_state_update_is_the_dot_accumulator(K, BV, warps, stages):
    ir = compile_kernel("gated_state_loop.py", "gated_state", SIG, {"K": K, "BV": BV, "BT": 64}, emit="ir-opt",
                        extra=["--num-warps", str(warps), "--num-stages", str(stages)])
    aliases = dict(re.findall(r"^(#L\d+) = (#\w+)", ir, re.M))
    body = loop_lines(ir)
    carried = re.search(r"<%dx%dxf32> (#L\d+)" % (K, BV), body[0]).group(1)
    assert aliases[carried] == "#mma", body[0]  # h stays in the accumulator registers
    f32_converts = [line for line in body if "convert_layout" in line and f"<{K}x{BV}xf32>" in line]
    assert f32_converts == [], f32_converts
    sums = [line for line in body if re.search(r"= add ", line) and f"<{K}x{BV}xf32>" in line]
    assert sums == [], sums  # the add became the dot's accumulator


@pytest.mark.parametrize("stages", [2, 3])
def test_gated_state_assembles(tmp_path, stages):
    ptx = compile_and_assemble(tmp_path, "gated_state_loop.py", "gated_state", SIG, {"K": 128, "BV": 32, "BT": 64},
                               extra=["--num-warps", "4", "--num-stages", str(stages)])
    assert "wgmma.mma_async" in ptx
