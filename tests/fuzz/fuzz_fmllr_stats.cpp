// libFuzzer target: fMLLR statistics as text (common/fmllr/fmllr_stats_io.h)
// on arbitrary bytes. Every input must either parse or throw
// FmllrFormatError with a "fuzz.stats" message; parsed statistics must have
// the sizes of their dimension, and formatting them and parsing again must
// give the same numbers. Anything else is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/fmllr/fmllr_stats_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuspeech;
  const std::string text(reinterpret_cast<const char*>(data), size);
  FmllrStats s;
  try {
    s = parse_fmllr_stats(text, "fuzz.stats");
  } catch (const FmllrFormatError& e) {
    if (std::string(e.what()).rfind("fuzz.stats", 0) != 0) __builtin_trap();
    return 0;
  }
  const size_t d = static_cast<size_t>(s.dim);
  if (s.dim < 1 || s.k.size() != d * (d + 1) || s.g.size() != d * (d + 1) * (d + 1)) __builtin_trap();
  if (!(s.beta >= 0.0)) __builtin_trap();
  const FmllrStats back = parse_fmllr_stats(format_fmllr_stats(s), "fuzz.stats", s.dim);
  if (back.beta != s.beta || back.k != s.k || back.g != s.g) __builtin_trap();
  return 0;
}
