// libFuzzer target: ARPA language models on arbitrary text. Every input
// must either load or throw ModelError "fuzz.arpa..."; a loaded model must
// answer random queries within bounds (no NaN, no +inf) and survive being
// written out and read back.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/model/arpa_lm.h"
#include "common/model/model_error.h"
#include "common/model/ngram_model.h"

namespace {

void check(const gpuspeech::NgramModel& m, const uint8_t* data, size_t size) {
  const int V = m.vocabulary_size();
  if (V < 1) __builtin_trap();
  // Queries drawn from the input's bytes, all orders of history.
  std::vector<int> h;
  for (size_t i = 0; i + 1 < size && i < 64; ++i) {
    h.push_back(data[i] % V);
    if (h.size() > 5) h.erase(h.begin());
    const float s = m.score_log10(h, data[i + 1] % V);
    if (std::isnan(s) || s == INFINITY) __builtin_trap();
  }
  size_t listed = 0;
  for (int n = 1; n <= m.order(); ++n)
    m.for_each_ngram(n, [&](const int* ws, int k, float, float, bool) {
      if (!m.find(ws, k)) __builtin_trap();
      ++listed;
    });
  if (listed > 100000) return;
  const gpuspeech::NgramModel again =
      gpuspeech::parse_arpa_lm(gpuspeech::format_arpa_lm(m), "fuzz.again.arpa");
  if (again.order() != m.order()) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuspeech;
  try {
    const NgramModel m = parse_arpa_lm(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.arpa");
    check(m, data, size);
  } catch (const ModelError& e) {
    if (std::string(e.what()).rfind("fuzz.arpa", 0) != 0) __builtin_trap();
  }
  return 0;
}
