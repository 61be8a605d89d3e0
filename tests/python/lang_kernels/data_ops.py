import tessera
import tessera.language as tl

# tl.sort, tl.gather, tl.histogram, tl.inline_asm_elementwise and integer <-> pointer casts
# (tests/python/test_lang_data.py compiles them; test_interpreter_data.py runs the first three).


@tessera.jit
def sort_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, DESCENDING: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.sort(x, descending=DESCENDING))


@tessera.jit
def sort_1d_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x.sort(dim=0))


@tessera.jit
def gather_kernel(src_ptr, idx_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                  AXIS: tl.constexpr):
    # src is M x N; the index is K x N (AXIS 0) or M x K (AXIS 1)
    src = tl.load(src_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    if AXIS == 0:
        io = tl.arange(0, K)[:, None] * N + tl.arange(0, N)[None, :]
    else:
        io = tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :]
    idx = tl.load(idx_ptr + io)
    tl.store(out_ptr + io, tl.gather(src, idx, AXIS))


@tessera.jit
def histogram_kernel(x_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, M))
    z = tl.histogram(x, N)
    biased = z + tl.full([M, N], 1, dtype=tl.int32)  # the result broadcasts like any block
    tl.store(z_ptr + tl.arange(0, N), z + tl.sum(biased, axis=0) * 0)


@tessera.jit
def histogram_mask_kernel(x_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, 2 * M)
    x = tl.load(x_ptr + offs)
    z = x.histogram(N, offs < M)
    tl.store(z_ptr + tl.arange(0, N), z)


@tessera.jit
def asm_shift_kernel(X, Y, Z, n: tl.constexpr, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    y = tl.load(Y + tl.arange(0, BLOCK))
    s = tl.full([BLOCK], n, tl.int32)
    z = tl.inline_asm_elementwise("shf.l.wrap.b32 $0, $1, $2, $3;", "=r,r, r, r", [x, y, s], dtype=tl.int32,
                                  is_pure=True, pack=1)
    tl.store(Z + tl.arange(0, BLOCK), z)


@tessera.jit
def asm_packed_kernel(X, Y, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    y = tl.inline_asm_elementwise("and.b32 $0, $1, 0x1F1F1F1F; \
                                   shl.b32 $0, $0, 3;", "=r,r", [x, ], dtype=tl.int8, is_pure=True, pack=4)
    tl.store(Y + tl.arange(0, BLOCK), y)


@tessera.jit
def asm_pointers_kernel(X, Y, BLOCK: tl.constexpr):
    x_ptrs = X + tl.arange(0, BLOCK)
    y_ptrs = Y + tl.arange(0, BLOCK)
    tl.inline_asm_elementwise("ld.global.b8 $0, [$1]; \
                               shl.b32 $0, $0, 3; \
                               st.global.b8 [$2], $0;", "=r,l,l", [x_ptrs, y_ptrs], dtype=tl.int8, is_pure=False,
                              pack=1)


@tessera.jit
def asm_two_outputs_kernel(A, B, C, D, BLOCK: tl.constexpr):
    a = tl.load(A + tl.arange(0, BLOCK))
    b = tl.load(B + tl.arange(0, BLOCK))
    (c, d) = tl.inline_asm_elementwise(
        asm="""
        sub.u32 $0, $2, $3;  // C = A - B
        sub.u32 $1, $3, $2;  // D = B - A
        """,
        constraints=("=r,=r,"
                     "r,r"),
        args=[a, b],
        dtype=(tl.uint32, tl.uint32),
        is_pure=True,
        pack=1,
    )
    tl.store(C + tl.arange(0, BLOCK), c)
    tl.store(D + tl.arange(0, BLOCK), d)


@tessera.jit
def asm_packed_two_outputs_kernel(A, B, C, D, BLOCK: tl.constexpr):
    a = tl.load(A + tl.arange(0, BLOCK))
    b = tl.load(B + tl.arange(0, BLOCK))
    (c, d) = tl.inline_asm_elementwise(
        asm="""
        {
            .reg .b8 tmp<4>;
            mov.b32 {tmp0, tmp1, tmp2, tmp3}, $8;
            cvt.u32.u8 $0, tmp0;
            cvt.u32.u8 $1, tmp1;
            cvt.u32.u8 $2, tmp2;
            cvt.u32.u8 $3, tmp3;
        }
        cvt.rn.f32.s32 $4, $0;
        cvt.rn.f32.s32 $5, $1;
        cvt.rn.f32.s32 $6, $2;
        cvt.rn.f32.s32 $7, $3;
        max.f32 $4, $4, $9;
        max.f32 $5, $5, $10;
        max.f32 $6, $6, $11;
        max.f32 $7, $7, $12;
        """,
        constraints=("=r,=r,=r,=r,=r,=r,=r,=r,"
                     "r,r,r,r,r"),
        args=[a, b],
        dtype=(tl.int32, tl.float32),
        is_pure=True,
        pack=4,
    )
    tl.store(C + tl.arange(0, BLOCK), c)
    tl.store(D + tl.arange(0, BLOCK), d)


@tessera.jit
def asm_f16_pairs_kernel(X, Y, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    y = tl.inline_asm_elementwise("add.rn.f16x2 $0, $1, $1;", "=r,r", [x], dtype=tl.float16, is_pure=True, pack=2)
    tl.store(Y + tl.arange(0, BLOCK), y)


@tessera.jit
def pointer_array_kernel(ptrs_ptr, out_ptr, data_ptr, N: tl.constexpr):
    # A table of int64 addresses (grouped GEMM's pointer arrays): each program reads its own buffer.
    # data_ptr, unused, is the buffer the table points into: the interpreter checks pointers made
    # from integers against the arguments' buffers.
    g = tl.program_id(0)
    a_ptr = tl.load(ptrs_ptr + g).to(tl.pointer_type(tl.float16))
    x = tl.load(a_ptr + tl.arange(0, N))
    address = tl.cast(a_ptr, tl.int64)
    same = address == a_ptr.to(tl.uint64).to(tl.int64, bitcast=True)
    not_null = a_ptr.to(tl.int1)
    back = address.to(tl.pointer_type(tl.float16), bitcast=True)
    y = tl.load(back + tl.arange(0, N))
    ok = same & not_null
    tl.store(out_ptr + g * N + tl.arange(0, N), tl.where(ok, x + y, -1.0))
