#include "ngram_model.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "arpa_lm.h"
#include "byte_reader.h"
#include "lm_trie_reader.h"
#include "model_error.h"

namespace gpuspeech {

const char* to_string(LmFileFormat f) {
  switch (f) {
    case LmFileFormat::kArpa: return "ARPA";
    case LmFileFormat::kSphinxTrie: return "Sphinx trie binary";
    case LmFileFormat::kBuilt: return "built in memory";
  }
  return "?";
}

namespace {

// Reversed keys of one order during building: `order` ids per entry.
struct KeyedOrder {
  int order = 0;
  std::vector<uint32_t> keys;  // reversed word ids, flattened
  std::vector<float> prob, backoff;
  std::vector<long> lines;
  std::vector<uint8_t> derived;
  size_t size() const { return prob.size(); }
  const uint32_t* key(size_t i) const { return keys.data() + i * order; }
};

int compare_keys(const uint32_t* a, const uint32_t* b, int n) {
  for (int i = 0; i < n; ++i)
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  return 0;
}

// Sorts `ko` by key; throws on a duplicate n-gram.
void sort_order(KeyedOrder& ko, const std::string& source,
                const std::vector<std::string>& vocab) {
  const int n = ko.order;
  std::vector<uint32_t> perm(ko.size());
  std::iota(perm.begin(), perm.end(), 0u);
  std::stable_sort(perm.begin(), perm.end(), [&](uint32_t a, uint32_t b) {
    return compare_keys(ko.key(a), ko.key(b), n) < 0;
  });
  KeyedOrder out;
  out.order = n;
  out.keys.resize(ko.keys.size());
  out.prob.resize(ko.size());
  out.backoff.resize(ko.size());
  out.lines.resize(ko.size());
  out.derived.resize(ko.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    const uint32_t j = perm[i];
    std::copy(ko.key(j), ko.key(j) + n, out.keys.begin() + i * n);
    out.prob[i] = ko.prob[j];
    out.backoff[i] = ko.backoff[j];
    out.lines[i] = ko.lines[j];
    out.derived[i] = ko.derived[j];
    if (i > 0 && compare_keys(out.key(i - 1), out.key(i), n) == 0) {
      std::string words;
      for (int k = n - 1; k >= 0; --k) words += (k == n - 1 ? "" : " ") + vocab[out.key(i)[k]];
      std::string msg = source;
      if (out.lines[i] > 0) msg += ":" + std::to_string(out.lines[i]);
      msg += ": the " + std::to_string(n) + "-gram '" + words + "' is listed twice";
      if (out.lines[i - 1] > 0) msg += " (also at line " + std::to_string(out.lines[i - 1]) + ")";
      throw ModelError(msg);
    }
  }
  ko = std::move(out);
}

bool bad_value(float v) { return std::isnan(v) || v == INFINITY; }

}  // namespace

size_t NgramModel::num_derived(int n) const {
  const NgramLevel& l = levels_.at(n - 1);
  return static_cast<size_t>(std::count(l.derived.begin(), l.derived.end(), uint8_t{1}));
}

void NgramModel::index_vocabulary() {
  vocab_index_.clear();
  vocab_index_.reserve(vocab_.size());
  for (size_t i = 0; i < vocab_.size(); ++i) {
    auto res = vocab_index_.emplace(vocab_[i], static_cast<int>(i));
    if (!res.second)
      warnings_.push_back(source_ + ": word '" + vocab_[i] + "' appears twice in the vocabulary" +
                          " (ids " + std::to_string(res.first->second) + " and " +
                          std::to_string(i) + "); lookups find the first");
  }
}

int NgramModel::word_id(std::string_view word) const {
  auto it = vocab_index_.find(std::string(word));
  return it == vocab_index_.end() ? kNoWord : it->second;
}

long NgramModel::find_child(int lvl, uint32_t begin, uint32_t end, uint32_t w) const {
  const std::vector<uint32_t>& words = levels_[lvl].words;
  const uint32_t* first = words.data() + begin;
  const uint32_t* last = words.data() + end;
  const uint32_t* it = std::lower_bound(first, last, w);
  if (it == last || *it != w) return -1;
  return static_cast<long>(it - words.data());
}

// The recursion-free form of the formula in the header, ngram_score_log10
// (ngram_view.h), after the ids are checked: the one definition the host
// and the device share.
float NgramModel::score_log10(const int* history, size_t history_len, int word,
                              int* ngram_length) const {
  if (levels_.empty()) throw std::out_of_range("NgramModel: empty model");
  const int V = vocabulary_size();
  if (word < 0 || word >= V)
    throw std::out_of_range("NgramModel::score: word id " + std::to_string(word) +
                            " out of range (vocabulary " + std::to_string(V) + ")");
  const size_t k = std::min(history_len, static_cast<size_t>(order() - 1));
  // r[i]: the i-th most recent history word.
  int r[kMaxOrder];
  for (size_t i = 0; i < k; ++i) {
    const int h = history[history_len - 1 - i];
    if (h < 0 || h >= V)
      throw std::out_of_range("NgramModel::score: history word id " + std::to_string(h) +
                              " out of range (vocabulary " + std::to_string(V) + ")");
    r[i] = h;
  }
  int matched = 1;
  const float prob = ngram_score_log10(view(), r, static_cast<int>(k), word, &matched);
  if (ngram_length) *ngram_length = matched;
  return prob;
}

// Made on each call (a few pointers a level), so that a copied or moved
// model, or one whose levels build() is still completing, never reads
// another's arrays.
NgramView NgramModel::view() const {
  NgramView v;
  v.order = order();
  v.vocabulary = vocabulary_size();
  for (int l = 0; l < v.order; ++l) {
    const NgramLevel& level = levels_[l];
    NgramLevelView& lv = v.levels[l];
    lv.words = level.words.empty() ? nullptr : level.words.data();
    lv.log10_prob = level.log10_prob.data();
    lv.log10_backoff = level.log10_backoff.empty() ? nullptr : level.log10_backoff.data();
    lv.children = level.children.empty() ? nullptr : level.children.data();
    lv.size = static_cast<uint32_t>(level.size());
  }
  return v;
}

float NgramModel::score_log10(const std::vector<std::string>& history,
                              const std::string& word) const {
  std::vector<int> ids;
  for (const std::string& h : history) {
    const int id = word_id(h);
    if (id == kNoWord) throw std::out_of_range("NgramModel: word '" + h + "' is not in " + source_);
    ids.push_back(id);
  }
  const int w = word_id(word);
  if (w == kNoWord) throw std::out_of_range("NgramModel: word '" + word + "' is not in " + source_);
  return score_log10(ids.data(), ids.size(), w);
}

double NgramModel::score_ln(const int* history, size_t history_len, int word) const {
  return static_cast<double>(score_log10(history, history_len, word)) * std::log(10.0);
}

bool NgramModel::find(const int* words, size_t n, float* log10_prob,
                      float* log10_backoff) const {
  if (n == 0 || n > levels_.size()) return false;
  const int V = vocabulary_size();
  for (size_t i = 0; i < n; ++i)
    if (words[i] < 0 || words[i] >= V) return false;
  // Path: last word, then backwards.
  long idx = words[n - 1];
  for (size_t d = 1; d < n; ++d) {
    const NgramLevel& parent = levels_[d - 1];
    idx = find_child(static_cast<int>(d), parent.children[idx], parent.children[idx + 1],
                     static_cast<uint32_t>(words[n - 1 - d]));
    if (idx < 0) return false;
  }
  const NgramLevel& l = levels_[n - 1];
  if (log10_prob) *log10_prob = l.log10_prob[idx];
  if (log10_backoff) *log10_backoff = l.log10_backoff.empty() ? 0.0f : l.log10_backoff[idx];
  return true;
}

float NgramModel::backoff_log10(const int* context, size_t n) const {
  if (n == 0 || n >= levels_.size()) return 0.0f;
  float bo = 0.0f;
  if (!find(context, n, nullptr, &bo)) return 0.0f;
  return bo;
}

void NgramModel::for_each_ngram(int n, const NgramVisitor& fn) const {
  if (n < 1 || n > order()) throw std::out_of_range("NgramModel::for_each_ngram: order");
  int path[kMaxOrder];  // reversed
  int words[kMaxOrder];
  // Depth-first over the reversed trie down to level n-1.
  std::function<void(int, long)> visit = [&](int lvl, long idx) {
    path[lvl] = lvl == 0 ? static_cast<int>(idx) : static_cast<int>(levels_[lvl].words[idx]);
    if (lvl == n - 1) {
      for (int i = 0; i < n; ++i) words[i] = path[n - 1 - i];
      const NgramLevel& l = levels_[lvl];
      fn(words, n, l.log10_prob[idx], l.log10_backoff.empty() ? 0.0f : l.log10_backoff[idx],
         !l.derived.empty() && l.derived[idx]);
      return;
    }
    const NgramLevel& l = levels_[lvl];
    for (uint32_t c = l.children[idx]; c < l.children[idx + 1]; ++c) visit(lvl + 1, c);
  };
  for (long w = 0; w < static_cast<long>(levels_[0].size()); ++w) visit(0, w);
}

void NgramModel::validate() const {
  auto fail = [&](const std::string& why) { throw ModelError(source_ + ": " + why); };
  const size_t N = levels_.size();
  if (N < 1 || N > static_cast<size_t>(kMaxOrder))
    fail("n-gram order " + std::to_string(N) + " is outside 1.." + std::to_string(kMaxOrder));
  const size_t V = vocab_.size();
  if (levels_[0].size() != V)
    fail("vocabulary has " + std::to_string(V) + " words but there are " +
         std::to_string(levels_[0].size()) + " unigrams");
  for (size_t lvl = 0; lvl < N; ++lvl) {
    const NgramLevel& l = levels_[lvl];
    const std::string ord = std::to_string(lvl + 1) + "-grams";
    const size_t n = l.size();
    const bool top = lvl + 1 == N;
    if (!top && l.log10_backoff.size() != n) fail(ord + ": back-off array size mismatch");
    if (top && !l.log10_backoff.empty() && l.log10_backoff.size() != n)
      fail(ord + ": back-off array size mismatch");
    if (!l.derived.empty() && l.derived.size() != n) fail(ord + ": flag array size mismatch");
    if (lvl > 0 && l.words.size() != n) fail(ord + ": word array size mismatch");
    for (size_t i = 0; i < n; ++i) {
      if (bad_value(l.log10_prob[i]))
        fail(ord + ": entry " + std::to_string(i) + " has an invalid probability");
      if (!l.log10_backoff.empty() && bad_value(l.log10_backoff[i]))
        fail(ord + ": entry " + std::to_string(i) + " has an invalid back-off weight");
      if (lvl > 0 && l.words[i] >= V)
        fail(ord + ": entry " + std::to_string(i) + " has word id " + std::to_string(l.words[i]) +
             ", beyond the vocabulary of " + std::to_string(V));
    }
    if (top) {
      if (!l.children.empty()) fail(ord + ": the highest order cannot have children");
      continue;
    }
    const NgramLevel& next = levels_[lvl + 1];
    if (l.children.size() != n + 1) fail(ord + ": child index array size mismatch");
    if (next.words.size() != next.size())
      fail(std::to_string(lvl + 2) + "-grams: word array size mismatch");
    if (l.children[0] != 0 || l.children[n] != next.size())
      fail(ord + ": child ranges do not cover the " + std::to_string(lvl + 2) + "-grams exactly");
    // Every range first, so that the order check below stays inside `next`
    // (a range may end past it only if a later one runs backwards).
    for (size_t i = 0; i < n; ++i)
      if (l.children[i + 1] < l.children[i])
        fail(ord + ": entry " + std::to_string(i) + " has a negative child range");
    for (size_t i = 0; i < n; ++i) {
      const uint32_t b = l.children[i], e = l.children[i + 1];
      for (uint32_t c = b + 1; c < e; ++c)
        if (next.words[c - 1] >= next.words[c])
          fail(std::to_string(lvl + 2) + "-grams: entries " + std::to_string(c - 1) + " and " +
               std::to_string(c) + " are not in increasing word order");
    }
  }
}

NgramModel NgramModel::from_trie(std::vector<std::string> vocabulary,
                                 std::vector<NgramLevel> levels, const std::string& source,
                                 LmFileFormat format) {
  NgramModel m;
  m.vocab_ = std::move(vocabulary);
  m.levels_ = std::move(levels);
  m.source_ = source;
  m.format_ = format;
  m.validate();
  m.index_vocabulary();
  return m;
}

NgramModel NgramModel::build(std::vector<std::string> vocabulary, std::vector<NgramList> lists,
                             const std::string& source, LmFileFormat format) {
  auto fail = [&](const std::string& why) { throw ModelError(source + ": " + why); };
  const int N = static_cast<int>(lists.size());
  if (N < 1 || N > kMaxOrder)
    fail("n-gram order " + std::to_string(N) + " is outside 1.." + std::to_string(kMaxOrder));
  const size_t V = vocabulary.size();
  for (int k = 0; k < N; ++k) {
    const NgramList& l = lists[k];
    const size_t n = l.size();
    if (l.order != k + 1) fail("n-gram list " + std::to_string(k) + " has the wrong order");
    if (l.words.size() != n * (k + 1) || l.log10_backoff.size() != n ||
        (!l.lines.empty() && l.lines.size() != n))
      fail(std::to_string(k + 1) + "-gram list: array sizes disagree");
    for (uint32_t w : l.words)
      if (w >= V) fail(std::to_string(k + 1) + "-gram list: word id beyond the vocabulary");
  }
  if (lists[0].size() != V)
    fail("vocabulary has " + std::to_string(V) + " words but there are " +
         std::to_string(lists[0].size()) + " unigrams");

  NgramModel m;
  m.vocab_ = std::move(vocabulary);
  m.source_ = source;
  m.format_ = format;
  m.levels_.resize(N);
  {
    NgramLevel& uni = m.levels_[0];
    uni.log10_prob = lists[0].log10_prob;
    if (N > 1) uni.log10_backoff = lists[0].log10_backoff;
  }

  // Reversed, sorted keys per order (index k-1 for order k; unigrams unused).
  std::vector<KeyedOrder> ko(N);
  for (int k = 2; k <= N; ++k) {
    KeyedOrder& o = ko[k - 1];
    NgramList& l = lists[k - 1];
    o.order = k;
    const size_t n = l.size();
    o.keys.resize(n * k);
    for (size_t i = 0; i < n; ++i)
      for (int j = 0; j < k; ++j) o.keys[i * k + j] = l.words[i * k + (k - 1 - j)];
    o.prob = std::move(l.log10_prob);
    o.backoff = std::move(l.log10_backoff);
    o.lines = l.lines.empty() ? std::vector<long>(n, 0) : std::move(l.lines);
    o.derived.assign(n, 0);
    l.words.clear();
    l.words.shrink_to_fit();
    sort_order(o, source, m.vocab_);
  }

  // Insert missing suffixes, top order down: the key prefix of length k-1
  // of each k-gram must be a (k-1)-gram. Keys are sorted, so the prefixes
  // come in order and one merge pass finds the missing ones.
  for (int k = N; k >= 3; --k) {
    KeyedOrder& hi = ko[k - 1];
    KeyedOrder& lo = ko[k - 2];
    const int p = k - 1;
    std::vector<uint32_t> missing;  // flattened prefixes
    size_t j = 0;
    const uint32_t* last_added = nullptr;
    for (size_t i = 0; i < hi.size(); ++i) {
      const uint32_t* pre = hi.key(i);
      while (j < lo.size() && compare_keys(lo.key(j), pre, p) < 0) ++j;
      if (j < lo.size() && compare_keys(lo.key(j), pre, p) == 0) continue;
      if (last_added && compare_keys(last_added, pre, p) == 0) continue;
      missing.insert(missing.end(), pre, pre + p);
      last_added = pre;
    }
    if (missing.empty()) continue;
    const size_t add = missing.size() / p;
    lo.keys.insert(lo.keys.end(), missing.begin(), missing.end());
    lo.prob.insert(lo.prob.end(), add, 0.0f);
    lo.backoff.insert(lo.backoff.end(), add, 0.0f);
    lo.lines.insert(lo.lines.end(), add, 0);
    lo.derived.insert(lo.derived.end(), add, 1);
    sort_order(lo, source, m.vocab_);
  }

  // Fill the levels bottom up: derived probabilities of order k need the
  // orders below it complete and linked.
  for (int k = 2; k <= N; ++k) {
    KeyedOrder& o = ko[k - 1];
    NgramLevel& parent = m.levels_[k - 2];
    NgramLevel& l = m.levels_[k - 1];
    const size_t n = o.size();
    // Link order k-1 to order k: children of parent entry q are the k-grams
    // whose key starts with q's key.
    const size_t np = parent.size();
    parent.children.assign(np + 1, 0);
    size_t c = 0;
    for (size_t q = 0; q < np; ++q) {
      parent.children[q] = static_cast<uint32_t>(c);
      if (k == 2) {
        while (c < n && o.key(c)[0] == q) ++c;
      } else {
        const uint32_t* qk = ko[k - 2].key(q);
        while (c < n && compare_keys(o.key(c), qk, k - 1) == 0) ++c;
      }
    }
    parent.children[np] = static_cast<uint32_t>(c);
    if (c != n) fail("internal error: unlinked " + std::to_string(k) + "-grams");
    l.words.resize(n);
    for (size_t i = 0; i < n; ++i) l.words[i] = o.key(i)[k - 1];
    l.log10_prob = o.prob;
    if (k < N) l.log10_backoff = o.backoff;
    l.derived = o.derived;
    // Derived entries: the score back-off gives with the orders below k.
    // Temporarily hide this level and above from the scorer.
    if (std::count(o.derived.begin(), o.derived.end(), uint8_t{1}) > 0) {
      std::vector<NgramLevel> upper(m.levels_.begin() + (k - 1), m.levels_.end());
      m.levels_.resize(k - 1);
      std::vector<uint32_t> saved_children;
      saved_children.swap(m.levels_[k - 2].children);
      // P(u_k | u_1..u_{k-1}) without k-grams: BO(u_1..u_{k-1}) plus
      // P(u_k | u_2..u_{k-1}). The scorer needs no children at the
      // (temporarily) highest order.
      int words[kMaxOrder];
      for (size_t i = 0; i < n; ++i) {
        if (!o.derived[i]) continue;
        const uint32_t* key = o.key(i);  // u_k, u_{k-1}, ..., u_1
        for (int j = 0; j < k; ++j) words[j] = static_cast<int>(key[k - 1 - j]);
        float context_bo = 0.0f;
        m.find(words, k - 1, nullptr, &context_bo);
        upper[0].log10_prob[i] =
            context_bo + m.score_log10(words + 1, k - 2, words[k - 1]);
      }
      m.levels_[k - 2].children.swap(saved_children);
      m.levels_.insert(m.levels_.end(), upper.begin(), upper.end());
    }
    ko[k - 2] = KeyedOrder();  // keys of order k-1 no longer needed
  }
  m.validate();
  m.index_vocabulary();
  return m;
}

NgramModel read_ngram_model(const std::string& path) {
  const std::string bytes = read_model_file(path);
  if (lm_binary_kind(bytes) != LmBinaryKind::kNone) return parse_lm_trie(bytes, path);
  return parse_arpa_lm(bytes, path);
}

}  // namespace gpuspeech
