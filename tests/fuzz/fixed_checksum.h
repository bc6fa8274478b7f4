// For the binary cache files (common/search/cache_file_io.h), whose last 8
// bytes are a checksum of every byte before them: a mutated input almost
// never matches its checksum, so a fuzz target (or a damage test) that only
// tried inputs as they are would stop at the checksum. These give the same
// bytes with the checksum made right, so that the checks behind it are
// reached too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/search/content_hash.h"

namespace gpuspeech {
namespace testing {

// Sets the last 8 bytes of `b` (at least 8) to the checksum of the rest.
inline void fix_checksum(std::vector<uint8_t>& b) {
  ContentHasher h;
  h.update(b.data(), b.size() - 8);
  const uint64_t sum = h.low64();
  for (int i = 0; i < 8; ++i) b[b.size() - 8 + i] = static_cast<uint8_t>(sum >> (8 * i));
}

// Calls try_parse(bytes, size) on the input as it is, then, when it is long
// enough to hold one, on a copy whose checksum was made right.
template <typename TryParse>
void try_as_is_and_with_fixed_checksum(const uint8_t* data, size_t size, TryParse try_parse) {
  try_parse(data, size);
  if (size >= 8) {
    std::vector<uint8_t> fixed(data, data + size);
    fix_checksum(fixed);
    try_parse(fixed.data(), fixed.size());
  }
}

}  // namespace testing
}  // namespace gpuspeech
