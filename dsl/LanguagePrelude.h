// The language prelude: the tl.* functions that tessera writes in the kernel
// language itself (random numbers, sigmoid, softmax, swizzle2d, the combine
// functions of argmax/argmin/cumsum/cumprod/xor_sum, and tl.dot_scaled's
// upcast, called by dsl/BuiltinsDotScaled.cpp once it has checked the
// arguments). The specialiser
// parses this source once per process and inlines its functions like a
// user's @jit helpers (dsl/BuiltinsLanguage.cpp).
#pragma once

namespace tessera {

const char *languagePreludeSource();

// The libdevice section of that source (LanguagePreludeLibdevice.cpp).
extern const char *const kLanguagePreludeLibdevice;

} // namespace tessera
