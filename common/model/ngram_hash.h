// The bigrams and trigrams of a back-off n-gram model in one open-addressing
// hash table, and the back-off score over it, written once for the host and
// for CUDA kernels (docs/search-lanes-plan.md, S8 step 6).
//
// Why: the trie (ngram_view.h) finds an n-gram by binary searches, one
// level after the other, about 30 dependent loads a walk on en-us; word-end
// rescoring on the device waits for two such walks a word end, and a round
// waits for its slowest word end. Here every n-gram a score needs is found
// by its own lookup, independent of the others, so a GPU thread issues the
// three lookups of a trigram score at once and waits about one load's time
// (a listed n-gram is on average a probe or two from its home slot).
//
// The score is ngram_score_log10's to the bit (the same listed n-gram, the
// same back-off weights, added in the same order): the table holds every
// entry of the trie's orders 2 and 3, derived suffixes included, and the
// unigrams stay arrays indexed by word id. Models of order 3 or less whose
// vocabulary is below 2^21 - 1 words; NgramHashTable (ngram_hash_table.h)
// builds it.
#pragma once

#include <stdint.h>

#include "common/host_device.h"

namespace gpuspeech {

constexpr int kNgramHashMaxOrder = 3;
// A key packs up to three word ids + 1 in 21 bits each.
constexpr int kNgramHashWordBits = 21;
constexpr int kNgramHashMaxVocabulary = (1 << kNgramHashWordBits) - 1;

// 16 bytes and aligned so, so that a slot is one vector load on the device.
struct alignas(16) NgramHashEntry {
  unsigned long long key;  // ngram_hash_key of the n-gram; 0: an empty slot
  float log10_prob;
  float log10_backoff;     // 0 for trigrams and for bigrams of a bigram model
};
static_assert(sizeof(NgramHashEntry) == 16, "one slot is 16 bytes");

struct NgramHashView {
  const NgramHashEntry* slots = nullptr;  // mask + 1 of them; null: no table
  uint32_t mask = 0;                      // slots - 1, the count a power of two
  // The most slots a listed n-gram is from its home (1: at home): a lookup
  // stops there, or at an empty slot, whichever comes first.
  uint32_t max_probes = 0;
  const float* unigram_log10_prob = nullptr;     // by word id
  const float* unigram_log10_backoff = nullptr;  // by word id; null for a unigram model
  int order = 0;
  int vocabulary = 0;
};

// The key of the n-gram words[0..n), natural order (oldest first), n of 1
// to 3, ids below kNgramHashMaxVocabulary: the predicted word in the low
// bits, each older word 21 bits higher. Distinct n-grams, of any lengths,
// get distinct non-zero keys.
GPUSPEECH_HOST_DEVICE unsigned long long ngram_hash_key(const int* words, int n) {
  unsigned long long key = 0;
  for (int i = 0; i < n; ++i)
    key |= static_cast<unsigned long long>(static_cast<uint32_t>(words[n - 1 - i]) + 1u)
           << (kNgramHashWordBits * i);
  return key;
}

// The slot a key is first looked for in (before the mask): a 64-bit mix
// (MurmurHash3's finalizer), so that n-grams sharing their words' low bits
// spread over the table.
GPUSPEECH_HOST_DEVICE uint32_t ngram_hash_home(unsigned long long key) {
  key ^= key >> 33;
  key *= 0xff51afd7ed558ccdull;
  key ^= key >> 33;
  key *= 0xc4ceb9fe1a85ec53ull;
  key ^= key >> 33;
  return static_cast<uint32_t>(key);
}

// The entry keyed `key` into *found; false when the n-gram is not listed.
GPUSPEECH_HOST_DEVICE bool ngram_hash_find(const NgramHashView& h, unsigned long long key,
                                           NgramHashEntry* found) {
  uint32_t slot = ngram_hash_home(key) & h.mask;
  for (uint32_t probe = 0; probe < h.max_probes; ++probe, slot = (slot + 1) & h.mask) {
    const NgramHashEntry e = h.slots[slot];
    if (e.key == key) {
      *found = e;
      return true;
    }
    if (e.key == 0) return false;
  }
  return false;
}

// log10 P(word | history), as ngram_score_log10 gives it for the same
// model: `recent[i]` is the i-th most recent history word, i < k, with k
// at most order - 1; ids below `vocabulary` (the caller checks).
// `*matched` (if not null) receives the length of the longest listed
// n-gram used, 1 for the unigram.
GPUSPEECH_HOST_DEVICE float ngram_hash_score_log10(const NgramHashView& h, const int* recent, int k,
                                                   int word, int* matched = nullptr) {
  float prob = h.unigram_log10_prob[word];
  int length = 1;
  if (k > 0) {
    // The lookups do not depend on each other: issued together.
    const int bigram[2] = {recent[0], word};
    NgramHashEntry bi{}, tri{}, context{};
    const bool has_bi = ngram_hash_find(h, ngram_hash_key(bigram, 2), &bi);
    bool has_tri = false, has_context = false;
    if (k > 1) {
      const int trigram[3] = {recent[1], recent[0], word};
      const int pair[2] = {recent[1], recent[0]};
      has_tri = ngram_hash_find(h, ngram_hash_key(trigram, 3), &tri);
      has_context = ngram_hash_find(h, ngram_hash_key(pair, 2), &context);
    }
    // The trie lists every suffix of a listed n-gram, so a listed trigram
    // has its bigram listed: the longest listed one is the trie walk's.
    if (has_tri) {
      prob = tri.log10_prob;
      length = 3;
    } else if (has_bi) {
      prob = bi.log10_prob;
      length = 2;
    }
    // The back-offs of the contexts not followed by `word`, summed as
    // ngram_score_log10 sums them (from 0, the unigram context first).
    if (length <= k) {
      float bo = 0.0f;
      if (length <= 1) bo += h.unigram_log10_backoff[recent[0]];
      if (has_context) bo += context.log10_backoff;  // context "recent[1] recent[0]", length 2 <= k
      prob += bo;
    }
  }
  if (matched != nullptr) *matched = length;
  return prob;
}

}  // namespace gpuspeech
