// LSD radix sort of (key, index) pairs (radix_sort.h).
#include "common/search/radix_sort.h"

#include <algorithm>
#include <array>
#include <cstddef>

namespace gpuspeech {

void radix_sort_by_key(std::vector<KeyIndex>& items, std::vector<KeyIndex>& scratch) {
  const size_t n = items.size();
  // For a few dozen items a comparison sort is as quick.
  if (n < 64) {
    std::stable_sort(items.begin(), items.end(),
                     [](const KeyIndex& a, const KeyIndex& b) { return a.first < b.first; });
    return;
  }
  scratch.resize(n);
  // The bytes in which keys differ: only those need a pass.
  uint64_t all_or = 0, all_and = ~uint64_t{0};
  for (const KeyIndex& it : items) {
    all_or |= it.first;
    all_and &= it.first;
  }
  const uint64_t differ = all_or ^ all_and;
  KeyIndex* src = items.data();
  KeyIndex* dst = scratch.data();
  for (int shift = 0; shift < 64; shift += 8) {
    if (((differ >> shift) & 0xFFu) == 0) continue;
    std::array<uint32_t, 256> start{};
    for (size_t i = 0; i < n; ++i) ++start[(src[i].first >> shift) & 0xFFu];
    uint32_t sum = 0;
    for (uint32_t& c : start) {
      const uint32_t count = c;
      c = sum;
      sum += count;
    }
    for (size_t i = 0; i < n; ++i) dst[start[(src[i].first >> shift) & 0xFFu]++] = src[i];
    std::swap(src, dst);
  }
  if (src != items.data()) std::copy(src, src + n, items.data());
}

}  // namespace gpuspeech
