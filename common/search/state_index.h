// The states one frame of a search touches, numbered densely in the order
// they were first reached: a hash map from (virtual) graph state to a small
// local index, so that a stream's per-state search values live in arrays
// as long as the frame's visited set, not the graph (7.4 M states, 22 M
// virtual states with three LM histories on the en-us graph: 0.8 GB of
// dense arrays a stream, against a few thousand entries visited a frame).
//
// Open addressing with linear probing over a power-of-two table kept at
// most half full; clear() costs the entries inserted, not the table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpuspeech {

class StateIndex {
 public:
  StateIndex();

  // The local index of `state` (>= 0), or -1 if it was not inserted since
  // the last clear().
  int32_t find(int32_t state) const;
  // The local index of `state`, inserted as index size() if absent;
  // `inserted` (optional) tells which.
  int32_t find_or_insert(int32_t state, bool* inserted = nullptr);
  // The states in local-index order (first reached first).
  const std::vector<int32_t>& states() const { return states_; }
  int32_t state_at(int32_t local) const { return states_[static_cast<size_t>(local)]; }
  int32_t size() const { return static_cast<int32_t>(states_.size()); }
  bool empty() const { return states_.empty(); }
  // Forgets every state; keeps the table's size.
  void clear();

 private:
  uint32_t home(int32_t state) const {
    // Fibonacci hashing: the top bits of the product spread nearby states.
    return (static_cast<uint32_t>(state) * 2654435769u) >> shift_;
  }
  void grow();

  std::vector<int32_t> keys_;     // table; kEmpty where free
  std::vector<int32_t> values_;   // local index of keys_[i]
  std::vector<uint32_t> slot_of_;  // local index -> its slot in keys_
  std::vector<int32_t> states_;   // local index -> state
  uint32_t mask_ = 0;
  int shift_ = 0;
};

}  // namespace gpuspeech
