// Word-end rescoring with a full n-gram LM, for graphs compiled with a
// pruned one (graph_cache.h prunes large LMs automatically). The searchers
// call it at every word end (token_passing.h, "Word-end rescoring"): for
// a token's LM history and the word just ended it gives the cost
// correction
//
//   delta = language_weight * ln(10) * (log10 P_pruned(w | h) - log10 P_full(w | h))
//
// (the pruned LM's cost, which the graph charged, replaced by the full
// LM's) and the history after the word. Histories are the last N - 1 words
// (N the larger order of the two LMs), starting with <s>, kept in a table
// whose ids the tokens carry; equal word suffixes get the same id, so two
// tokens with the same id have the same future under both LMs. Filler
// words are transparent (delta 0, same history).
//
// Why from the word sequence and not from the arcs: after determinisation
// and weight pushing, the LM cost of a word is spread over several arcs,
// some before its label; but along a whole path the graph charges the
// pruned LM's cost of each word after its history, so subtracting that and
// adding the full LM's at the word's label corrects the path's total. (The
// graph's back-off arcs are epsilons, so where a back-off path is cheaper
// than a listed n-gram the graph charged that cheaper cost; the correction
// then is off by the difference, as in any epsilon-back-off LM graph.)
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/model/ngram_model.h"

namespace gpuspeech {

class LmRescorer {
 public:
  // `graph_words` / `word_is_filler`: SearchGraph::words and word_is_filler.
  // Every non-filler graph word must be in both LMs (std::invalid_argument
  // naming the first missing one and the LM's source). The models must
  // outlive the rescorer.
  LmRescorer(std::shared_ptr<const NgramModel> full, std::shared_ptr<const NgramModel> pruned,
             const std::vector<std::string>& graph_words,
             const std::vector<uint8_t>& word_is_filler, float language_weight);

  struct WordEnd {
    float delta = 0.0f;     // cost correction
    int32_t history = 0;    // history id after the word
    uint32_t history_hash = 0;  // history_hash(history), for the slot
  };

  // Forgets every history but the start (id 0). Called at each utterance.
  void reset();
  static constexpr int32_t kStartHistory = 0;
  // The correction and next history for graph word `word` after `history`
  // (an id this rescorer handed out). Memoised per (history, word).
  WordEnd word_end(int32_t history, int32_t word);
  // The correction for the sentence end after `history` (0 if neither LM
  // has </s>).
  float end_delta(int32_t history);
  // The hash that picks a history's slot (slot = hash % K).
  uint32_t history_hash(int32_t history) const { return histories_.at(history).hash; }
  // The words of a history (full-LM spellings, oldest first).
  std::vector<std::string> history_words(int32_t history) const;
  size_t num_histories() const { return histories_.size(); }

  // Graph word -> full-LM / pruned-LM id, -1 for fillers; the history
  // length kept (N - 1): what a device copy of the rescoring needs.
  const std::vector<int>& full_of_graph() const { return full_of_graph_; }
  const std::vector<int>& pruned_of_graph() const { return pruned_of_graph_; }
  int history_length() const { return static_cast<int>(keep_); }
  std::shared_ptr<const NgramModel> full_lm_shared() const { return full_; }
  std::shared_ptr<const NgramModel> pruned_lm_shared() const { return pruned_; }
  const NgramModel& full_lm() const { return *full_; }
  const NgramModel& pruned_lm() const { return *pruned_; }
  float language_weight() const { return language_weight_; }

 private:
  struct History {
    std::vector<int> full_words;    // full-LM ids, oldest first, at most keep_ words
    std::vector<int> pruned_words;  // the same words in the pruned LM's ids
    uint32_t hash = 0;
    bool has_end = false;  // end_delta computed
    float end = 0.0f;
  };
  int32_t intern(History h);
  float delta_of(const History& h, int full_word, int pruned_word) const;

  std::shared_ptr<const NgramModel> full_, pruned_;
  float language_weight_;
  size_t keep_ = 0;                  // words a history keeps (N - 1)
  std::vector<int> full_of_graph_;   // graph word -> full-LM id, -1 for fillers
  std::vector<int> pruned_of_graph_;
  int full_end_ = -1, pruned_end_ = -1;  // </s>
  std::vector<History> histories_;
  std::unordered_map<std::string, int32_t> history_index_;  // full_words bytes -> id
  std::unordered_map<uint64_t, WordEnd> memo_;               // (history, word) -> result
  // A direct-mapped cache in front of memo_: a search asks for the same few
  // hundred (history, word) pairs frame after frame, and a hit here costs
  // one cache line instead of a hash-map probe (word ends are most of the
  // host's share of a rescoring search). Key ~0 = empty.
  struct CacheEntry {
    uint64_t key = ~uint64_t{0};
    WordEnd value;
  };
  // log2 of the entries (the slot is the top kCacheBits bits of the key's
  // Fibonacci hash). 2^14 entries: a few hundred live pairs then rarely
  // collide (well under one in ten share a slot), while the table (24-byte
  // entries, 384 KiB) fits in a current core's L2 (1-2 MiB) and costs
  // little to clear at each reset().
  static constexpr int kCacheBits = 14;
  static_assert(kCacheBits > 0 && kCacheBits < 32, "a slot index from a 64-bit hash's top bits");
  static constexpr size_t kCacheEntries = size_t{1} << kCacheBits;
  std::vector<CacheEntry> cache_;
};

}  // namespace gpuspeech
