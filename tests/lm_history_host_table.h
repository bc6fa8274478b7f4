// A device LM history table's arrays in host vectors (common/search/
// lm_history_table.h), for the host tests of the table and of the
// word-end offers made over it.
#pragma once

#include <cstdint>
#include <vector>

#include "common/search/lm_history_table.h"

namespace gpuspeech {
namespace testing {

struct HostHistoryTable {
  std::vector<unsigned long long> keys;
  std::vector<int32_t> full, pruned, lengths;
  std::vector<uint32_t> hashes;
  LmHistoryTable view;
  explicit HostHistoryTable(uint32_t capacity)
      : keys(capacity, 0ull), full(capacity * kLmHistoryMaxWords, -1),
        pruned(capacity * kLmHistoryMaxWords, -1), lengths(capacity, 0), hashes(capacity, 0) {
    view.keys = keys.data();
    view.full_words = full.data();
    view.pruned_words = pruned.data();
    view.lengths = lengths.data();
    view.hashes = hashes.data();
    view.capacity = capacity;
  }
  // History `id`'s full-LM words, oldest first.
  std::vector<int32_t> words_of(int32_t id) const {
    return std::vector<int32_t>(full.begin() + id * kLmHistoryMaxWords,
                                full.begin() + id * kLmHistoryMaxWords + lengths[id]);
  }
};

}  // namespace testing
}  // namespace gpuspeech
