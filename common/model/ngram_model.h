// A back-off n-gram language model, whatever file it came from (ARPA text,
// arpa_lm.h; Sphinx binary trie .lm.bin, lm_trie_reader.h), with the
// standard back-off score:
//
//   P(w | h) = P*(h w)                    if the n-gram "h w" is listed
//            = BO(h) * P(w | h minus its oldest word)   otherwise
//
// where BO of a context that is not listed is 1. Probabilities are held as
// log10 (ARPA's unit); score_ln gives natural logs.
//
// Storage is the layout Sphinx's binary format uses, unpacked: a trie keyed
// on the words in reverse (the predicted word first, then the history from
// the most recent word back), one level per order, children of each entry
// contiguous and sorted by word id. Reversal makes the common query, the
// longest listed n-gram ending in w, one walk down from w. The trie needs
// every listed n-gram's suffixes listed too ("b c" for "a b c"); where a
// source lacks one, the builder inserts it with the probability back-off
// gives it and a back-off weight of 0, which leaves every score unchanged
// (Sphinx does the same; such entries are flagged `derived`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/model/ngram_view.h"

namespace gpuspeech {

// One order of the reversed trie. Unigrams (level 0) are indexed by word id
// and have no `words`; the highest order has no back-offs nor children.
struct NgramLevel {
  std::vector<uint32_t> words;          // last word of the reversed path
  std::vector<float> log10_prob;
  std::vector<float> log10_backoff;
  std::vector<uint32_t> children;       // entry i's children: [children[i], children[i+1])
  std::vector<uint8_t> derived;         // empty, or 1 per entry the builder inserted
  size_t size() const { return log10_prob.size(); }
};

// The n-grams of one order as a reader found them (natural word order).
struct NgramList {
  int order = 0;
  std::vector<uint32_t> words;          // `order` ids per n-gram, flattened
  std::vector<float> log10_prob;
  std::vector<float> log10_backoff;     // one per n-gram (0 where absent)
  std::vector<long> lines;              // source line per n-gram, for messages (optional)
  size_t size() const { return log10_prob.size(); }
};

enum class LmFileFormat { kArpa, kSphinxTrie, kBuilt };
const char* to_string(LmFileFormat);

class NgramModel {
 public:
  static constexpr int kNoWord = -1;
  static constexpr int kMaxOrder = 10;
  static_assert(kMaxOrder <= kNgramViewMaxOrder, "a view holds every order");

  NgramModel() = default;

  // From n-gram lists of orders 1..N (lists[0] = unigrams, word i of the
  // vocabulary at position i). Sorts, rejects duplicates, inserts missing
  // suffixes. Throws ModelError "SOURCE:LINE: ..." / "SOURCE: ...".
  static NgramModel build(std::vector<std::string> vocabulary, std::vector<NgramList> lists,
                          const std::string& source, LmFileFormat format = LmFileFormat::kBuilt);
  // From a ready trie; checks every index and ordering (so that no query
  // can go out of bounds). Throws ModelError "SOURCE: ..." on any violation.
  static NgramModel from_trie(std::vector<std::string> vocabulary,
                              std::vector<NgramLevel> levels, const std::string& source,
                              LmFileFormat format);

  int order() const { return static_cast<int>(levels_.size()); }
  // Entries of order n (1-based), derived suffixes included.
  size_t num_ngrams(int n) const { return levels_.at(n - 1).size(); }
  size_t num_derived(int n) const;
  const std::vector<std::string>& vocabulary() const { return vocab_; }
  int vocabulary_size() const { return static_cast<int>(vocab_.size()); }
  int word_id(std::string_view word) const;
  const std::string& word(int id) const { return vocab_.at(id); }

  // log10 P(word | history). `history` is oldest first; only its last
  // order()-1 words count. `ngram_length`, if given, receives the length of
  // the longest listed n-gram used (1 = unigram). Ids must be valid
  // (std::out_of_range otherwise).
  float score_log10(const int* history, size_t history_len, int word,
                    int* ngram_length = nullptr) const;
  float score_log10(const std::vector<int>& history, int word) const {
    return score_log10(history.data(), history.size(), word);
  }
  // The same by spelling; std::out_of_range names an unknown word.
  float score_log10(const std::vector<std::string>& history, const std::string& word) const;
  double score_ln(const int* history, size_t history_len, int word) const;

  // log10 back-off weight of a context (oldest first); 0 if not listed.
  float backoff_log10(const int* context, size_t n) const;
  // True if words[0..n) is a listed n-gram; its values then go to the
  // pointers given (back-off 0 at the highest order).
  bool find(const int* words, size_t n, float* log10_prob = nullptr,
            float* log10_backoff = nullptr) const;

  // Calls fn(words, n, log10_prob, log10_backoff, derived) for every entry
  // of order n, words in natural order.
  using NgramVisitor =
      std::function<void(const int* words, int n, float log10_prob, float log10_backoff,
                         bool derived)>;
  void for_each_ngram(int n, const NgramVisitor& fn) const;

  const std::string& source() const { return source_; }
  LmFileFormat format() const { return format_; }
  // "SOURCE[:LINE]: what" for each tolerated oddity.
  const std::vector<std::string>& warnings() const { return warnings_; }
  void add_warning(std::string w) { warnings_.push_back(std::move(w)); }

  // Internal storage, for writers and tests.
  const std::vector<NgramLevel>& levels() const { return levels_; }
  // The trie as plain arrays (ngram_view.h), valid while this model lives
  // unchanged: what score_log10 reads, and what a device copy mirrors.
  NgramView view() const;

 private:
  void index_vocabulary();
  void validate() const;
  // Searches level `lvl` within [begin, end) for word `w`; -1 if absent.
  long find_child(int lvl, uint32_t begin, uint32_t end, uint32_t w) const;

  std::vector<std::string> vocab_;
  std::unordered_map<std::string, int> vocab_index_;
  std::vector<NgramLevel> levels_;
  std::string source_;
  LmFileFormat format_ = LmFileFormat::kBuilt;
  std::vector<std::string> warnings_;
};

// Reads an LM file of either format, told apart by content (the binary
// header, else ARPA text). Throws ModelError.
NgramModel read_ngram_model(const std::string& path);

}  // namespace gpuspeech
