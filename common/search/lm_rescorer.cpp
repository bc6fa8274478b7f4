// Word-end rescoring with the full LM (lm_rescorer.h).
#include "common/search/lm_rescorer.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "common/search/history_hash.h"
#include "common/search/search_arithmetic.h"

namespace gpuspeech {
namespace {

uint32_t hash_words(const std::vector<int>& words) {
  return history_hash_of(words.data(), static_cast<int>(words.size()));
}

std::string key_of(const std::vector<int>& words) {
  return std::string(reinterpret_cast<const char*>(words.data()), words.size() * sizeof(int));
}

}  // namespace

LmRescorer::LmRescorer(std::shared_ptr<const NgramModel> full,
                       std::shared_ptr<const NgramModel> pruned,
                       const std::vector<std::string>& graph_words,
                       const std::vector<uint8_t>& word_is_filler, float language_weight)
    : full_(std::move(full)), pruned_(std::move(pruned)), language_weight_(language_weight) {
  if (!full_ || !pruned_) throw std::invalid_argument("lm rescorer: a language model is missing");
  if (!(language_weight > 0.0f) || !std::isfinite(language_weight))
    throw std::invalid_argument("lm rescorer: language weight must be positive and finite");
  const int order = std::max(full_->order(), pruned_->order());
  keep_ = order > 1 ? static_cast<size_t>(order - 1) : 0;
  full_of_graph_.assign(graph_words.size(), -1);
  pruned_of_graph_.assign(graph_words.size(), -1);
  for (size_t w = 0; w < graph_words.size(); ++w) {
    if (w < word_is_filler.size() && word_is_filler[w] != 0) continue;
    const int f = full_->word_id(graph_words[w]);
    const int p = pruned_->word_id(graph_words[w]);
    if (f == NgramModel::kNoWord)
      throw std::invalid_argument("lm rescorer: graph word '" + graph_words[w] +
                                  "' is not in the language model " + full_->source());
    if (p == NgramModel::kNoWord)
      throw std::invalid_argument("lm rescorer: graph word '" + graph_words[w] +
                                  "' is not in the pruned language model " + pruned_->source());
    full_of_graph_[w] = f;
    pruned_of_graph_[w] = p;
  }
  full_end_ = full_->word_id("</s>");
  pruned_end_ = pruned_->word_id("</s>");
  reset();
}

void LmRescorer::reset() {
  histories_.clear();
  history_index_.clear();
  memo_.clear();
  cache_.assign(kCacheEntries, CacheEntry{});
  History start;
  const int fs = full_->word_id("<s>");
  const int ps = pruned_->word_id("<s>");
  if (keep_ > 0 && fs != NgramModel::kNoWord && ps != NgramModel::kNoWord) {
    start.full_words.push_back(fs);
    start.pruned_words.push_back(ps);
  }
  intern(std::move(start));
}

int32_t LmRescorer::intern(History h) {
  const std::string key = key_of(h.full_words);
  auto it = history_index_.find(key);
  if (it != history_index_.end()) return it->second;
  if (histories_.size() >= static_cast<size_t>(INT32_MAX))
    throw std::length_error("lm rescorer: more than 2^31 histories");
  h.hash = hash_words(h.full_words);
  const int32_t id = static_cast<int32_t>(histories_.size());
  histories_.push_back(std::move(h));
  history_index_.emplace(key, id);
  return id;
}

float LmRescorer::delta_of(const History& h, int full_word, int pruned_word) const {
  const float full = full_->score_log10(h.full_words.data(), h.full_words.size(), full_word);
  const float pruned =
      pruned_->score_log10(h.pruned_words.data(), h.pruned_words.size(), pruned_word);
  return search::word_end_delta(language_weight_, pruned, full);
}

LmRescorer::WordEnd LmRescorer::word_end(int32_t history, int32_t word) {
  if (history < 0 || static_cast<size_t>(history) >= histories_.size())
    throw std::out_of_range("lm rescorer: unknown history " + std::to_string(history));
  if (word < 0 || static_cast<size_t>(word) >= full_of_graph_.size())
    throw std::out_of_range("lm rescorer: unknown graph word " + std::to_string(word));
  const int f = full_of_graph_[word];
  if (f < 0) return WordEnd{0.0f, history, histories_[history].hash};  // a filler: transparent
  const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(history)) << 32) |
                       static_cast<uint32_t>(word);
  // Fibonacci hashing of the key picks the cache entry: its top kCacheBits
  // bits, which depend on every bit of the key.
  CacheEntry& entry = cache_[(key * 0x9E3779B97F4A7C15ull) >> (64 - kCacheBits)];
  if (entry.key == key) return entry.value;
  auto it = memo_.find(key);
  if (it != memo_.end()) {
    entry.key = key;
    entry.value = it->second;
    return it->second;
  }
  const int p = pruned_of_graph_[word];
  WordEnd r;
  r.delta = delta_of(histories_[history], f, p);
  History next;
  next.full_words = histories_[history].full_words;
  next.pruned_words = histories_[history].pruned_words;
  next.full_words.push_back(f);
  next.pruned_words.push_back(p);
  while (next.full_words.size() > keep_) {
    next.full_words.erase(next.full_words.begin());
    next.pruned_words.erase(next.pruned_words.begin());
  }
  r.history = intern(std::move(next));  // may reallocate histories_
  r.history_hash = histories_[r.history].hash;
  memo_.emplace(key, r);
  entry.key = key;
  entry.value = r;
  return r;
}

float LmRescorer::end_delta(int32_t history) {
  if (history < 0 || static_cast<size_t>(history) >= histories_.size())
    throw std::out_of_range("lm rescorer: unknown history " + std::to_string(history));
  History& h = histories_[history];
  if (!h.has_end) {
    h.end = (full_end_ >= 0 && pruned_end_ >= 0) ? delta_of(h, full_end_, pruned_end_) : 0.0f;
    h.has_end = true;
  }
  return h.end;
}

std::vector<std::string> LmRescorer::history_words(int32_t history) const {
  std::vector<std::string> out;
  for (int w : histories_.at(history).full_words) out.push_back(full_->word(w));
  return out;
}

}  // namespace gpuspeech
