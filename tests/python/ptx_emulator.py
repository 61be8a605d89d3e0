"""A small PTX emulator (numpy) for checking the PTX tessera emits without a GPU.

It runs one `.entry` of a PTX module over a set of CTAs, all their threads in lockstep: every register is a
numpy array with one element per (CTA, thread) lane, and each instruction is applied to every active lane
before the next one runs. Lockstep makes `bar.sync` a no-op and shared memory (one window per CTA) exact for
race-free code. Divergent branches are scheduled by "lowest PC first" (lanes reconverge where the code joins
again), which is right for the structured control flow LLVM emits; a `bar.sync` reached by only part of a CTA
is reported as an error.

Covered: the integer / logic / compare / select / conversion / f16 / f32 / f64 arithmetic of element-wise and
layout-converting kernels, ld/st on .param / .global / .shared (scalar and vector, predicated, cache hints and
createpolicy as no-ops), bra, shfl.sync, bar.sync, ret; and for mma.sync GEMMs: cp.async (copied at once, with
its zero fill; commit_group / wait_group are no-ops in lockstep), atom.global.add (lane after lane),
ldmatrix (x1/x2/x4, .trans) and
mma.sync.aligned.m16n8k16.row.col with f16/bf16 operands into f32 or f16 (computed in float64, rounded once;
the hardware's f16 accumulation may round in between); cvt.rn.satfinite.{e4m3,e5m2}x2.f32 (through ml_dtypes). Anything else raises NotImplementedError naming the
instruction, so a kernel is never half-run silently. fma.f32 is computed in float64 and rounded once (exact for
the product; the sum may round twice in rare ties).

    mem = GlobalMemory()
    x_addr = mem.alloc(np.arange(1024, dtype=np.float32))
    out_addr = mem.alloc(np.zeros(1024, np.float32))
    run_kernel(ptx_text, grid=(4,), block=(128,), args=[x_addr, out_addr, 1024], memory=mem)
    out = mem.read(out_addr, np.float32, 1024)
"""
import re

import numpy as np

__all__ = ["GlobalMemory", "run_kernel", "parse_entry"]


class GlobalMemory:
    """Flat global memory: allocations at 256-byte aligned addresses above a nonzero base."""

    BASE = 1 << 20

    def __init__(self):
        self.data = np.zeros(0, np.uint8)
        self.spans = []

    def alloc(self, array):
        raw = np.ascontiguousarray(array).view(np.uint8).reshape(-1)
        start = (self.data.size + 255) // 256 * 256
        self.data = np.concatenate([self.data, np.zeros(start - self.data.size + raw.size + 256, np.uint8)])
        self.data[start:start + raw.size] = raw
        self.spans.append((start, start + raw.size))
        return self.BASE + start

    def read(self, address, dtype, count):
        start = address - self.BASE
        return self.data[start:start + np.dtype(dtype).itemsize * count].view(dtype).copy()

    def offsets(self, addresses, width):
        off = addresses.astype(np.int64) - self.BASE
        if off.size and (off.min() < 0 or off.max() + width > self.data.size):
            bad = addresses[(off < 0) | (off + width > self.data.size)][0]
            raise IndexError(f"global access out of bounds at 0x{int(bad):x}")
        if off.size and not self._inside_spans(off, width):
            raise IndexError("global access outside every allocation")
        return off

    def _inside_spans(self, off, width):
        starts = np.array([s for s, _ in self.spans], np.int64)
        ends = np.array([e for _, e in self.spans], np.int64)
        k = np.searchsorted(starts, off, side="right") - 1
        return bool(np.all((k >= 0) & (off + width <= ends[np.clip(k, 0, None)])))


# ------------------------------------------------------------------------------------------------ parsing

_TYPES = {
    "pred": (1, "b"), "b8": (8, "u"), "b16": (16, "u"), "b32": (32, "u"), "b64": (64, "u"),
    "u8": (8, "u"), "u16": (16, "u"), "u32": (32, "u"), "u64": (64, "u"),
    "s8": (8, "s"), "s16": (16, "s"), "s32": (32, "s"), "s64": (64, "s"),
    "f16": (16, "f"), "bf16": (16, "bf"), "f32": (32, "f"), "f64": (64, "f"),
    "f16x2": (32, "f16x2"), "bf16x2": (32, "bf16x2"),
}


class Instr:
    __slots__ = ("pred", "neg", "op", "mods", "args", "text")

    def __init__(self, pred, neg, op, mods, args, text):
        self.pred, self.neg, self.op, self.mods, self.args, self.text = pred, neg, op, mods, args, text


def _split_args(s):
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def parse_entry(ptx, name=None):
    """(param names, instructions, labels, shared symbols) of the `.entry` called name (or the only one)."""
    text = re.sub(r"//[^\n]*", "", ptx)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    shared = {}
    for m in re.finditer(r"\.shared\s+(?:\.align\s+(\d+)\s+)?\.(\w+)\s+(\w+)\s*(?:\[(\d*)\])?", text):
        shared[m.group(3)] = 0  # each shared symbol of these kernels starts the CTA's window
    entries = list(re.finditer(r"\.entry\s+(\w+)\s*\((.*?)\)", text, flags=re.S))
    if name is not None:
        entries = [e for e in entries if e.group(1) == name]
    if len(entries) != 1:
        raise ValueError(f"expected one .entry {name or ''}, found {len(entries)}")
    entry = entries[0]
    params = [re.search(r"(\w+)\s*$", p.strip()).group(1) for p in entry.group(2).split(",") if p.strip()]
    body_start = text.index("{", entry.end())
    depth, i = 0, body_start
    while True:
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                break
        i += 1
    body = text[body_start + 1:i]
    instrs, labels = [], {}
    for stmt in body.replace("{\n", "\n").split(";"):
        stmt = stmt.strip()
        while True:  # labels precede a statement
            m = re.match(r"^([$\w]+):\s*", stmt)
            if not m:
                break
            labels[m.group(1)] = len(instrs)
            stmt = stmt[m.end():]
        stmt = stmt.strip().lstrip("{} \t\n")  # braces of nested scopes ({ .reg .b16 tmp; ... }), a closing one too
        while True:
            m = re.match(r"^([$\w]+):\s*", stmt)
            if not m:
                break
            labels[m.group(1)] = len(instrs)
            stmt = stmt[m.end():]
        if not stmt or stmt.startswith(".reg") or stmt.startswith(".local") \
                or stmt.startswith(".shared") or stmt.startswith(".pragma"):
            continue
        pred, neg = None, False
        m = re.match(r"^@(!?)(%?\w+)\s+", stmt)  # inline asm names its own predicates (tsr_p0)
        if m:
            neg, pred = m.group(1) == "!", m.group(2)
            stmt = stmt[m.end():]
        parts = stmt.split(None, 1)
        opcode = parts[0].split(".")
        args = _split_args(parts[1]) if len(parts) > 1 else []
        instrs.append(Instr(pred, neg, opcode[0], opcode[1:], args, stmt))
    return params, instrs, labels, shared


# ------------------------------------------------------------------------------------------------ values

def _as(bits, ty):
    """Raw uint64 bits -> numpy values of PTX type ty."""
    width, kind = _TYPES[ty]
    if kind == "u" or kind == "b":
        return bits & np.uint64((1 << width) - 1) if width < 64 else bits
    if kind == "s":
        if width == 64:
            return bits.view(np.int64)
        v = (bits & np.uint64((1 << width) - 1)).astype(np.int64)
        return np.where(v >= (1 << (width - 1)), v - (1 << width), v)
    if kind == "f":
        if width == 16:
            return (bits & np.uint64(0xFFFF)).astype(np.uint16).view(np.float16)
        if width == 32:
            return (bits & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.float32)
        return bits.view(np.float64)
    if kind == "bf":
        return ((bits & np.uint64(0xFFFF)).astype(np.uint32) << np.uint32(16)).view(np.float32)
    raise NotImplementedError(ty)


def _bits(values, ty):
    """numpy values of PTX type ty -> raw uint64 bits (zero-extended to the type's width)."""
    width, kind = _TYPES[ty]
    if kind in ("u", "b", "s"):
        v = np.asarray(values)
        if v.dtype == np.bool_:
            v = v.astype(np.uint64)
        if v.dtype.kind == "f":
            raise TypeError("float value for an integer type")
        v = v.astype(np.int64).view(np.uint64) if v.dtype.kind == "i" else v.astype(np.uint64)
        return v & np.uint64((1 << width) - 1) if width < 64 else v
    if kind == "f":
        if width == 16:
            return np.asarray(values, np.float16).view(np.uint16).astype(np.uint64)
        if width == 32:
            return np.asarray(values, np.float32).view(np.uint32).astype(np.uint64)
        return np.asarray(values, np.float64).view(np.uint64)
    if kind == "bf":
        return _f32_to_bf16_bits(np.asarray(values, np.float32)).astype(np.uint64)
    raise NotImplementedError(ty)


def _f32_to_bf16_bits(x):
    """Round-to-nearest-even f32 -> bf16 (NaN kept quiet)."""
    u = x.view(np.uint32).astype(np.uint64)
    rounded = (u + np.uint64(0x7FFF) + ((u >> np.uint64(16)) & np.uint64(1))) >> np.uint64(16)
    return np.where(np.isnan(x), np.uint64(0x7FC0), rounded & np.uint64(0xFFFF)).astype(np.uint64)


def _imm(tok, ty):
    if re.fullmatch(r"0[fF][0-9a-fA-F]{8}", tok):
        return np.uint64(int(tok[2:], 16))
    if re.fullmatch(r"0[dD][0-9a-fA-F]{16}", tok):
        return np.uint64(int(tok[2:], 16))
    if re.fullmatch(r"-?(0[xX][0-9a-fA-F]+|\d+)U?", tok):
        v = int(tok.rstrip("U"), 0)
        return np.uint64(v & ((1 << 64) - 1))
    if re.fullmatch(r"-?\d+\.\d*([eE][-+]?\d+)?", tok):
        return _bits(np.array([float(tok)]), ty if _TYPES[ty][1] in ("f", "bf") else "f64")[0]
    return None


class _State:
    def __init__(self, params, args, grid, block, ctas, memory, shared_bytes):
        nthreads = int(np.prod(block))
        self.nthreads = nthreads
        self.ctas = np.asarray(ctas, np.int64)  # linear CTA ids
        n = self.ctas.size * nthreads
        self.n = n
        lane = np.arange(n, dtype=np.int64)
        self.cta_slot = lane // nthreads
        tid = lane % nthreads
        cta = self.ctas[self.cta_slot]
        bx, by, bz = (tuple(block) + (1, 1))[:3]
        gx, gy, gz = (tuple(grid) + (1, 1))[:3]
        u = lambda a: a.astype(np.uint64)
        self.special = {
            "%tid.x": u(tid % bx), "%tid.y": u(tid // bx % by), "%tid.z": u(tid // (bx * by)),
            "%ntid.x": np.uint64(bx), "%ntid.y": np.uint64(by), "%ntid.z": np.uint64(bz),
            "%ctaid.x": u(cta % gx), "%ctaid.y": u(cta // gx % gy), "%ctaid.z": u(cta // (gx * gy)),
            "%nctaid.x": np.uint64(gx), "%nctaid.y": np.uint64(gy), "%nctaid.z": np.uint64(gz),
            "%laneid": u(tid % 32), "%warpid": u(tid // 32),
        }
        self.lane_in_warp = tid % 32
        self.regs = {}
        self.params = dict(zip(params, args))
        self.memory = memory
        self.shared_bytes = shared_bytes
        self.shared = np.zeros(self.ctas.size * shared_bytes, np.uint8)


def run_kernel(ptx, grid, block, args, memory, kernel=None, ctas=None, shared_bytes=0, trace=None):
    """Run `.entry` kernel of ptx over the CTAs ctas (linear ids, x fastest; all of grid when None).

    args: the kernel's parameters in order (ints; pointers are GlobalMemory addresses; floats as Python
    floats are stored as f32 bits when the .param is .f32). shared_bytes: dynamic shared memory per CTA.
    """
    params, instrs, labels, shared_syms = parse_entry(ptx, kernel)
    if len(args) != len(params):
        raise ValueError(f"kernel takes {len(params)} parameters, {len(args)} given")
    gx, gy, gz = (tuple(grid) + (1, 1))[:3]
    if ctas is None:
        ctas = np.arange(gx * gy * gz)
    st = _State(params, args, grid, block, ctas, memory, shared_bytes)
    Executor(st, instrs, labels, shared_syms, trace).run()


class Executor:
    def __init__(self, st, instrs, labels, shared_syms, trace):
        self.st, self.instrs, self.labels, self.shared_syms, self.trace = st, instrs, labels, shared_syms, trace
        self.active = None  # None: every lane
        # Registers no instruction writes (first operands, where PTX puts destinations) are LLVM's
        # undef, e.g. the half of a `mov.b32 %r, {%rs1, %rs8}` that later bfi's overwrite: they
        # read as zeros. Any other read before a write is an error.
        self.written_somewhere = None

    # ---- operands

    def read(self, tok, ty):
        st = self.st
        tok = tok.strip()
        if tok.startswith("-") and tok[1:].startswith("%"):
            v = self.read(tok[1:], ty)
            return _bits(-_as(v, ty), ty)
        if tok in st.special:
            v = st.special[tok]
            return np.broadcast_to(np.asarray(v, np.uint64), (st.n,))
        if tok.startswith("%"):
            if tok not in st.regs:
                if self.written_somewhere is None:
                    self.written_somewhere = set()
                    for ins in self.instrs:
                        if ins.args:
                            self.written_somewhere.update(re.findall(r"%[\w.]+", ins.args[0]))
                if tok in self.written_somewhere:
                    raise KeyError(f"register {tok} read before written")
                return np.zeros(st.n, np.uint64)
            return st.regs[tok]
        if tok in st.regs:  # a register inline asm declared in its own braces, without '%' (tsr_p0)
            return st.regs[tok]
        if tok in self.shared_syms:
            return np.full(st.n, self.shared_syms[tok], np.uint64)
        v = _imm(tok, ty)
        if v is None:
            raise NotImplementedError(f"operand {tok!r}")
        return np.full(st.n, v, np.uint64)

    def val(self, tok, ty):
        return _as(self.read(tok, ty), ty)

    def write(self, tok, bits, ty, mask):
        st = self.st
        tok = tok.strip()
        width = _TYPES[ty][0]
        bits = np.broadcast_to(np.asarray(bits, np.uint64), (st.n,))
        if width < 64 and ty != "pred":
            bits = bits & np.uint64((1 << width) - 1)
        if mask is None or tok not in st.regs:
            new = bits.copy() if mask is None else np.where(mask, bits, np.uint64(0))
        else:
            new = np.where(mask, bits, st.regs[tok])
        st.regs[tok] = new

    def wpred(self, tok, b, mask):
        self.write(tok, np.asarray(b).astype(np.uint64), "pred", mask)

    def address(self, tok):
        """[base+off] -> (uint64 addresses, space-relative symbol kind)."""
        inner = tok.strip()[1:-1].strip()
        m = re.fullmatch(r"([%$\w.]+)\s*(?:\+\s*(-?\w+))?", inner)
        if not m:
            raise NotImplementedError(f"address {tok}")
        base, off = m.group(1), int(m.group(2), 0) if m.group(2) else 0
        if base in self.st.params:
            return base, off
        if base in self.shared_syms:
            return np.full(self.st.n, self.shared_syms[base] + off, np.int64), None
        return self.read(base, "u64").astype(np.int64) + off, None

    # ---- main loop

    def run(self):
        st, instrs = self.st, self.instrs
        pc = np.zeros(st.n, np.int64)
        done = np.zeros(st.n, bool)
        uniform_pc = 0
        while True:
            if uniform_pc is not None:
                cur, mask = uniform_pc, None
            else:
                live = ~done
                if not live.any():
                    return
                cur = int(pc[live].min())
                mask = live & (pc == cur)
                if mask.all():
                    mask = None
            if cur >= len(instrs):
                return
            ins = instrs[cur]
            self.active = mask
            emask = mask
            if ins.pred is not None:
                p = self.read(ins.pred, "pred") != 0
                if ins.neg:
                    p = ~p
                emask = p if mask is None else (mask & p)
            if self.trace:
                self.trace(cur, ins)
            nxt = self.step(ins, emask)
            if nxt == "ret":
                if uniform_pc is not None:
                    if emask is None:
                        return
                    pc[:] = cur
                    uniform_pc = None
                active = ~done if mask is None else mask
                leaving = active if emask is None else (active & emask)
                done |= leaving
                pc[active & ~leaving] = cur + 1
                continue
            if nxt is None:
                if uniform_pc is not None:
                    uniform_pc = cur + 1
                else:
                    pc[mask if mask is not None else ~done] = cur + 1
                continue
            target = nxt
            if uniform_pc is not None:
                if emask is None:
                    uniform_pc = target
                    continue
                if not emask.any():
                    uniform_pc = cur + 1
                    continue
                if emask.all():
                    uniform_pc = target
                    continue
                pc[:] = cur
                uniform_pc = None
                mask = np.ones(st.n, bool)
            if mask is None:
                mask = ~done
            taken = mask if emask is None else emask
            pc[mask & ~taken] = cur + 1
            pc[taken] = target
            if uniform_pc is None:
                live = ~done
                if live.all() and np.all(pc == pc[0]):
                    uniform_pc = int(pc[0])

    # ---- instructions

    def step(self, ins, m):
        op = ins.op
        fn = getattr(self, "op_" + op, None)
        if fn is None:
            raise NotImplementedError(f"PTX instruction {ins.text!r}")
        return fn(ins, m)

    @staticmethod
    def _ty(mods):
        for t in reversed(mods):
            if t in _TYPES:
                return t
        raise NotImplementedError(f"no type in {mods}")

    def op_ret(self, ins, m):
        return "ret"

    def op_exit(self, ins, m):
        return "ret"

    def op_bra(self, ins, m):
        return self.labels[ins.args[0]]

    def op_bar(self, ins, m):
        if self.active is not None or m is not None:
            raise RuntimeError(f"{ins.text}: reached by only part of the CTAs' threads")

    op_barrier = op_bar

    def op_membar(self, ins, m):
        pass

    def op_fence(self, ins, m):
        pass

    def op_createpolicy(self, ins, m):
        self.write(ins.args[0], np.uint64(0), "b64", m)

    def op_prefetch(self, ins, m):
        pass

    def op_mov(self, ins, m):
        ty = self._ty(ins.mods)
        d, a = ins.args
        if d.startswith("{"):  # unpack: mov.b32 {lo, hi}, r
            parts = [x.strip() for x in d[1:-1].split(",")]
            src = self.read(a, ty)
            w = _TYPES[ty][0] // len(parts)
            for i, p in enumerate(parts):
                if p != "_":
                    self.write(p, (src >> np.uint64(w * i)) & np.uint64((1 << w) - 1), "b%d" % w, m)
            return
        if a.startswith("{"):  # pack: mov.b32 r, {lo, hi}
            parts = [x.strip() for x in a[1:-1].split(",")]
            w = _TYPES[ty][0] // len(parts)
            acc = np.zeros(self.st.n, np.uint64)
            for i, p in enumerate(parts):
                acc |= (self.read(p, "b%d" % w) & np.uint64((1 << w) - 1)) << np.uint64(w * i)
            self.write(d, acc, ty, m)
            return
        self.write(d, self.read(a, ty), ty, m)

    def op_ld(self, ins, m):
        return self._ld(ins, m)

    def op_st(self, ins, m):
        return self._st(ins, m)

    def _vec(self, mods):
        for x in mods:
            if x in ("v2", "v4", "v8"):
                return int(x[1])
        return 1

    def _space(self, mods):
        for s in ("param", "global", "shared", "local", "const"):
            if s in mods:
                return s
        return "generic"

    def _access(self, ins, regs_tok):
        """A ld's or st's element type, state space, element width in bytes and registers."""
        ty, nvec = self._ty(ins.mods), self._vec(ins.mods)
        regs = self._regs_list(regs_tok) if regs_tok.startswith("{") else [regs_tok]
        assert len(regs) == nvec, ins.text
        return ty, self._space(ins.mods), _TYPES[ty][0] // 8, regs

    def _active_addresses(self, addr_tok, m):
        """The active lanes (indices) and their addresses."""
        addrs, _ = self.address(addr_tok)
        idx = np.nonzero(np.ones(self.st.n, bool) if m is None else m)[0]
        return idx, addrs[idx]

    def _ld(self, ins, m):
        st = self.st
        addr_tok = ins.args[1]
        ty, space, width, dsts = self._access(ins, ins.args[0])
        nvec = len(dsts)
        if space == "param":
            name, off = self.address(addr_tok)
            assert off == 0 and nvec == 1, ins.text
            v = st.params[name]
            if isinstance(v, float):
                bits = _bits(np.array([v]), ty)[0]
            else:
                bits = np.uint64(int(v) & ((1 << 64) - 1))
            self.write(dsts[0], np.full(st.n, bits, np.uint64), ty, m)
            return
        idx, a = self._active_addresses(addr_tok, m)
        raw = self._gather(space, a, idx, width * nvec)
        for k, dname in enumerate(dsts):
            if dname == "_":
                continue
            chunk = raw[:, k * width:(k + 1) * width]
            val = np.zeros(idx.size, np.uint64)
            for b in range(width):
                val |= chunk[:, b].astype(np.uint64) << np.uint64(8 * b)
            reg_ty = ty
            if _TYPES[ty][1] == "s" and width < 8:  # narrow signed loads sign-extend into the register
                val, reg_ty = _bits(_as(val, ty), "s64"), "b64"
            full = np.zeros(st.n, np.uint64)
            full[idx] = val
            self.write(dname, full, reg_ty, m)

    def _gather(self, space, a, idx, nbytes):
        st = self.st
        if a.size and np.any(a % min(nbytes, 16)):
            raise RuntimeError(f"misaligned {nbytes}-byte {space} access")
        if space in ("global", "generic"):
            off = st.memory.offsets(a, nbytes)
            return st.memory.data[off[:, None] + np.arange(nbytes)]
        if space == "shared":
            off = self._shared_offsets(a, idx, nbytes)
            return st.shared[off[:, None] + np.arange(nbytes)]
        raise NotImplementedError(space)

    def _shared_offsets(self, a, idx, nbytes):
        st = self.st
        if a.size and (a.min() < 0 or a.max() + nbytes > st.shared_bytes):
            raise IndexError(f"shared access out of bounds (window {st.shared_bytes} bytes)")
        return st.cta_slot[idx] * st.shared_bytes + a

    def _st(self, ins, m):
        st = self.st
        ty, space, width, srcs = self._access(ins, ins.args[1])
        nvec = len(srcs)
        idx, a = self._active_addresses(ins.args[0], m)
        raw = np.zeros((idx.size, width * nvec), np.uint8)
        for k, s in enumerate(srcs):
            v = self.read(s, ty)[idx]
            for b in range(width):
                raw[:, k * width + b] = ((v >> np.uint64(8 * b)) & np.uint64(0xFF)).astype(np.uint8)
        if a.size and np.any(a % min(width * nvec, 16)):
            raise RuntimeError(f"misaligned {width * nvec}-byte {space} store")
        if space in ("global", "generic"):
            off = st.memory.offsets(a, width * nvec)
            st.memory.data[off[:, None] + np.arange(width * nvec)] = raw
        elif space == "shared":
            off = self._shared_offsets(a, idx, width * nvec)
            st.shared[off[:, None] + np.arange(width * nvec)] = raw
        else:
            raise NotImplementedError(ins.text)

    # integer / bitwise

    def _int_binary(self, ins, m, fn):
        ty = self._ty(ins.mods)
        d, a, b = ins.args
        if _TYPES[ty][1] in ("f", "bf", "f16x2", "bf16x2"):
            return self._float_binary(ins, m, ty)
        self.write(d, _bits(fn(self.val(a, ty), self.val(b, ty), ty), ty), ty, m)

    def op_add(self, ins, m):
        if "cc" in ins.mods:
            raise NotImplementedError(ins.text)
        return self._int_binary(ins, m, lambda x, y, t: x + y)

    def op_sub(self, ins, m):
        return self._int_binary(ins, m, lambda x, y, t: x - y)

    def op_min(self, ins, m):
        return self._int_binary(ins, m, lambda x, y, t: np.minimum(x, y))

    def op_max(self, ins, m):
        return self._int_binary(ins, m, lambda x, y, t: np.maximum(x, y))

    def _logic(self, ins, m, fn):
        ty = self._ty(ins.mods)
        d, a, b = ins.args
        if ty == "pred":
            x, y = self.read(a, ty) != 0, self.read(b, ty) != 0
            self.wpred(d, fn(x, y), m)
            return
        self.write(d, fn(self.read(a, ty), self.read(b, ty)), ty, m)

    def op_and(self, ins, m):
        return self._logic(ins, m, lambda x, y: x & y)

    def op_or(self, ins, m):
        return self._logic(ins, m, lambda x, y: x | y)

    def op_xor(self, ins, m):
        return self._logic(ins, m, lambda x, y: x ^ y)

    def op_not(self, ins, m):
        ty = self._ty(ins.mods)
        d, a = ins.args
        if ty == "pred":
            self.wpred(d, self.read(a, ty) == 0, m)
        else:
            self.write(d, ~self.read(a, ty), ty, m)

    def op_neg(self, ins, m):
        ty = self._ty(ins.mods)
        d, a = ins.args
        self.write(d, _bits(-self.val(a, ty), ty), ty, m)

    def op_abs(self, ins, m):
        ty = self._ty(ins.mods)
        d, a = ins.args
        self.write(d, _bits(np.abs(self.val(a, ty)), ty), ty, m)

    def op_cnot(self, ins, m):
        ty = self._ty(ins.mods)
        d, a = ins.args
        self.write(d, (self.read(a, ty) == 0).astype(np.uint64), ty, m)

    def op_shl(self, ins, m):
        ty = self._ty(ins.mods)
        w = _TYPES[ty][0]
        d, a, b = ins.args
        x, s = self.read(a, ty), self.read(b, "u32")
        r = np.where(s >= w, np.uint64(0), x << np.minimum(s, np.uint64(63)))
        self.write(d, r, ty, m)

    def op_shr(self, ins, m):
        ty = self._ty(ins.mods)
        w = _TYPES[ty][0]
        d, a, b = ins.args
        s = self.read(b, "u32")
        if _TYPES[ty][1] == "s":
            x = self.val(a, ty)
            r = x >> np.minimum(s, np.uint64(w - 1)).astype(np.int64)
            self.write(d, _bits(r, ty), ty, m)
        else:
            x = self.read(a, ty)
            r = np.where(s >= w, np.uint64(0), x >> np.minimum(s, np.uint64(63)))
            self.write(d, r, ty, m)

    def op_mul(self, ins, m):
        ty = self._ty(ins.mods)
        kind = _TYPES[ty][1]
        if kind in ("f", "bf", "f16x2", "bf16x2"):
            return self._float_binary(ins, m, ty)
        d, a, b = ins.args
        self._int_mul(ins, m, ty, d, a, b, None)

    def op_mad(self, ins, m):
        ty = self._ty(ins.mods)
        if _TYPES[ty][1] in ("f", "bf", "f16x2", "bf16x2"):
            return self.op_fma(ins, m)
        d, a, b, c = ins.args
        self._int_mul(ins, m, ty, d, a, b, c)

    def _int_mul(self, ins, m, ty, d, a, b, c):
        """mul / mad .lo .hi .wide: low halves wrap in uint64; wide and hi products of <= 32-bit operands
        are exact in (u)int64; 64-bit .hi goes through Python ints."""
        w, kind = _TYPES[ty]
        signed = kind == "s"
        if "wide" in ins.mods:
            wty = ("s" if signed else "u") + str(2 * w)
            x, y = self.val(a, ty), self.val(b, ty)
            p = (x.astype(np.int64) * y.astype(np.int64)).view(np.uint64) if signed else \
                x.astype(np.uint64) * y.astype(np.uint64)
            if c is not None:
                p = p + self.read(c, wty)
            self.write(d, p, wty, m)
        elif "hi" in ins.mods:
            x, y = self.val(a, ty), self.val(b, ty)
            if w <= 32:
                p = (x.astype(np.int64) * y.astype(np.int64)) >> w if signed else \
                    (x.astype(np.uint64) * y.astype(np.uint64)) >> np.uint64(w)
                p = _bits(p, ty)
            else:
                p = _bits_big(np.array([(int(u) * int(v)) >> w for u, v in zip(x, y)], dtype=object), w)
            if c is not None:
                p = p + self.read(c, ty)
            self.write(d, p, ty, m)
        else:
            p = self.read(a, ty) * self.read(b, ty)
            if c is not None:
                p = p + self.read(c, ty)
            self.write(d, p, ty, m)

    def op_div(self, ins, m):
        ty = self._ty(ins.mods)
        kind = _TYPES[ty][1]
        d, a, b = ins.args
        if kind in ("f", "bf"):
            return self._float_binary(ins, m, ty)
        q, _ = self._divmod(ins, m, ty, a, b)
        self.write(d, _bits(q, ty), ty, m)

    def op_rem(self, ins, m):
        ty = self._ty(ins.mods)
        d, a, b = ins.args
        _, r = self._divmod(ins, m, ty, a, b)
        self.write(d, _bits(r, ty), ty, m)

    def _divmod(self, ins, m, ty, a, b):
        """Truncating integer division (C semantics) on the selected lanes; other lanes divide by 1."""
        x, y = self.val(a, ty), self.val(b, ty)
        sel = np.ones(self.st.n, bool) if m is None else m
        if np.any((y == 0) & sel):
            raise ZeroDivisionError(ins.text)
        y = np.where(y == 0, 1, y).astype(x.dtype)
        if _TYPES[ty][1] == "s":
            q = np.abs(x) // np.abs(y) * np.where((x < 0) != (y < 0), -1, 1)
        else:
            q = x // y
        return q, x - q * y

    def op_bfe(self, ins, m):
        ty = self._ty(ins.mods)
        d, a, b, c = ins.args
        w = _TYPES[ty][0]
        x = self.read(a, ty)
        pos = np.minimum(self.read(b, "u32") & np.uint64(0xFF), np.uint64(255))
        ln = np.minimum(self.read(c, "u32") & np.uint64(0xFF), np.uint64(255))
        out = np.zeros(self.st.n, np.uint64)
        for i in range(w):  # bit by bit, straight from the ISA's definition
            src = pos + np.uint64(i)
            inside = np.uint64(i) < ln
            bit = np.where(src < w, (x >> np.minimum(src, np.uint64(w - 1))) & np.uint64(1), np.uint64(0))
            if _TYPES[ty][1] == "s":
                top = np.minimum(pos + ln - np.uint64(1), np.uint64(w - 1))
                sbit = np.where(ln == 0, np.uint64(0), (x >> top) & np.uint64(1))
                bit = np.where(inside, bit, sbit)
            else:
                bit = np.where(inside, bit, np.uint64(0))
            out |= bit << np.uint64(i)
        self.write(d, out, ty, m)

    def op_bfi(self, ins, m):
        ty = self._ty(ins.mods)
        d, a, b, c, e = ins.args
        w = _TYPES[ty][0]
        x, y = self.read(a, ty), self.read(b, ty)
        pos = self.read(c, "u32") & np.uint64(0xFF)
        ln = self.read(e, "u32") & np.uint64(0xFF)
        out = y.copy()
        for i in range(w):
            dst = pos + np.uint64(i)
            ok = (np.uint64(i) < ln) & (dst < w)
            bit = (x >> np.uint64(i)) & np.uint64(1)
            sh = np.minimum(dst, np.uint64(w - 1))
            out = np.where(ok, (out & ~(np.uint64(1) << sh)) | (bit << sh), out)
        self.write(d, out, ty, m)

    def op_prmt(self, ins, m):
        d, a, b, c = ins.args
        if len(ins.mods) > 1:
            raise NotImplementedError(ins.text)
        x = self.read(a, "b32") | (self.read(b, "b32") << np.uint64(32))
        sel = self.read(c, "b32")
        out = np.zeros(self.st.n, np.uint64)
        for i in range(4):
            s = (sel >> np.uint64(4 * i)) & np.uint64(0xF)
            byte = (x >> ((s & np.uint64(7)) * np.uint64(8))) & np.uint64(0xFF)
            byte = np.where(s & np.uint64(8), np.where(byte & np.uint64(0x80), np.uint64(0xFF), np.uint64(0)), byte)
            out |= byte << np.uint64(8 * i)
        self.write(d, out, "b32", m)

    def op_popc(self, ins, m):
        ty = self._ty(ins.mods)
        d, a = ins.args
        x = self.read(a, ty)
        c = np.zeros(self.st.n, np.uint64)
        for i in range(_TYPES[ty][0]):
            c += (x >> np.uint64(i)) & np.uint64(1)
        self.write(d, c, "u32", m)

    def op_clz(self, ins, m):
        ty = self._ty(ins.mods)
        w = _TYPES[ty][0]
        d, a = ins.args
        x = self.read(a, ty)
        c = np.full(self.st.n, w, np.uint64)
        for i in range(w):
            c = np.where((x >> np.uint64(i)) & np.uint64(1), np.uint64(w - 1 - i), c)
        self.write(d, c, "u32", m)

    # compare / select

    _CMP = {
        "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
        "ge": np.greater_equal, "lo": np.less, "ls": np.less_equal, "hi": np.greater, "hs": np.greater_equal,
    }

    def _compare(self, cmp, x, y, kind):
        unordered = cmp.endswith("u") and cmp not in ("equ",) or cmp == "equ"
        if cmp in ("num", "nan"):
            nan = np.isnan(x) | np.isnan(y)
            return ~nan if cmp == "num" else nan
        base = cmp[:-1] if (kind == "f" and cmp.endswith("u") and cmp[:-1] in self._CMP) else cmp
        r = self._CMP[base](x, y)
        if kind == "f":
            nan = np.isnan(x) | np.isnan(y)
            r = (r | nan) if (unordered and base != cmp) else (r & ~nan)
        return r

    def op_setp(self, ins, m):
        cmp = ins.mods[0]
        ty = self._ty(ins.mods)
        kind = _TYPES[ty][1]
        combine = ins.mods[1] if len(ins.mods) > 2 and ins.mods[1] in ("and", "or", "xor") else None
        d = ins.args[0]
        dp, dq = (d.split("|") + [None])[:2]
        x, y = self.val(ins.args[1], ty), self.val(ins.args[2], ty)
        r = self._compare(cmp, x.astype(np.float64) if kind in ("f", "bf") else x,
                          y.astype(np.float64) if kind in ("f", "bf") else y, "f" if kind in ("f", "bf") else "i")
        rq = ~r
        if combine:
            cpred = ins.args[3].strip()
            c = self.read(cpred.lstrip("!"), "pred") != 0
            if cpred.startswith("!"):
                c = ~c
            f = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[combine]
            r, rq = f(r, c), f(rq, c)
        self.wpred(dp.strip(), r, m)
        if dq:
            self.wpred(dq.strip(), rq, m)

    def op_selp(self, ins, m):
        ty = self._ty(ins.mods)
        d, a, b, c = ins.args
        p = self.read(c, "pred") != 0
        self.write(d, np.where(p, self.read(a, ty), self.read(b, ty)), ty, m)

    # conversions

    def op_cvt(self, ins, m):
        fp8 = next((x for x in ins.mods if x in ("e4m3x2", "e5m2x2")), None)
        if fp8 and ins.mods[-1] == "f32":  # cvt.rn.satfinite.e4m3x2.f32 d, a, b: a -> high byte, b -> low byte
            assert "rn" in ins.mods and "satfinite" in ins.mods, ins.text
            import ml_dtypes
            dtype, limit = (ml_dtypes.float8_e4m3fn, 448.0) if fp8 == "e4m3x2" else (ml_dtypes.float8_e5m2, 57344.0)

            def code(x):  # round to nearest even once (from f32), saturating to the largest finite value
                x = np.asarray(x, np.float32)
                clipped = np.where(np.isnan(x), x, np.clip(x, -limit, limit)).astype(np.float32)
                return clipped.astype(dtype).view(np.uint8).astype(np.uint64)
            hi, lo = code(self.val(ins.args[1], "f32")), code(self.val(ins.args[2], "f32"))
            self.write(ins.args[0], (hi << np.uint64(8)) | lo, "b16", m)
            return
        types = [x for x in ins.mods if x in _TYPES]
        rnd = next((x for x in ins.mods if x in ("rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi")), None)
        sat = "sat" in ins.mods
        dty, sty = types[0], types[1]
        d = ins.args[0]
        if dty in ("f16x2", "bf16x2"):  # cvt.rn.f16x2.f32 d, a, b: a -> upper half, b -> lower half
            assert rnd == "rn", ins.text
            a, b = self.val(ins.args[1], sty), self.val(ins.args[2], sty)
            half = "f16" if dty == "f16x2" else "bf16"
            if "relu" in ins.mods:
                a, b = np.where(a < 0, 0, a), np.where(b < 0, 0, b)
            hi, lo = (_bits(v.astype(np.float32), half) for v in (a, b))  # one rounding each
            if half == "f16":  # a NaN converts to the canonical 0x7FFF, its sign dropped, as the GPU's cvt does
                hi, lo = (np.where(np.isnan(v), np.uint64(0x7FFF), h) for v, h in ((a, hi), (b, lo)))
            self.write(d, (hi << np.uint64(16)) | lo, "b32", m)
            return
        dkind, skind = _TYPES[dty][1], _TYPES[sty][1]
        x = self.val(ins.args[1], sty)
        if dkind in ("u", "s", "b") and skind in ("u", "s", "b"):
            if sat:
                raise NotImplementedError(ins.text)
            self.write(d, _bits(x, "s64" if x.dtype.kind == "i" else "u64"), dty, m)
            return
        if dkind in ("f", "bf") and skind in ("u", "s", "b"):
            if rnd not in (None, "rn"):
                raise NotImplementedError(ins.text)
            # int -> f32/f16 with round-to-nearest-even; via float64 is exact for |x| < 2^53
            if _TYPES[sty][0] == 64:
                raise NotImplementedError(ins.text)
            xf = x.astype(np.float64)
            if dty == "f64":
                self.write(d, _bits(xf, dty), dty, m)
            elif dty == "f32":
                self.write(d, _bits(xf.astype(np.float32), dty), dty, m)
            elif dty == "f16":
                self.write(d, _bits(xf.astype(np.float16), dty), dty, m)  # f64 -> f16 rounds once
            else:
                self.write(d, _f32_to_bf16_bits_exact(xf), dty, m)
            return
        if dkind in ("u", "s") and skind in ("f", "bf"):
            xf = x.astype(np.float64)
            f = {"rzi": np.trunc, "rni": np.rint, "rmi": np.floor, "rpi": np.ceil, None: np.trunc}[rnd]
            w = _TYPES[dty][0]
            lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if dkind == "s" else (0, (1 << w) - 1)
            r = np.nan_to_num(f(xf), nan=0.0)
            r = np.clip(r, lo, min(hi, 2.0**63 - 1024))
            self.write(d, _bits(r.astype(np.int64), "s64"), dty, m)
            return
        if dkind in ("f", "bf") and skind in ("f", "bf"):
            xf = x.astype(np.float64)
            if _TYPES[dty][0] >= _TYPES[sty][0] and not (dty == "f16" and sty == "bf16"):
                self.write(d, _bits(xf, "f64") if dty == "f64" else _bits(xf.astype(np.float32), dty)
                           if dty == "f32" else _bits(x, dty), dty, m)
                return
            if rnd not in ("rn", None) or (rnd is None and dty not in ("f32", "f64")):
                raise NotImplementedError(ins.text)
            if dty == "f32":
                self.write(d, _bits(xf.astype(np.float32), dty), dty, m)
            elif dty == "f16":
                h = _bits((xf if sty == "f64" else x).astype(np.float16), dty)
                # a NaN converts to the canonical 0x7FFF, its sign dropped, as the GPU's cvt does
                self.write(d, np.where(np.isnan(xf), np.uint64(0x7FFF), h), dty, m)
            elif dty == "bf16":
                if sty == "f64":
                    raise NotImplementedError(ins.text)
                self.write(d, _f32_to_bf16_bits(x.astype(np.float32)), dty, m)
            return
        raise NotImplementedError(ins.text)

    # warp-collective tensor-core instructions (every lane of a warp active: lockstep)

    def _regs_list(self, tok):
        return [x.strip() for x in tok.strip()[1:-1].split(",")]

    def _whole_warps(self, ins, m):
        if m is not None and not np.all(m.reshape(-1, 32).all(axis=1) | ~m.reshape(-1, 32).any(axis=1)):
            raise RuntimeError(f"{ins.text}: reached by part of a warp")
        return np.ones(self.st.n, bool) if m is None else m

    def op_cp(self, ins, m):
        if "commit_group" in ins.mods or "wait_group" in ins.mods or "wait_all" in ins.mods:
            return
        if "async" not in ins.mods or "shared" not in ins.mods:
            raise NotImplementedError(ins.text)
        st = self.st
        dst, src, size = ins.args[0], ins.args[1], int(ins.args[2], 0)
        fill = self.read(ins.args[3], "u32").astype(np.int64) if len(ins.args) > 3 else np.full(st.n, size)
        idx, daddr = self._active_addresses(dst, m)
        saddr, _ = self.address(src)
        raw = np.zeros((idx.size, size), np.uint8)
        reads = idx[fill[idx] > 0]  # src-size 0: nothing is read (the address may be out of bounds)
        if reads.size:
            got = self._gather("global", saddr[reads], reads, size)
            keep = np.arange(size)[None, :] < fill[reads][:, None]
            raw[np.isin(idx, reads)] = np.where(keep, got, 0)
        off = self._shared_offsets(daddr, idx, size)
        st.shared[off[:, None] + np.arange(size)] = raw

    def op_ldmatrix(self, ins, m):
        sel = self._whole_warps(ins, m)
        count = int([x for x in ins.mods if x.startswith("x")][0][1:])
        trans = "trans" in ins.mods
        dsts = self._regs_list(ins.args[0])
        addrs, _ = self.address(ins.args[1])
        n = self.st.n
        lane = np.arange(n) % 32
        base = np.arange(n) - lane
        # matrix i, row r: the 16 bytes at the address lane 8i + r gives
        rows = np.zeros((n, count, 8, 8), np.uint16)
        for i in range(count):
            for r in range(8):
                src = base + 8 * i + r
                raw = self._gather("shared", addrs[src], src, 16)
                rows[:, i, r, :] = raw.view(np.uint16).reshape(n, 8)
        g, t = lane // 4, lane % 4
        for i, d in enumerate(dsts):
            if trans:
                lo, hi = rows[np.arange(n), i, 2 * t, g], rows[np.arange(n), i, 2 * t + 1, g]
            else:
                lo, hi = rows[np.arange(n), i, g, 2 * t], rows[np.arange(n), i, g, 2 * t + 1]
            self.write(d, lo.astype(np.uint64) | (hi.astype(np.uint64) << np.uint64(16)), "b32", sel)

    def op_mma(self, ins, m):
        sel = self._whole_warps(ins, m)
        if "m16n8k16" not in ins.mods or "row" not in ins.mods:
            raise NotImplementedError(ins.text)
        dty, aty, bty, cty = ins.mods[-4:]
        if aty not in ("f16", "bf16") or bty != aty or dty not in ("f32", "f16") or cty != dty:
            raise NotImplementedError(ins.text)
        d, a, b, c = (self._regs_list(x) for x in ins.args)
        n = self.st.n
        warps = n // 32
        half = lambda bits: _as(bits, aty).astype(np.float64)  # noqa: E731
        g, t = np.arange(32) // 4, np.arange(32) % 4

        def halves(tok):
            v = self.read(tok, "b32").reshape(warps, 32)
            return half(v & np.uint64(0xFFFF)), half(v >> np.uint64(16))
        A = np.zeros((warps, 16, 16))
        for i, tok in enumerate(a):  # a0: (g, 2t..) a1: (g+8, 2t..) a2: (g, 2t+8..) a3: (g+8, 2t+8..)
            lo, hi = halves(tok)
            r, k = g + 8 * (i % 2), 2 * t + 8 * (i // 2)
            A[:, r, k], A[:, r, k + 1] = lo, hi
        B = np.zeros((warps, 16, 8))
        for i, tok in enumerate(b):  # b0: (k 2t, 2t+1; n g) b1: (k 2t+8, ..)
            lo, hi = halves(tok)
            B[:, 2 * t + 8 * i, g], B[:, 2 * t + 8 * i + 1, g] = lo, hi
        C = np.zeros((warps, 16, 8))
        if dty == "f32":  # c0: (g, 2t) c1: (g, 2t+1) c2: (g+8, 2t) c3: (g+8, 2t+1)
            for i, tok in enumerate(c):
                C[:, g + 8 * (i // 2), 2 * t + i % 2] = _as(self.read(tok, "b32"), "f32").astype(np.float64).reshape(warps, 32)
        else:  # c0: f16 pair (g, 2t..), c1: (g+8, 2t..)
            for i, tok in enumerate(c):
                v = self.read(tok, "b32").reshape(warps, 32)
                C[:, g + 8 * i, 2 * t] = _as(v & np.uint64(0xFFFF), "f16").astype(np.float64)
                C[:, g + 8 * i, 2 * t + 1] = _as(v >> np.uint64(16), "f16").astype(np.float64)
        D = A @ B + C
        if dty == "f32":
            for i, tok in enumerate(d):
                self.write(tok, _bits(D[:, g + 8 * (i // 2), 2 * t + i % 2].astype(np.float32).reshape(n), "f32"), "b32", sel)
        else:
            for i, tok in enumerate(d):
                lo = _bits(D[:, g + 8 * i, 2 * t].astype(np.float16).reshape(n), "f16")
                hi = _bits(D[:, g + 8 * i, 2 * t + 1].astype(np.float16).reshape(n), "f16")
                self.write(tok, lo | (hi << np.uint64(16)), "b32", sel)

    def op_atom(self, ins, m):
        """atom.add on .global (f32, f16 / bf16 scalars, pairs and vectors, 32-bit integers): the lanes' adds
        land one after another in lane order, each rounded, as the hardware serialises them."""
        if "add" not in ins.mods or "global" not in ins.mods:
            raise NotImplementedError(ins.text)
        st = self.st
        ty = self._ty(ins.mods)
        nvec = self._vec(ins.mods)
        d, addr_tok, src = ins.args
        srcs = self._regs_list(src) if src.strip().startswith("{") else [src]
        dsts = self._regs_list(d) if d.strip().startswith("{") else [d]
        lanes = 2 if ty in ("f16x2", "bf16x2") else 1
        elem = {"f16x2": "f16", "bf16x2": "bf16"}.get(ty, ty)
        width = _TYPES[elem][0] // 8  # bytes of one element
        kind = _TYPES[elem][1]
        addrs, _ = self.address(addr_tok)
        sel = np.ones(st.n, bool) if m is None else m
        olds = np.zeros((len(dsts), st.n), np.uint64)
        values = [self.read(x, ty) for x in srcs]
        for i in np.nonzero(sel)[0]:
            for k in range(nvec * lanes):
                bits = (values[k // lanes][i] >> np.uint64(16 * (k % lanes))) & np.uint64(0xFFFF) if lanes == 2 \
                    else values[k][i]
                off = st.memory.offsets(np.array([int(addrs[i]) + k * width]), width)[0]
                cur = np.zeros(1, np.uint64)
                for b in range(width):
                    cur |= np.uint64(st.memory.data[off + b]) << np.uint64(8 * b)
                if kind in ("f", "bf"):
                    total = _as(cur, elem).astype(np.float64) + _as(np.array([bits]), elem).astype(np.float64)
                    new = _round_half(total, elem) if width == 2 else _bits(total.astype(np.float32 if width == 4 else np.float64), elem)
                else:
                    new = (cur + np.uint64(bits)) & np.uint64((1 << (8 * width)) - 1)
                for b in range(width):
                    st.memory.data[off + b] = np.uint8((int(new[0]) >> (8 * b)) & 0xFF)
                olds[k // lanes, i] |= cur[0] << np.uint64(16 * (k % lanes)) if lanes == 2 else cur[0]
        for j, dname in enumerate(dsts):
            if dname != "_":
                self.write(dname, olds[j], "b%d" % (8 * width * lanes), m)

    def op_cvta(self, ins, m):
        d, a = ins.args
        if "to" in ins.mods and "global" in ins.mods or "global" in ins.mods:
            self.write(d, self.read(a, "u64"), "u64", m)
        else:
            raise NotImplementedError(ins.text)

    # floating point

    def _float_binary(self, ins, m, ty):
        d, a, b = ins.args
        op = ins.op
        if ty in ("f16x2", "bf16x2"):
            half = ty[:-2]
            xa, xb = self.read(a, "b32"), self.read(b, "b32")
            out = np.zeros(self.st.n, np.uint64)
            for sh in (0, 16):
                u = _as(xa >> np.uint64(sh), half).astype(np.float64)
                v = _as(xb >> np.uint64(sh), half).astype(np.float64)
                r = _fop(op, u, v)
                out |= _round_half(r, half) << np.uint64(sh)
            self.write(d, out, "b32", m)
            return
        x, y = self.val(a, ty).astype(np.float64), self.val(b, ty).astype(np.float64)
        r = _fop(op, x, y)
        if ty in ("f16", "bf16"):
            self.write(d, _round_half(r, ty), ty, m)
        elif ty == "f32":
            self.write(d, _bits(r.astype(np.float32), ty), ty, m)
        else:
            self.write(d, _bits(r, ty), ty, m)

    def op_fma(self, ins, m):
        ty = self._ty(ins.mods)
        d, a, b, c = ins.args
        if ty in ("f16x2", "bf16x2"):
            half = ty[:-2]
            xa, xb, xc = self.read(a, "b32"), self.read(b, "b32"), self.read(c, "b32")
            out = np.zeros(self.st.n, np.uint64)
            for sh in (0, 16):
                s = np.uint64(sh)
                r = (_as(xa >> s, half).astype(np.float64) * _as(xb >> s, half).astype(np.float64)
                     + _as(xc >> s, half).astype(np.float64))
                out |= _round_half(r, half) << s
            self.write(d, out, "b32", m)
            return
        x, y, z = (self.val(t, ty).astype(np.float64) for t in (a, b, c))
        r = x * y + z
        if ty == "f32":
            self.write(d, _bits(r.astype(np.float32), ty), ty, m)
        elif ty in ("f16", "bf16"):
            self.write(d, _round_half(r, ty), ty, m)
        else:
            raise NotImplementedError(ins.text)

    def op_ex2(self, ins, m):
        ty = self._ty(ins.mods)
        d, a = ins.args
        self.write(d, _bits(np.exp2(self.val(a, ty).astype(np.float64)).astype(np.float32), ty), ty, m)

    def op_lg2(self, ins, m):
        ty = self._ty(ins.mods)
        d, a = ins.args
        with np.errstate(all="ignore"):
            self.write(d, _bits(np.log2(self.val(a, ty).astype(np.float64)).astype(np.float32), ty), ty, m)

    def op_rcp(self, ins, m):
        ty = self._ty(ins.mods)
        d, a = ins.args
        with np.errstate(all="ignore"):
            r = 1.0 / self.val(a, ty).astype(np.float64)
        self.write(d, _bits(r.astype(np.float32) if ty == "f32" else r, ty), ty, m)

    def op_sqrt(self, ins, m):
        ty = self._ty(ins.mods)
        d, a = ins.args
        with np.errstate(all="ignore"):
            r = np.sqrt(self.val(a, ty).astype(np.float64))
        self.write(d, _bits(r.astype(np.float32) if ty == "f32" else r, ty), ty, m)

    def op_rsqrt(self, ins, m):
        ty = self._ty(ins.mods)
        d, a = ins.args
        with np.errstate(all="ignore"):
            r = 1.0 / np.sqrt(self.val(a, ty).astype(np.float64))
        self.write(d, _bits(r.astype(np.float32) if ty == "f32" else r, ty), ty, m)

    # warp

    def op_shfl(self, ins, m):
        if "sync" not in ins.mods:
            raise NotImplementedError(ins.text)
        mode = next(x for x in ins.mods if x in ("up", "down", "bfly", "idx"))
        d, a, b, c = ins.args[:4]
        dp, dq = (d.split("|") + [None])[:2]
        lane = self.st.lane_in_warp
        bval = self.read(b, "u32").astype(np.int64)
        cval = self.read(c, "u32").astype(np.int64)
        clamp, segmask = cval & 0x1F, (cval >> 8) & 0x1F
        max_lane = (lane & segmask) | (clamp & ~segmask)
        min_lane = lane & segmask
        if mode == "up":
            j, ok = lane - bval, (lane - bval) >= max_lane
        elif mode == "down":
            j, ok = lane + bval, (lane + bval) <= max_lane
        elif mode == "bfly":
            j, ok = lane ^ bval, (lane ^ bval) <= max_lane
        else:
            j = min_lane | (bval & ~segmask)
            ok = j <= max_lane
        j = np.where(ok, j, lane)
        src = np.arange(self.st.n) - lane + j
        v = self.read(a, "b32")[src]
        self.write(dp.strip(), v, "b32", m)
        if dq:
            self.wpred(dq.strip(), ok, m)


def _fop(op, x, y):
    with np.errstate(all="ignore"):
        if op == "add":
            return x + y
        if op == "sub":
            return x - y
        if op == "mul":
            return x * y
        if op == "div":
            return x / y
        if op == "min":
            return np.fmin(x, y)
        if op == "max":
            return np.fmax(x, y)
    raise NotImplementedError(op)


def _round_half(r64, half):
    """float64 -> f16 / bf16 bits with one rounding (the f16/bf16 result of an op computed exactly)."""
    if half == "f16":
        return r64.astype(np.float16).view(np.uint16).astype(np.uint64)
    return _f32_to_bf16_bits_exact(r64)


def _f32_to_bf16_bits_exact(r64):
    # float64 -> bf16 directly: round to 8 significant bits, nearest even, via the f64 bit pattern
    u = np.asarray(r64, np.float64).view(np.uint64)
    rounded = (u + np.uint64((1 << 44) - 1) + ((u >> np.uint64(45)) & np.uint64(1))) >> np.uint64(45)
    f = (rounded << np.uint64(45)).view(np.float64).astype(np.float32)  # exact: 8-bit significand
    return np.where(np.isnan(r64), np.uint64(0x7FC0),
                    (f.view(np.uint32) >> np.uint32(16)).astype(np.uint64))


def _bits_big(values, width):
    """Python-int (object) or numpy int array -> uint64 bits of the low width bits (two's complement)."""
    mask = (1 << width) - 1
    v = np.asarray(values)
    if v.dtype == object:
        return np.array([int(x) & mask for x in v], dtype=np.uint64) if v.size else np.zeros(0, np.uint64)
    return v.astype(np.int64).view(np.uint64) & np.uint64(mask) if width < 64 else v.astype(np.int64).view(np.uint64)
