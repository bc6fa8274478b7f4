// libFuzzer target: Sphinx binary (trie) language models on arbitrary
// bytes. Every input must either load or throw ModelError "fuzz.lm.bin...",
// never read out of bounds nor allocate beyond what the file size allows; a
// loaded model must answer queries within bounds.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/model/lm_trie_reader.h"
#include "common/model/model_error.h"
#include "common/model/ngram_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuspeech;
  try {
    const NgramModel m =
        parse_lm_trie(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.lm.bin");
    const int V = m.vocabulary_size();
    if (V < 1) __builtin_trap();
    std::vector<int> h;
    for (size_t i = 0; i + 1 < size && i < 64; ++i) {
      h.push_back(data[size - 1 - i] % V);
      if (h.size() > 4) h.erase(h.begin());
      const float s = m.score_log10(h, data[i] % V);
      if (std::isnan(s)) __builtin_trap();
    }
    for (int n = 1; n <= m.order(); ++n)
      m.for_each_ngram(n, [&](const int* ws, int k, float, float, bool) {
        if (!m.find(ws, k)) __builtin_trap();
      });
  } catch (const ModelError& e) {
    if (std::string(e.what()).rfind("fuzz.lm.bin", 0) != 0) __builtin_trap();
  }
  return 0;
}
