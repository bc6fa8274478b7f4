// libFuzzer target: the search graph file parser on arbitrary bytes. Every
// input must either parse into a graph that passes validate() or throw
// std::runtime_error; any other exception, crash, sanitizer report, hang or
// runaway allocation is a bug. Each input is tried twice: as it is, and with
// its trailing checksum recomputed, so that mutations also reach the
// structural checks behind the checksum.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "common/search/content_hash.h"
#include "common/search/search_graph.h"

namespace {

void try_parse(const uint8_t* data, size_t size) {
  try {
    const gpuspeech::SearchGraph g = gpuspeech::SearchGraph::parse(data, size, "fuzz.gsg");
    g.validate();  // a successful parse promises a valid graph
    if (g.num_states() < 1) __builtin_trap();
  } catch (const std::runtime_error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try_parse(data, size);
  if (size >= 8) {
    std::vector<uint8_t> fixed(data, data + size);
    gpuspeech::ContentHasher h;
    h.update(fixed.data(), size - 8);
    const uint64_t sum = h.low64();
    for (int i = 0; i < 8; ++i) fixed[size - 8 + i] = static_cast<uint8_t>(sum >> (8 * i));
    try_parse(fixed.data(), fixed.size());
  }
  return 0;
}
