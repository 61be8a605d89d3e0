// The language prelude: the tl.* functions that tessera writes in the kernel
// language itself (random numbers, sigmoid, softmax, swizzle2d, and the
// combine functions of argmax/argmin/cumsum/cumprod/xor_sum). The specialiser
// parses this source once per compilation and inlines its functions like a
// user's @jit helpers (dsl/BuiltinsLanguage.cpp).
#pragma once

namespace tessera {

const char *languagePreludeSource();

} // namespace tessera
