// libFuzzer target: the graph cache's n-gram image parser (ngram_image.h)
// on arbitrary bytes. Every input must either parse into a model or throw
// std::runtime_error (ModelError is one); any other exception, crash,
// sanitizer report, hang or runaway allocation is a bug. A model that
// parses must be written back as exactly the input's bytes (the format has
// one spelling of each model), and must answer a query. Each input is
// tried twice: as it is, and with its trailing checksum recomputed, so that
// mutations also reach the structural checks behind the checksum.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "common/search/ngram_image.h"
#include "tests/fuzz/fixed_checksum.h"

namespace {

void try_parse(const uint8_t* data, size_t size) {
  try {
    const gpuspeech::NgramModel m = gpuspeech::parse_ngram_image(data, size, "fuzz.lm");
    const std::vector<uint8_t> back = gpuspeech::format_ngram_image(m);
    if (back.size() != size || std::memcmp(back.data(), data, size) != 0) __builtin_trap();
    if (m.vocabulary_size() > 0) {
      const int history[2] = {0, m.vocabulary_size() - 1};
      (void)m.score_log10(history, 2, m.vocabulary_size() / 2);
    }
  } catch (const std::runtime_error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gpuspeech::testing::try_as_is_and_with_fixed_checksum(data, size, try_parse);
  return 0;
}
