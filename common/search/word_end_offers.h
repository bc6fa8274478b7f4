// From a frame's word-end events to the offers of the next round, as
// Searcher::rescore_word_ends makes them on the host, written once for the
// host (tests) and for CUDA kernels (docs/search-lanes-plan.md, S8 step 4):
// the events in (source, arc) order, each one's offer at its place, so that
// an offer's tie-break index (num_arcs + its place) is the host's.
//
// The order without a sort: the (source, arc) keys of a frame's events are
// distinct (one event per token and word arc), so an event's place is the
// number of events with a smaller key, which each thread can count on its
// own (n comparisons an event).
#pragma once

#include <stdint.h>

#include "common/search/lm_history_table.h"
#include "common/search/search_arithmetic.h"

namespace gpuspeech {

// An event's order key: source (a virtual state) above, arc below, as the
// host's sort key.
GPUSPEECH_HOST_DEVICE uint64_t word_end_event_key(int32_t source, uint32_t arc) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(source)) << 32) | arc;
}

// The place of the event with key `key` among the n events whose keys
// key_at(j) gives: how many are smaller. Distinct keys give distinct
// places 0..n-1.
template <class KeyAt>
GPUSPEECH_HOST_DEVICE uint32_t word_end_event_place(KeyAt key_at, uint32_t n, uint64_t key) {
  uint32_t place = 0;
  for (uint32_t j = 0; j < n; ++j) place += key_at(j) < key ? 1u : 0u;
  return place;
}

// An event's offer (Searcher::WordEndOffer's fields), from the event and
// its word end (lm_word_end): to the word's destination state in the slot
// of the new history, at the event's cost plus the correction.
struct WordEndOfferFields {
  int32_t dest;
  float cost;
  int32_t word;
  int32_t record;
  int32_t history;
};
GPUSPEECH_HOST_DEVICE WordEndOfferFields word_end_offer(int32_t event_dest, float event_cost,
                                                        int32_t word, int32_t record,
                                                        const LmWordEnd& we, int32_t slots) {
  WordEndOfferFields o;
  o.dest = event_dest * slots + static_cast<int32_t>(we.history_hash % static_cast<uint32_t>(slots));
  o.cost = search::add_cost(event_cost, we.delta);
  o.word = word;
  o.record = record;
  o.history = we.history;
  return o;
}

}  // namespace gpuspeech
