// Building the n-gram hash table (ngram_hash_table.h).
#include "common/model/ngram_hash_table.h"

#include "common/model/model_error.h"

namespace gpuspeech {

bool NgramHashTable::fits(const NgramModel& lm, std::string* why) {
  std::string reason;
  if (lm.order() > kNgramHashMaxOrder)
    reason = "order " + std::to_string(lm.order()) + " (the hash holds orders up to 3)";
  else if (lm.vocabulary_size() >= kNgramHashMaxVocabulary)
    reason = std::to_string(lm.vocabulary_size()) + " words (the hash holds fewer than " +
             std::to_string(kNgramHashMaxVocabulary) + ")";
  if (why != nullptr) *why = reason;
  return reason.empty();
}

NgramHashTable::NgramHashTable(const NgramModel& lm) : trie_(lm.view()) {
  std::string why;
  if (!fits(lm, &why)) throw ModelError(lm.source() + ": no n-gram hash for " + why);
  for (int n = 2; n <= lm.order(); ++n) entries_ += lm.num_ngrams(n);
  // At most half full: a listed n-gram is then a probe or two from home
  // on average, and an absent one meets an empty slot as soon.
  size_t capacity = 2;
  while (capacity < 2 * entries_) capacity <<= 1;
  if (capacity > (size_t{1} << 31))
    throw ModelError(lm.source() + ": " + std::to_string(entries_) + " n-grams are too many for the hash");
  slots_.assign(capacity, NgramHashEntry{0, 0.0f, 0.0f});
  const uint32_t mask = static_cast<uint32_t>(capacity - 1);
  for (int n = 2; n <= lm.order(); ++n) {
    lm.for_each_ngram(n, [&](const int* words, int len, float log10_prob, float log10_backoff, bool) {
      const unsigned long long key = ngram_hash_key(words, len);
      uint32_t slot = ngram_hash_home(key) & mask;
      uint32_t probes = 1;
      // The trie's entries are distinct n-grams, so no key comes twice.
      while (slots_[slot].key != 0) {
        slot = (slot + 1) & mask;
        ++probes;
      }
      slots_[slot] = NgramHashEntry{key, log10_prob, log10_backoff};
      if (probes > max_probes_) max_probes_ = probes;
    });
  }
}

NgramHashView NgramHashTable::view() const {
  NgramHashView v;
  v.slots = slots_.data();
  v.mask = static_cast<uint32_t>(slots_.size() - 1);
  v.max_probes = max_probes_;
  v.unigram_log10_prob = trie_.levels[0].log10_prob;
  v.unigram_log10_backoff = trie_.levels[0].log10_backoff;
  v.order = trie_.order;
  v.vocabulary = trie_.vocabulary;
  return v;
}

}  // namespace gpuspeech
