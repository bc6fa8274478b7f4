// A frame's visited states, densely numbered (state_index.h).
#include "common/search/state_index.h"

namespace gpuspeech {

namespace {
constexpr int32_t kEmpty = -1;
constexpr int kInitialBits = 10;  // 1024 slots: a small grammar's frame
}  // namespace

StateIndex::StateIndex()
    : keys_(size_t{1} << kInitialBits, kEmpty),
      values_(size_t{1} << kInitialBits, 0),
      mask_((1u << kInitialBits) - 1),
      shift_(32 - kInitialBits) {}

int32_t StateIndex::find(int32_t state) const {
  for (uint32_t i = home(state);; i = (i + 1) & mask_) {
    const int32_t k = keys_[i];
    if (k == state) return values_[i];
    if (k == kEmpty) return -1;
  }
}

int32_t StateIndex::find_or_insert(int32_t state, bool* inserted) {
  uint32_t i = home(state);
  for (;; i = (i + 1) & mask_) {
    const int32_t k = keys_[i];
    if (k == state) {
      if (inserted != nullptr) *inserted = false;
      return values_[i];
    }
    if (k == kEmpty) break;
  }
  const int32_t local = static_cast<int32_t>(states_.size());
  keys_[i] = state;
  values_[i] = local;
  states_.push_back(state);
  slot_of_.push_back(i);
  if (inserted != nullptr) *inserted = true;
  if (2 * states_.size() > keys_.size()) grow();
  return local;
}

void StateIndex::clear() {
  for (uint32_t slot : slot_of_) keys_[slot] = kEmpty;
  slot_of_.clear();
  states_.clear();
}

void StateIndex::grow() {
  const size_t size = keys_.size() * 2;
  keys_.assign(size, kEmpty);
  values_.assign(size, 0);
  mask_ = static_cast<uint32_t>(size - 1);
  --shift_;
  for (size_t local = 0; local < states_.size(); ++local) {
    uint32_t i = home(states_[local]);
    while (keys_[i] != kEmpty) i = (i + 1) & mask_;
    keys_[i] = states_[local];
    values_[i] = static_cast<int32_t>(local);
    slot_of_[local] = i;
  }
}

}  // namespace gpuspeech
