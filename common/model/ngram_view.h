// A read-only view of an NgramModel's reversed trie (ngram_model.h) as
// plain arrays, and the back-off score over it, written once for the host
// and for CUDA kernels: NgramModel::score_log10 is this function, so a copy
// of the arrays in device memory scores every n-gram to the same float
// (docs/search-lanes-plan.md, S8: word-end rescoring on the device).
//
// The score, with r[0] the most recent history word and k history words:
// the probability of the longest listed n-gram "r[j-1] .. r[0] word", plus
// the back-off weights of the contexts r[c-1] .. r[0] (c from that length
// up to k) that were not followed by `word`. Additions only, in a fixed
// order, so no compiler may contract them into another result.
#pragma once

#include <stdint.h>

#include "common/host_device.h"

namespace gpuspeech {

// The most orders a view holds (NgramModel::kMaxOrder).
constexpr int kNgramViewMaxOrder = 10;

// One order of the trie (NgramLevel's arrays). Level 0 (unigrams) is
// indexed by word id and has no `words`; the highest order has no
// back-offs and no children.
struct NgramLevelView {
  const uint32_t* words = nullptr;        // last word of the reversed path
  const float* log10_prob = nullptr;
  const float* log10_backoff = nullptr;
  const uint32_t* children = nullptr;     // entry i's: [children[i], children[i + 1])
  uint32_t size = 0;
};

struct NgramView {
  int order = 0;
  int vocabulary = 0;
  NgramLevelView levels[kNgramViewMaxOrder];
};

// The entry of `level` in [begin, end) whose word is w (the entries of one
// parent are sorted by word), or -1: the first entry not below w, as
// std::lower_bound finds it.
GPUSPEECH_HOST_DEVICE int64_t ngram_find_child(const NgramLevelView& level, uint32_t begin,
                                               uint32_t end, uint32_t w) {
  uint32_t lo = begin, hi = end;
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (level.words[mid] < w)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < end && level.words[lo] == w ? static_cast<int64_t>(lo) : -1;
}

// The longest listed n-gram "recent[j-1] .. recent[0] word" (j < k + 1):
// its log10 probability, and its length in *length (1: the unigram).
GPUSPEECH_HOST_DEVICE float ngram_longest_listed(const NgramView& lm, const int* recent, int k,
                                                 int word, int* length) {
  const NgramLevelView& uni = lm.levels[0];
  float prob = uni.log10_prob[word];
  *length = 1;
  if (k == 0) return prob;
  uint32_t begin = uni.children[word], end = uni.children[word + 1];
  for (int i = 0; i < k; ++i) {
    const int lvl = i + 1;
    const int64_t idx = ngram_find_child(lm.levels[lvl], begin, end, static_cast<uint32_t>(recent[i]));
    if (idx < 0) break;
    prob = lm.levels[lvl].log10_prob[idx];
    *length = i + 2;
    if (lvl + 1 >= lm.order) break;
    begin = lm.levels[lvl].children[idx];
    end = lm.levels[lvl].children[idx + 1];
  }
  return prob;
}

// log10 P(word | history) by back-off. `recent[i]` is the i-th most recent
// history word, i < k, with k at most order - 1; every id must be below
// `vocabulary` (the caller checks). `*matched` (if not null) receives the
// length of the longest listed n-gram used, 1 for the unigram.
GPUSPEECH_HOST_DEVICE float ngram_score_log10(const NgramView& lm, const int* recent, int k,
                                              int word, int* matched = nullptr) {
  int length = 1;
  float prob = ngram_longest_listed(lm, recent, k, word, &length);
  // Contexts of length `length`..k were not followed by `word`: add their
  // back-offs. Context c is recent[c-1] .. recent[0], at the reversed
  // path recent[0], recent[1], ...
  if (length <= k) {
    const NgramLevelView& uni = lm.levels[0];
    float bo = 0.0f;
    if (length <= 1) bo += uni.log10_backoff[recent[0]];
    uint32_t cb = uni.children[recent[0]], ce = uni.children[recent[0] + 1];
    for (int c = 2; c <= k; ++c) {
      const int lvl = c - 1;
      const int64_t idx = ngram_find_child(lm.levels[lvl], cb, ce, static_cast<uint32_t>(recent[c - 1]));
      if (idx < 0) break;  // longer contexts cannot be listed either
      if (c >= length) bo += lm.levels[lvl].log10_backoff[idx];
      cb = lm.levels[lvl].children[idx];
      ce = lm.levels[lvl].children[idx + 1];
    }
    prob += bo;
  }
  if (matched != nullptr) *matched = length;
  return prob;
}

// A history's contexts looked up once, for scoring many words after it
// (the word-lattice pass scores each history's words): the back-off
// weights that ngram_score_log10 walks the trie for on every call.
struct NgramContext {
  int k = 0;       // history words, recent[0] the most recent
  int listed = 0;  // the contexts of length 1 .. listed are listed
  int recent[kNgramViewMaxOrder - 1] = {};
  float log10_backoff[kNgramViewMaxOrder] = {};  // [c]: the context of length c
};

GPUSPEECH_HOST_DEVICE NgramContext ngram_context(const NgramView& lm, const int* recent, int k) {
  NgramContext ctx;
  ctx.k = k;
  for (int i = 0; i < k; ++i) ctx.recent[i] = recent[i];
  if (k == 0) return ctx;
  const NgramLevelView& uni = lm.levels[0];
  ctx.log10_backoff[1] = uni.log10_backoff[recent[0]];
  ctx.listed = 1;
  uint32_t cb = uni.children[recent[0]], ce = uni.children[recent[0] + 1];
  for (int c = 2; c <= k; ++c) {
    const int lvl = c - 1;
    const int64_t idx = ngram_find_child(lm.levels[lvl], cb, ce, static_cast<uint32_t>(recent[c - 1]));
    if (idx < 0) break;
    ctx.log10_backoff[c] = lm.levels[lvl].log10_backoff[idx];
    ctx.listed = c;
    cb = lm.levels[lvl].children[idx];
    ce = lm.levels[lvl].children[idx + 1];
  }
  return ctx;
}

// ngram_score_log10 after the history of `ctx`, to the same float: the
// same additions in the same order.
GPUSPEECH_HOST_DEVICE float ngram_score_log10(const NgramView& lm, const NgramContext& ctx,
                                              int word, int* matched = nullptr) {
  int length = 1;
  float prob = ngram_longest_listed(lm, ctx.recent, ctx.k, word, &length);
  if (length <= ctx.k) {
    float bo = 0.0f;
    if (length <= 1) bo += ctx.log10_backoff[1];
    for (int c = 2; c <= ctx.listed; ++c)
      if (c >= length) bo += ctx.log10_backoff[c];
    prob += bo;
  }
  if (matched != nullptr) *matched = length;
  return prob;
}

}  // namespace gpuspeech
