"""Triton 3.6's fp8e4b15 conversions on NVIDIA GPUs, as numpy: its inline PTX
(triton/language/extra/cuda/utils.py, convert_custom_float8_sm80) executed instruction by instruction on
packed registers, four bytes at a time. The tests of tessera's fp8e4b15 compare against these."""
import numpy as np


def _prmt(a, b, selector):
    """prmt.b32 (default mode): each result byte picks one of the 8 bytes of {b, a}."""
    source = (b.astype(np.uint64) << 32) | a.astype(np.uint64)
    out = np.zeros_like(a, dtype=np.uint32)
    for i in range(4):
        pick = (selector >> (4 * i)) & 0x7
        out |= (((source >> np.uint64(8 * pick)) & np.uint64(0xFF)).astype(np.uint32) << np.uint32(8 * i))
    return out


def _lop3(a, b, c, lut):
    out = np.zeros_like(a, dtype=np.uint32)
    for bit in range(8):
        if lut >> bit & 1:
            ta = a if bit & 4 else ~a
            tb = b if bit & 2 else ~b
            tc = c if bit & 1 else ~c
            out |= ta & tb & tc
    return out


def _pack4(bytes_):
    """uint8[4n] -> uint32[n] (element i of a group in byte i)."""
    return np.ascontiguousarray(bytes_.astype(np.uint8)).view(np.uint32)


def widen_to_f16(bits):
    """uint8 fp8e4b15 codes -> float16 (convert_fp8e4b15_to_float16)."""
    bits = np.asarray(bits, np.uint8)
    n = len(bits)
    x = _pack4(np.concatenate([bits, np.zeros(-n % 4, np.uint8)]))
    a0 = _prmt(np.zeros_like(x), x, 0x5746)
    b0 = a0 & np.uint32(0x7F007F00)
    b1 = a0 & np.uint32(0x00FF00FF)
    a1 = a0 & np.uint32(0x00800080)
    b0 = b0 >> np.uint32(1)
    b1 = b1 + a1
    out0 = _lop3(b0, np.full_like(b0, 0x80008000), a0, 0xF8)
    out1 = b1 << np.uint32(7)
    halves = np.stack([out0, out1], axis=1).reshape(-1).view(np.uint16)  # elements 0, 1 | 2, 3
    return halves[:n].view(np.float16)


def _f16x2_min(a, limit):
    """min.f16x2 on magnitudes (a has no sign bit): NaN gives the other operand."""
    out = np.zeros_like(a)
    for shift in (0, 16):
        h = ((a >> np.uint32(shift)) & np.uint32(0xFFFF)).astype(np.uint16).view(np.float16).astype(np.float32)
        m = np.where(np.isnan(h) | (h > np.float32(limit)), np.float32(limit), h).astype(np.float16)
        out |= m.view(np.uint16).astype(np.uint32) << np.uint32(shift)
    return out


def narrow_f16(values):
    """float16 -> uint8 fp8e4b15 codes (convert_float16_to_fp8e4b15 with min.f16x2, sm_80+)."""
    h = np.asarray(values, np.float16).view(np.uint16)
    n = len(h)
    h = np.concatenate([h, np.zeros(-n % 4, np.uint16)])
    pairs = np.ascontiguousarray(h).view(np.uint32)
    r1, r2 = pairs[0::2], pairs[1::2]  # $1: elements 0, 1; $2: elements 2, 3
    a0 = _f16x2_min(r1 & np.uint32(0x7FFF7FFF), 1.75)
    a1 = _f16x2_min(r2 & np.uint32(0x7FFF7FFF), 1.75)
    a0 = (a0 * np.uint32(2) + np.uint32(0x00800080)).astype(np.uint32)
    a1 = (a1 * np.uint32(2) + np.uint32(0x00800080)).astype(np.uint32)
    b0 = _lop3(r1, np.full_like(r1, 0x80008000), a0, 0xEA)
    b1 = _lop3(r2, np.full_like(r2, 0x80008000), a1, 0xEA)
    out = _prmt(b0, b1, 0x7531)
    return out.view(np.uint8)[:n]


def f32_to_f16_toward_zero(values):
    """cvt.rz.f16.f32. A NaN becomes the canonical 0x7FFF, sign dropped, as NVIDIA's GPUs convert it
    (and CUDA's host reference, cpu_float2half_rn); numpy would keep the sign."""
    x = np.asarray(values, np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        h = x.astype(np.float16)
        grew = np.abs(h.astype(np.float32)) > np.abs(x)
    stepped = (h.view(np.uint16) - np.uint16(1)).view(np.float16)
    return np.where(np.isnan(x), np.uint16(0x7FFF).view(np.float16), np.where(grew, stepped, h))


def narrow_f32(values):
    """float32 -> fp8e4b15 codes: to f16 toward zero, then convert_float16_to_fp8e4b15."""
    return narrow_f16(f32_to_f16_toward_zero(values))
