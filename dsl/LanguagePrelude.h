// The part of triton.language that Triton itself writes in the language
// (triton/language/standard.py, random.py): compiled from Python source by
// the specialiser like a user's @jit helpers.
#pragma once

namespace tessera {

const char *languagePreludeSource();

} // namespace tessera
