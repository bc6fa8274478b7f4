// libFuzzer target: a DTW feature cache entry
// (common/dtw/template_feature_cache.h) on arbitrary bytes. The parser
// never throws: it either takes the input as an entry or says it is not
// one. A taken entry must keep the format's promises (rows and dim
// positive, rows x dim values, every one finite, a count of syllables not
// negative), and written back it must give the input's bytes exactly.
// A refused input must leave the outputs as they were. Anything else, or a
// sanitizer report, is a bug.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/dtw/template_feature_cache.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuspeech;
  FeatureMatrix m;
  m.rows = -7;  // a sentinel that no entry has
  int syllables = -7;
  if (!parse_dtw_feature_cache(data, size, &m, &syllables)) {
    if (m.rows != -7 || m.dim != 0 || !m.data.empty() || syllables != -7) __builtin_trap();
    return 0;
  }
  if (m.rows < 1 || m.dim < 1 || syllables < 0) __builtin_trap();
  if (m.data.size() != static_cast<size_t>(m.rows) * static_cast<size_t>(m.dim)) __builtin_trap();
  for (float x : m.data)
    if (!std::isfinite(x)) __builtin_trap();
  const std::vector<uint8_t> again = dtw_feature_cache_bytes(m, syllables);
  if (again.size() != size || std::memcmp(again.data(), data, size) != 0) __builtin_trap();
  return 0;
}
