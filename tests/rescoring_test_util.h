// Graphs and language models for the word-end rescoring tests
// (test_lm_rescoring.cpp, test_token_passing_devices.cpp): random graphs
// with every word label on an epsilon arc (as rescoring requires), and
// random pairs of a trigram "full" LM and a bigram "pruned" one over the
// same vocabulary.
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/model/ngram_model.h"
#include "tests/search_test_graphs.h"

namespace gpuspeech {
namespace testing {

// Like random_graph, but word labels only on epsilon arcs, which cost at
// least `min_word_arc_cost` (so that rescoring deltas smaller than that
// cannot make an epsilon cycle through word ends negative). Word 0 is a
// filler.
inline SearchGraph random_rescoring_graph(std::mt19937& rng, int n, int senones, int words,
                                          float quantum, int heavy_states = 0,
                                          int heavy_degree = 0, float min_word_arc_cost = 1.0f) {
  std::vector<std::string> names;
  for (int w = 0; w < words; ++w) names.push_back("w" + std::to_string(w));
  GraphBuilder b(n, senones, names);
  std::uniform_int_distribution<int> state(0, n - 1), senone(1, senones), word(1, words),
      degree(1, 4);
  std::uniform_real_distribution<float> cost(0.05f, 3.0f), unit(0.0f, 1.0f);
  auto q = [&](float c) {
    return quantum > 0 ? std::max(quantum, std::round(c / quantum) * quantum) : c;
  };
  for (int s = 0; s < n; ++s) {
    const int ne = degree(rng);
    for (int k = 0; k < ne; ++k) b.arc(s, state(rng), senone(rng), 0, q(cost(rng)));
    if (unit(rng) < 0.5f) {
      const int ng = degree(rng) - 1;
      for (int k = 0; k < ng; ++k) {
        const bool labelled = unit(rng) < 0.5f;
        b.arc(s, state(rng), 0, labelled ? word(rng) : 0,
              q(cost(rng)) + (labelled ? min_word_arc_cost : 0.0f));
      }
    }
    if (unit(rng) < 0.2f) b.final(s, q(cost(rng)));
  }
  for (int h = 0; h < heavy_states; ++h) {
    const int s = state(rng);
    for (int k = 0; k < heavy_degree; ++k) {
      const bool eps = unit(rng) < 0.5f;
      const bool labelled = eps && unit(rng) < 0.2f;
      b.arc(s, state(rng), eps ? 0 : senone(rng), labelled ? word(rng) : 0,
            q(cost(rng)) + 1.0f + (labelled ? min_word_arc_cost : 0.0f));
    }
  }
  if (words > 1) b.filler(0);
  return b.build();
}

struct LmPair {
  std::shared_ptr<const NgramModel> full, pruned;
};

// Vocabulary <s>, </s>, w1 .. w{words-1} (w0, the graphs' filler, is left
// out: fillers are not in LMs). The full model has every unigram, a share
// of the bigrams and trigrams; the pruned one the same unigrams and a
// subset of those bigrams (with their back-off weights), no trigrams.
inline LmPair random_lm_pair(std::mt19937& rng, int words, double bigram_share = 0.6,
                             double trigram_share = 0.3, double kept_bigram_share = 0.5) {
  std::vector<std::string> vocab{"<s>", "</s>"};
  for (int w = 1; w < words; ++w) vocab.push_back("w" + std::to_string(w));
  const int V = static_cast<int>(vocab.size());
  std::uniform_real_distribution<float> logp(-2.5f, -0.3f), bo(-1.0f, 0.0f), unit(0.0f, 1.0f);
  NgramList uni, bi_full, tri, bi_pruned;
  uni.order = 1;
  bi_full.order = 2;
  bi_pruned.order = 2;
  tri.order = 3;
  for (int w = 0; w < V; ++w) {
    uni.words.push_back(w);
    uni.log10_prob.push_back(w == 0 ? -99.0f : logp(rng));
    uni.log10_backoff.push_back(w == 1 ? 0.0f : bo(rng));
  }
  std::vector<std::pair<int, int>> bigrams;
  for (int a = 0; a < V; ++a)
    for (int b = 1; b < V; ++b) {
      if (a == 1) continue;  // nothing follows </s>
      if (unit(rng) >= bigram_share) continue;
      bigrams.emplace_back(a, b);
      const float p = logp(rng), w = b == 1 ? 0.0f : bo(rng);
      bi_full.words.insert(bi_full.words.end(), {static_cast<uint32_t>(a), static_cast<uint32_t>(b)});
      bi_full.log10_prob.push_back(p);
      bi_full.log10_backoff.push_back(w);
      if (unit(rng) < kept_bigram_share) {
        bi_pruned.words.insert(bi_pruned.words.end(),
                               {static_cast<uint32_t>(a), static_cast<uint32_t>(b)});
        bi_pruned.log10_prob.push_back(p);
        bi_pruned.log10_backoff.push_back(0.0f);
      }
    }
  for (const auto& ab : bigrams) {
    if (ab.second == 1) continue;
    for (int c = 1; c < V; ++c) {
      if (unit(rng) >= trigram_share) continue;
      tri.words.insert(tri.words.end(), {static_cast<uint32_t>(ab.first),
                                         static_cast<uint32_t>(ab.second),
                                         static_cast<uint32_t>(c)});
      tri.log10_prob.push_back(logp(rng));
      tri.log10_backoff.push_back(0.0f);
    }
  }
  LmPair out;
  std::vector<NgramList> full_lists{uni, bi_full};
  if (tri.size() > 0) full_lists.push_back(tri);
  out.full = std::make_shared<const NgramModel>(
      NgramModel::build(vocab, std::move(full_lists), "random-full.arpa"));
  std::vector<NgramList> pruned_lists{uni};
  if (bi_pruned.size() > 0) pruned_lists.push_back(bi_pruned);
  out.pruned = std::make_shared<const NgramModel>(
      NgramModel::build(vocab, std::move(pruned_lists), "random-pruned.arpa"));
  return out;
}

}  // namespace testing
}  // namespace gpuspeech
