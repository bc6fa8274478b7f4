// Search graphs and scores for the token-passing tests: a builder for
// hand-made graphs, a word loop of HMM-like chains, random graphs and
// random scores.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/search/search_graph.h"
#include "common/search/token_passing.h"

namespace gpuspeech {
namespace testing {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Builds a SearchGraph from arcs given in any order; arcs keep their
// insertion order within a state (so tests control the CSR arc indices).
class GraphBuilder {
 public:
  GraphBuilder(int num_states, int num_senones, std::vector<std::string> words)
      : num_states_(num_states), num_senones_(num_senones), words_(std::move(words)) {
    finals_.assign(num_states, kInf);
    fillers_.assign(words_.size(), 0);
  }
  // ilabel: 0 = epsilon, else senone + 1. olabel: 0 = none, else word + 1.
  void arc(int src, int dst, int ilabel, int olabel, float cost) {
    arcs_.push_back({src, dst, ilabel, olabel, cost});
  }
  void final(int s, float cost = 0.0f) { finals_[s] = cost; }
  void filler(int word) { fillers_[word] = 1; }
  void start(int s) { start_ = s; }

  SearchGraph build() const {
    SearchGraph g;
    g.start_state = start_;
    g.num_senones = num_senones_;
    g.words = words_;
    g.word_is_filler = fillers_;
    g.final_cost = finals_;
    g.arc_begin.assign(num_states_ + 1, 0);
    for (const Arc& a : arcs_) g.arc_begin[a.src + 1]++;
    for (int s = 0; s < num_states_; ++s) g.arc_begin[s + 1] += g.arc_begin[s];
    std::vector<int64_t> next(g.arc_begin.begin(), g.arc_begin.end() - 1);
    const size_t n = arcs_.size();
    g.arc_dest.resize(n);
    g.arc_ilabel.resize(n);
    g.arc_olabel.resize(n);
    g.arc_cost.resize(n);
    for (const Arc& a : arcs_) {
      const int64_t i = next[a.src]++;
      g.arc_dest[i] = a.dst;
      g.arc_ilabel[i] = a.ilabel;
      g.arc_olabel[i] = a.olabel;
      g.arc_cost[i] = a.cost;
    }
    g.validate();
    return g;
  }

 private:
  struct Arc {
    int src, dst, ilabel, olabel;
    float cost;
  };
  int num_states_, num_senones_;
  std::vector<std::string> words_;
  std::vector<Arc> arcs_;
  std::vector<float> finals_;
  std::vector<uint8_t> fillers_;
  int start_ = 0;
};

// Scores: frames x senones, natural-log likelihoods.
struct Scores {
  int frames = 0, senones = 0;
  std::vector<float> v;
  Scores(int f, int s, float fill = 0.0f) : frames(f), senones(s), v(size_t(f) * s, fill) {}
  float& at(int f, int s) { return v[size_t(f) * senones + s]; }
};

inline Hypothesis decode(Searcher& s, const Scores& sc) {
  s.reset();
  s.advance(sc.v.data(), sc.frames, sc.senones);
  return s.best();
}

inline std::vector<std::string> word_texts(const Hypothesis& h) {
  std::vector<std::string> out;
  for (const HypothesisWord& w : h.words) out.push_back(w.text);
  return out;
}

// Word models as HMM-like chains: word w has `len` emitting states with a
// self-loop and a forward arc on senone (w * len + k), the word label on the
// epsilon arc leaving its last state into a shared loop state. A word loop.
struct WordLoop {
  SearchGraph graph;
  int senones_per_word;
};

inline WordLoop make_word_loop(const std::vector<std::string>& words, int len, float word_cost,
                        bool end_label_on_emitting = false) {
  const int nw = static_cast<int>(words.size());
  // State 0: loop state (start, final). Word w state k: 1 + w * len + k.
  const int num_states = 1 + nw * len;
  GraphBuilder b(num_states, nw * len, words);
  for (int w = 0; w < nw; ++w) {
    const int first = 1 + w * len;
    b.arc(0, first, 0, 0, word_cost);  // enter the word (epsilon)
    for (int k = 0; k < len; ++k) {
      const int s = first + k;
      const int senone = w * len + k + 1;
      b.arc(s, s, senone, 0, 0.7f);  // self-loop
      if (k + 1 < len) {
        b.arc(s, s + 1, senone + 1, 0, 0.7f);
      } else if (end_label_on_emitting) {
        // not used by the loop below
      }
    }
    b.arc(first + len - 1, 0, 0, w + 1, 0.0f);  // word end: label, back to the loop
  }
  b.final(0);
  WordLoop out{b.build(), len};
  return out;
}

// A random graph: `n` states, emitting arcs on random senones, epsilon arcs
// with positive costs (cycles allowed, never negative), word labels on some
// arcs of both kinds. Costs multiples of `quantum` when > 0 (ties!).
inline SearchGraph random_graph(std::mt19937& rng, int n, int senones, int words, float quantum,
                         int heavy_states = 0, int heavy_degree = 0) {
  std::vector<std::string> names;
  for (int w = 0; w < words; ++w) names.push_back("w" + std::to_string(w));
  GraphBuilder b(n, senones, names);
  std::uniform_int_distribution<int> state(0, n - 1), senone(1, senones), word(1, words),
      degree(1, 4);
  std::uniform_real_distribution<float> cost(0.05f, 3.0f), unit(0.0f, 1.0f);
  auto q = [&](float c) { return quantum > 0 ? std::max(quantum, std::round(c / quantum) * quantum) : c; };
  for (int s = 0; s < n; ++s) {
    const int ne = degree(rng);
    for (int k = 0; k < ne; ++k)
      b.arc(s, state(rng), senone(rng), unit(rng) < 0.15f ? word(rng) : 0, q(cost(rng)));
    if (unit(rng) < 0.4f) {
      const int ng = degree(rng) - 1;
      for (int k = 0; k < ng; ++k)
        b.arc(s, state(rng), 0, unit(rng) < 0.3f ? word(rng) : 0, q(cost(rng)));
    }
    if (unit(rng) < 0.2f) b.final(s, q(cost(rng)));
  }
  for (int h = 0; h < heavy_states; ++h) {
    const int s = state(rng);
    for (int k = 0; k < heavy_degree; ++k) {
      const bool eps = unit(rng) < 0.5f;
      b.arc(s, state(rng), eps ? 0 : senone(rng), unit(rng) < 0.1f ? word(rng) : 0,
            q(cost(rng)) + 1.0f);
    }
  }
  if (words > 1) b.filler(0);
  return b.build();
}

inline Scores random_scores(std::mt19937& rng, int frames, int senones, float quantum) {
  Scores sc(frames, senones);
  std::normal_distribution<float> ll(-4.0f, 2.0f);
  for (float& x : sc.v) {
    x = ll(rng);
    if (quantum > 0) x = std::round(x / quantum) * quantum;
  }
  return sc;
}

}  // namespace testing
}  // namespace gpuspeech
