// Word-end rescoring without the host (docs/search-lanes-plan.md, S8): a
// stream's LM histories in a table that many threads fill at once, and the
// word-end step over it, written once for the host (tests) and for CUDA
// kernels. It gives what LmRescorer::word_end gives, the same floats and
// the same history hashes, for LMs of order 3 or less (N - 1 <= 2 history
// words, which pocketsphinx's en-us LM is): costs come from the words, the
// slot from their hash, so the ids, which depend on which thread inserted
// first, decide nothing.
//
// A history is the last N - 1 words of the full LM (and the same words in
// the pruned LM's ids), keyed by one 64-bit word; its id is its entry's
// index. Entries are only ever added (until the stream's next utterance
// clears the table), so an id, once handed out, names the same words.
#pragma once

#include <stdint.h>

#include "common/model/ngram_hash.h"
#include "common/model/ngram_view.h"
#include "common/search/history_hash.h"
#include "common/search/search_arithmetic.h"

namespace gpuspeech {

constexpr int kLmHistoryMaxWords = 2;

// The table's arrays (device memory in a kernel, host memory in tests).
struct LmHistoryTable {
  unsigned long long* keys = nullptr;  // capacity entries; 0: empty
  int32_t* full_words = nullptr;       // capacity x kLmHistoryMaxWords, oldest first
  int32_t* pruned_words = nullptr;     // the same words in the pruned LM's ids
  int32_t* lengths = nullptr;          // words in the history (0..words)
  uint32_t* hashes = nullptr;          // history_hash_of(full words)
  uint32_t capacity = 0;               // a power of two
  // Slots an insertion probes before it calls the table full (0: all). A
  // bound keeps a crowded table from making one word end walk thousands
  // of slots; the device's tables grow when it is reached.
  uint32_t probe_limit = 0;
};

// What the word-end step needs besides the table: both LMs, the graph's
// words in each, and the rescoring's constants.
struct LmRescoringView {
  NgramView full, pruned;
  // The same LMs' n-gram hashes (ngram_hash.h), or null slots: scores are
  // then walked in the tries. The same floats either way; the hash's
  // lookups do not wait for each other (S8 step 6).
  NgramHashView full_hash, pruned_hash;
  const int32_t* full_of_graph = nullptr;    // graph word -> full-LM id; -1: a filler
  const int32_t* pruned_of_graph = nullptr;  // graph word -> pruned-LM id
  int words = 0;                             // N - 1: history length kept (0..2)
  float language_weight = 0.0f;
};

// A history's key: distinct for distinct word lists of length 0..2 (ids
// below 2^31 - 1, which every LM here has).
GPUSPEECH_HOST_DEVICE unsigned long long lm_history_key(const int32_t* full, int n) {
  if (n == 0) return 1ull << 63;
  if (n == 1) return static_cast<unsigned long long>(static_cast<uint32_t>(full[0]) + 1u);
  return (static_cast<unsigned long long>(static_cast<uint32_t>(full[0]) + 1u) << 32) |
         static_cast<unsigned long long>(static_cast<uint32_t>(full[1]) + 1u);
}

// Swaps *p from `expected` to `desired` if it holds `expected`; returns
// what it held.
GPUSPEECH_HOST_DEVICE unsigned long long lm_history_cas(unsigned long long* p,
                                                        unsigned long long expected,
                                                        unsigned long long desired) {
#ifdef __CUDA_ARCH__
  return atomicCAS(p, expected, desired);
#else
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  return expected;
#endif
}

// *p, read without a read-modify-write: most probes meet a slot that some
// thread keyed long before, and an atomic swap on it would serialise the
// threads that look the same history up.
GPUSPEECH_HOST_DEVICE unsigned long long lm_history_load(const unsigned long long* p) {
#ifdef __CUDA_ARCH__
  return *static_cast<const volatile unsigned long long*>(p);
#else
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

// The id of the history `full` / `pruned` (n words, oldest first), added
// if new; -1 when the table is full, or probe_limit slots were taken (the
// caller runs the frame again with a larger one). The entry's words are written by the thread that added it:
// another thread that finds the key in the same phase gets the id but
// must not read the entry before the next barrier (it has the words).
GPUSPEECH_HOST_DEVICE int32_t lm_history_intern(const LmHistoryTable& t, const int32_t* full,
                                                const int32_t* pruned, int n, uint32_t hash) {
  const unsigned long long key = lm_history_key(full, n);
  const uint32_t mask = t.capacity - 1;
  uint32_t slot = hash & mask;
  const uint32_t probes = t.probe_limit != 0 && t.probe_limit < t.capacity ? t.probe_limit : t.capacity;
  for (uint32_t probe = 0; probe < probes; ++probe, slot = (slot + 1) & mask) {
    unsigned long long held = lm_history_load(t.keys + slot);
    if (held == key) return static_cast<int32_t>(slot);
    if (held != 0ull) continue;
    held = lm_history_cas(t.keys + slot, 0ull, key);
    if (held == key) return static_cast<int32_t>(slot);
    if (held != 0ull) continue;
    for (int i = 0; i < kLmHistoryMaxWords; ++i) {
      t.full_words[slot * kLmHistoryMaxWords + i] = i < n ? full[i] : -1;
      t.pruned_words[slot * kLmHistoryMaxWords + i] = i < n ? pruned[i] : -1;
    }
    t.lengths[slot] = n;
    t.hashes[slot] = hash;
    return static_cast<int32_t>(slot);
  }
  return -1;
}

// The cost correction of word `full` (its id in the full LM) and `pruned`
// (in the pruned LM) after history id `history`: both LMs' back-off walks
// over at most order - 1 of the history's words, most recent first.
GPUSPEECH_HOST_DEVICE float lm_history_delta(const LmRescoringView& v, const LmHistoryTable& t,
                                             int32_t history, int32_t full, int32_t pruned) {
  const int n = t.lengths[history];
  const int32_t* hf = t.full_words + history * kLmHistoryMaxWords;
  const int32_t* hp = t.pruned_words + history * kLmHistoryMaxWords;
  int rf[kLmHistoryMaxWords], rp[kLmHistoryMaxWords];
  for (int i = 0; i < n; ++i) {
    rf[i] = hf[n - 1 - i];
    rp[i] = hp[n - 1 - i];
  }
  const int kf = n < v.full.order - 1 ? n : v.full.order - 1;
  const int kp = n < v.pruned.order - 1 ? n : v.pruned.order - 1;
  const float full_log10 = v.full_hash.slots != nullptr ? ngram_hash_score_log10(v.full_hash, rf, kf, full)
                                                        : ngram_score_log10(v.full, rf, kf, full);
  const float pruned_log10 = v.pruned_hash.slots != nullptr
                                 ? ngram_hash_score_log10(v.pruned_hash, rp, kp, pruned)
                                 : ngram_score_log10(v.pruned, rp, kp, pruned);
  return search::word_end_delta(v.language_weight, pruned_log10, full_log10);
}

struct LmWordEnd {
  float delta = 0.0f;     // cost correction
  int32_t history = 0;    // history id after the word; -1: the table is full
  uint32_t history_hash = 0;
};

// LmRescorer::word_end for graph word `word` after history id `history`
// (an entry added in an earlier phase).
GPUSPEECH_HOST_DEVICE LmWordEnd lm_word_end(const LmRescoringView& v, const LmHistoryTable& t,
                                            int32_t history, int32_t word) {
  LmWordEnd r;
  const int32_t f = v.full_of_graph[word];
  if (f < 0) {  // a filler: transparent
    r.history = history;
    r.history_hash = t.hashes[history];
    return r;
  }
  const int32_t p = v.pruned_of_graph[word];
  const int n = t.lengths[history];
  const int32_t* hf = t.full_words + history * kLmHistoryMaxWords;
  const int32_t* hp = t.pruned_words + history * kLmHistoryMaxWords;
  r.delta = lm_history_delta(v, t, history, f, p);
  // The next history: the last `words` of history + word.
  int32_t nf[kLmHistoryMaxWords + 1], np[kLmHistoryMaxWords + 1];
  for (int i = 0; i < n; ++i) {
    nf[i] = hf[i];
    np[i] = hp[i];
  }
  nf[n] = f;
  np[n] = p;
  const int len = n + 1 > v.words ? v.words : n + 1;
  const int from = n + 1 - len;
  r.history_hash = history_hash_of(nf + from, len);
  r.history = lm_history_intern(t, nf + from, np + from, len, r.history_hash);
  return r;
}

// LmRescorer::end_delta for history id `history`: the correction of the
// sentence end (`full_end` and `pruned_end`, "</s>" in each LM; 0 where
// either LM lacks it) after that history. The host needs it for results
// once histories live in a device table (S8 step 5: the best token's
// total at partial and final results, and n-best lists), over a host copy
// of the table's words and lengths. lm_word_end's correction for a word
// that is the sentence end, so the same float.
GPUSPEECH_HOST_DEVICE float lm_end_delta(const LmRescoringView& v, const LmHistoryTable& t,
                                         int32_t history, int32_t full_end, int32_t pruned_end) {
  if (full_end < 0 || pruned_end < 0) return 0.0f;
  return lm_history_delta(v, t, history, full_end, pruned_end);
}

}  // namespace gpuspeech
