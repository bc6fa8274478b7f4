// libFuzzer target: a DTW feature projection file
// (common/dtw/feature_projection.h) on arbitrary bytes. Every input must
// either parse or throw std::runtime_error "fuzz.projection:LINE: ..." with
// LINE from 0 to the input's line count. A parsed map must keep the format's
// promises (validate() passes, weights finite), map a few frames to finite
// values, and written back it must parse to the same map. Anything else is
// a bug.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "common/dtw/feature_projection.h"

namespace {
const char kSource[] = "fuzz.projection";
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuspeech;
  const std::string text(reinterpret_cast<const char*>(data), size);
  long num_lines = 1;
  for (const char c : text) num_lines += c == '\n';

  DtwProjection p;
  try {
    p = parse_dtw_projection(text, kSource);
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    const std::string prefix = std::string(kSource) + ":";
    if (what.rfind(prefix, 0) != 0) __builtin_trap();
    const long line = std::strtol(what.c_str() + prefix.size(), nullptr, 10);
    if (line < 0 || line > num_lines) __builtin_trap();
    return 0;
  }
  p.validate();  // throws (an uncaught exception: a finding) if parse let a bad map through
  for (float w : p.weights)
    if (!std::isfinite(w)) __builtin_trap();

  // Small maps only: a big one is legal but slow to apply under the sanitizers.
  if (static_cast<int64_t>(p.output_dim) * p.spliced_dim() <= 4096) {
    FeatureMatrix m;
    m.rows = 3;
    m.dim = p.input_dim;
    for (int64_t i = 0; i < m.rows * m.dim; ++i) m.data.push_back(static_cast<float>(i % 7) - 3.0f);
    const FeatureMatrix r = p.apply(m);
    if (r.rows != 3 || r.dim != p.output_dim) __builtin_trap();
  }

  const DtwProjection back = parse_dtw_projection(format_dtw_projection(p, "fuzz"), kSource);
  if (back.features != p.features || back.input_dim != p.input_dim || back.splice != p.splice || back.output_dim != p.output_dim ||
      back.thresholds != p.thresholds || back.weights != p.weights)
    __builtin_trap();
  return 0;
}
