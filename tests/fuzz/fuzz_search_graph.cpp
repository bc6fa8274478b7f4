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

#include "common/search/search_graph.h"
#include "tests/fuzz/fixed_checksum.h"

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
  gpuspeech::testing::try_as_is_and_with_fixed_checksum(data, size, try_parse);
  return 0;
}
