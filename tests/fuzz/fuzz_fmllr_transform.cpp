// libFuzzer target: fMLLR transforms in Kaldi's text matrix layout
// (common/fmllr/fmllr_io.h) on arbitrary bytes. Every input must either
// parse or throw FmllrFormatError with a "fuzz.mat:" message; a parsed
// transform must be d x (d+1) with finite entries, and formatting it and
// parsing again must give the same numbers. Anything else is a bug.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/fmllr/fmllr_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuspeech;
  const std::string text(reinterpret_cast<const char*>(data), size);
  FmllrTransform t;
  try {
    t = parse_fmllr_transform(text, "fuzz.mat");
  } catch (const FmllrFormatError& e) {
    if (std::string(e.what()).rfind("fuzz.mat:", 0) != 0) __builtin_trap();
    return 0;
  }
  if (t.dim < 1 || t.w.size() != static_cast<size_t>(t.dim) * (t.dim + 1)) __builtin_trap();
  if (!t.all_finite()) __builtin_trap();
  TextMatrix m;
  m.rows = t.dim;
  m.cols = t.dim + 1;
  m.data = t.w;
  const FmllrTransform back = parse_fmllr_transform(format_kaldi_text_matrix(m), "fuzz.mat", t.dim);
  if (back.w != t.w) __builtin_trap();
  (void)t.log_abs_det();
  return 0;
}
