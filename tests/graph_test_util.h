// Exact (unpruned) reference computations over a SearchGraph for the graph
// tests: the best path for a given frame-by-frame senone sequence, whether
// a word sequence is accepted at all, and random complete paths.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/search/search_graph.h"

namespace gpuspeech::testing {

struct ForcedPath {
  double cost = std::numeric_limits<double>::infinity();
  std::vector<std::string> words;  // fillers left out
  bool found() const { return std::isfinite(cost); }
};

// The cheapest path that consumes exactly `senones` (one per frame) and ends
// in a final state (final cost included), by Viterbi over every state: a
// small-graph reference for the costs the compiler put in. Acoustic scores
// play no part.
inline ForcedPath force_align(const SearchGraph& g, const std::vector<int>& senones) {
  const int32_t n = g.num_states();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> cost(n, inf);
  std::vector<std::vector<int32_t>> words(n);
  auto closure = [&]() {
    for (int pass = 0; pass < n + 1; ++pass) {
      bool changed = false;
      for (int32_t s = 0; s < n; ++s) {
        if (!std::isfinite(cost[s])) continue;
        for (int64_t a = g.arc_begin[s]; a < g.arc_begin[s + 1]; ++a) {
          if (g.arc_ilabel[a] != 0) continue;
          const int32_t d = g.arc_dest[a];
          const double c = cost[s] + g.arc_cost[a];
          if (c < cost[d] - 1e-9) {
            cost[d] = c;
            words[d] = words[s];
            if (g.arc_olabel[a]) words[d].push_back(g.arc_olabel[a] - 1);
            changed = true;
          }
        }
      }
      if (!changed) return;
    }
  };
  cost[g.start_state] = 0;
  closure();
  for (int sen : senones) {
    std::vector<double> next(n, inf);
    std::vector<std::vector<int32_t>> next_words(n);
    for (int32_t s = 0; s < n; ++s) {
      if (!std::isfinite(cost[s])) continue;
      for (int64_t a = g.arc_begin[s]; a < g.arc_begin[s + 1]; ++a) {
        if (g.arc_ilabel[a] != sen + 1) continue;
        const int32_t d = g.arc_dest[a];
        const double c = cost[s] + g.arc_cost[a];
        if (c < next[d] - 1e-9) {
          next[d] = c;
          next_words[d] = words[s];
          if (g.arc_olabel[a]) next_words[d].push_back(g.arc_olabel[a] - 1);
        }
      }
    }
    cost.swap(next);
    words.swap(next_words);
    closure();
  }
  ForcedPath best;
  int32_t best_state = -1;
  for (int32_t s = 0; s < n; ++s) {
    const double c = cost[s] + g.final_cost[s];
    if (c < best.cost) {
      best.cost = c;
      best_state = s;
    }
  }
  if (best_state >= 0)
    for (int32_t w : words[best_state])
      if (!g.word_is_filler[w]) best.words.push_back(g.words[w]);
  return best;
}

// The cheapest path that consumes exactly `senones`, outputs exactly
// `sentence` (fillers allowed in between and ignored) and ends in a final
// state; +infinity if there is none.
inline double force_align_words(const SearchGraph& g, const std::vector<int>& senones,
                                const std::vector<std::string>& sentence) {
  const int32_t n = g.num_states();
  const size_t m = sentence.size() + 1;
  const double inf = std::numeric_limits<double>::infinity();
  // cost[i * n + s]: i words of the sentence said, at state s.
  std::vector<double> cost(m * n, inf);
  // Follows arc a from (s, i); returns the new word count or -1.
  auto step = [&](int64_t a, size_t i) -> long {
    const int32_t o = g.arc_olabel[a];
    if (o == 0 || g.word_is_filler[o - 1]) return static_cast<long>(i);
    if (i < sentence.size() && g.words[o - 1] == sentence[i]) return static_cast<long>(i + 1);
    return -1;
  };
  auto closure = [&]() {
    for (int pass = 0; pass < n * 2 + 2; ++pass) {
      bool changed = false;
      for (size_t i = 0; i < m; ++i)
        for (int32_t s = 0; s < n; ++s) {
          const double c0 = cost[i * n + s];
          if (!std::isfinite(c0)) continue;
          for (int64_t a = g.arc_begin[s]; a < g.arc_begin[s + 1]; ++a) {
            if (g.arc_ilabel[a] != 0) continue;
            const long j = step(a, i);
            if (j < 0) continue;
            double& d = cost[j * n + g.arc_dest[a]];
            if (c0 + g.arc_cost[a] < d - 1e-9) {
              d = c0 + g.arc_cost[a];
              changed = true;
            }
          }
        }
      if (!changed) return;
    }
  };
  cost[g.start_state] = 0;
  closure();
  for (int sen : senones) {
    std::vector<double> next(m * n, inf);
    for (size_t i = 0; i < m; ++i)
      for (int32_t s = 0; s < n; ++s) {
        const double c0 = cost[i * n + s];
        if (!std::isfinite(c0)) continue;
        for (int64_t a = g.arc_begin[s]; a < g.arc_begin[s + 1]; ++a) {
          if (g.arc_ilabel[a] != sen + 1) continue;
          const long j = step(a, i);
          if (j < 0) continue;
          double& d = next[j * n + g.arc_dest[a]];
          d = std::min(d, c0 + g.arc_cost[a]);
        }
      }
    cost.swap(next);
    closure();
  }
  double best = inf;
  for (int32_t s = 0; s < n; ++s)
    best = std::min(best, cost[(m - 1) * n + s] + g.final_cost[s]);
  return best;
}

// A random complete path: the senones it reads, one per frame (self-loops
// taken with probability 1/3 each time), ending at a final state; empty if
// the walk got stuck or ran past max_frames.
inline std::vector<int> random_senone_path(const SearchGraph& g, std::mt19937& rng,
                                           int max_frames = 400) {
  std::vector<int> senones;
  int32_t s = g.start_state;
  for (int step = 0; step < 4 * max_frames && static_cast<int>(senones.size()) < max_frames; ++step) {
    const int64_t b = g.arc_begin[s], e = g.arc_begin[s + 1];
    if (std::isfinite(g.final_cost[s]) && (b == e || rng() % 5 == 0)) return senones;
    std::vector<int64_t> loops, moves;
    for (int64_t a = b; a < e; ++a) (g.arc_dest[a] == s ? loops : moves).push_back(a);
    int64_t a;
    if (!loops.empty() && (moves.empty() || rng() % 3 == 0))
      a = loops[rng() % loops.size()];
    else if (!moves.empty())
      a = moves[rng() % moves.size()];
    else
      return {};
    if (g.arc_ilabel[a] > 0) senones.push_back(g.arc_ilabel[a] - 1);
    s = g.arc_dest[a];
  }
  return {};
}

// True if some complete path outputs exactly `sentence` (fillers ignored),
// whatever senones it consumes: a word-level NFA simulation.
inline bool accepts_words(const SearchGraph& g, const std::vector<std::string>& sentence) {
  const int32_t n = g.num_states();
  std::vector<char> cur(n, 0);
  auto close = [&](std::vector<char>& set) {
    std::vector<int32_t> stack;
    for (int32_t s = 0; s < n; ++s)
      if (set[s]) stack.push_back(s);
    while (!stack.empty()) {
      const int32_t s = stack.back();
      stack.pop_back();
      for (int64_t a = g.arc_begin[s]; a < g.arc_begin[s + 1]; ++a) {
        const int32_t o = g.arc_olabel[a];
        if (o != 0 && !g.word_is_filler[o - 1]) continue;
        const int32_t d = g.arc_dest[a];
        if (!set[d]) {
          set[d] = 1;
          stack.push_back(d);
        }
      }
    }
  };
  cur[g.start_state] = 1;
  close(cur);
  for (const std::string& w : sentence) {
    std::vector<char> next(n, 0);
    for (int32_t s = 0; s < n; ++s) {
      if (!cur[s]) continue;
      for (int64_t a = g.arc_begin[s]; a < g.arc_begin[s + 1]; ++a) {
        const int32_t o = g.arc_olabel[a];
        if (o != 0 && !g.word_is_filler[o - 1] && g.words[o - 1] == w) next[g.arc_dest[a]] = 1;
      }
    }
    close(next);
    cur.swap(next);
  }
  for (int32_t s = 0; s < n; ++s)
    if (cur[s] && std::isfinite(g.final_cost[s])) return true;
  return false;
}

// The non-filler words of a random walk from the start that stops at a
// final state (with probability 1/4 at each final state it meets, and
// always when it cannot go on); empty with *ok false if it got stuck in a
// non-final state or ran past max_arcs.
inline std::vector<std::string> random_path_words(const SearchGraph& g, std::mt19937& rng,
                                                  bool* ok, int max_arcs = 100000) {
  std::vector<std::string> words;
  int32_t s = g.start_state;
  *ok = false;
  for (int step = 0; step < max_arcs; ++step) {
    const int64_t b = g.arc_begin[s], e = g.arc_begin[s + 1];
    const bool final = std::isfinite(g.final_cost[s]);
    if (final && (b == e || rng() % 4 == 0)) {
      *ok = true;
      return words;
    }
    if (b == e) return {};
    // Self-loops are skipped: they never change the words.
    std::vector<int64_t> choices;
    for (int64_t a = b; a < e; ++a)
      if (g.arc_dest[a] != s) choices.push_back(a);
    if (choices.empty()) return {};
    const int64_t a = choices[rng() % choices.size()];
    const int32_t o = g.arc_olabel[a];
    if (o != 0 && !g.word_is_filler[o - 1]) words.push_back(g.words[o - 1]);
    s = g.arc_dest[a];
  }
  return {};
}

}  // namespace gpuspeech::testing
