// Builds the hash table of ngram_hash.h from an NgramModel's trie: every
// bigram and trigram entry (derived suffixes included) in twice as many
// slots, rounded up to a power of two, by linear probing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/model/ngram_hash.h"
#include "common/model/ngram_model.h"

namespace gpuspeech {

class NgramHashTable {
 public:
  // Whether `lm` fits the table (order <= 3, vocabulary below
  // kNgramHashMaxVocabulary); `why` (if given) receives the reason it
  // does not.
  static bool fits(const NgramModel& lm, std::string* why = nullptr);
  // Throws ModelError "SOURCE: ..." when the model does not fit. The view
  // reads `lm`'s unigram arrays: `lm` must outlive this table unchanged.
  explicit NgramHashTable(const NgramModel& lm);

  // Host pointers (slots here, unigrams in the model).
  NgramHashView view() const;
  const std::vector<NgramHashEntry>& slots() const { return slots_; }
  size_t entries() const { return entries_; }
  uint32_t max_probes() const { return max_probes_; }
  size_t bytes() const { return slots_.size() * sizeof(NgramHashEntry); }

 private:
  std::vector<NgramHashEntry> slots_;
  size_t entries_ = 0;
  uint32_t max_probes_ = 1;
  NgramView trie_;  // the unigram arrays, order and vocabulary
};

}  // namespace gpuspeech
