// Word-end rescoring with a full LM (lm_rescorer.h, token_passing.h
// "Word-end rescoring"), on the CPU searcher: the rescorer's corrections
// against the LMs' own scores, rescoring that changes nothing when both LMs
// agree, and a word loop built with a unigram "pruned" LM where the
// rescored search must find the best path under the full trigram LM, as an
// exhaustive search over (state, LM history) computes it.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/model/ngram_model.h"
#include "common/search/cpu_searcher.h"
#include "common/search/lm_rescorer.h"
#include "common/search/search_arithmetic.h"
#include "tests/rescoring_test_util.h"
#include "tests/search_test_graphs.h"

namespace gpuspeech {
namespace {

using testing::GraphBuilder;
using testing::random_lm_pair;
using testing::random_rescoring_graph;
using testing::random_scores;
using testing::Scores;

const double kLn10 = std::log(10.0);

std::vector<std::string> graph_words(int n) {
  std::vector<std::string> w;
  for (int i = 0; i < n; ++i) w.push_back("w" + std::to_string(i));
  return w;
}
std::vector<uint8_t> filler_flags(int n) {
  std::vector<uint8_t> f(n, 0);
  f[0] = 1;  // w0
  return f;
}

TEST(LmRescorer, DeltasAreTheDifferenceOfTheTwoLmsScores) {
  std::mt19937 rng(5);
  const testing::LmPair lms = random_lm_pair(rng, 6);
  const float lw = 6.5f;
  LmRescorer r(lms.full, lms.pruned, graph_words(6), filler_flags(6), lw);
  const NgramModel& full = *lms.full;
  const NgramModel& pruned = *lms.pruned;
  auto id = [&](const NgramModel& m, const std::string& w) { return m.word_id(w); };
  auto expected = [&](const std::vector<std::string>& hist, const std::string& w) {
    std::vector<int> hf, hp;
    for (const std::string& h : hist) {
      hf.push_back(id(full, h));
      hp.push_back(id(pruned, h));
    }
    const double d = pruned.score_log10(hp.data(), hp.size(), id(pruned, w)) -
                     full.score_log10(hf.data(), hf.size(), id(full, w));
    return static_cast<float>(lw * kLn10 * d);
  };

  EXPECT_EQ(r.history_words(LmRescorer::kStartHistory), std::vector<std::string>{"<s>"});
  const LmRescorer::WordEnd a = r.word_end(LmRescorer::kStartHistory, 3);
  EXPECT_FLOAT_EQ(a.delta, expected({"<s>"}, "w3"));
  EXPECT_EQ(r.history_words(a.history), (std::vector<std::string>{"<s>", "w3"}));
  const LmRescorer::WordEnd b = r.word_end(a.history, 4);
  EXPECT_FLOAT_EQ(b.delta, expected({"<s>", "w3"}, "w4"));
  EXPECT_EQ(r.history_words(b.history), (std::vector<std::string>{"w3", "w4"}));
  // A trigram model's history keeps two words: another path to "w3 w4"
  // ends in the same history.
  const LmRescorer::WordEnd c = r.word_end(r.word_end(b.history, 3).history, 4);
  EXPECT_EQ(c.history, b.history);
  EXPECT_FLOAT_EQ(c.delta, expected({"w4", "w3"}, "w4"));
  // Fillers are transparent.
  const LmRescorer::WordEnd f = r.word_end(b.history, 0);
  EXPECT_EQ(f.history, b.history);
  EXPECT_EQ(f.delta, 0.0f);
  // The sentence end.
  EXPECT_FLOAT_EQ(r.end_delta(b.history), expected({"w3", "w4"}, "</s>"));
  // Memoised: the same answer again.
  EXPECT_EQ(r.word_end(a.history, 4).history, b.history);
  // reset() forgets all but the start.
  r.reset();
  EXPECT_EQ(r.num_histories(), 1u);
  EXPECT_THROW(r.word_end(5, 1), std::out_of_range);
  EXPECT_THROW(r.word_end(0, 6), std::out_of_range);
}

// The correction as the device will compute it (search::word_end_delta,
// with a ln 10 literal) against the formula with the host's std::log, on
// random scores: the same float every time.
TEST(LmRescorer, DeltaArithmeticIsTheHostFormula) {
  EXPECT_EQ(search::kLn10, std::log(10.0));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> score(-9.0f, 0.0f), weight(0.5f, 20.0f);
  for (int i = 0; i < 100000; ++i) {
    const float lw = weight(rng), pruned = score(rng), full = score(rng);
    const float expect = static_cast<float>(static_cast<double>(lw) * std::log(10.0) *
                                            (static_cast<double>(pruned) - static_cast<double>(full)));
    ASSERT_EQ(search::word_end_delta(lw, pruned, full), expect) << lw << " " << pruned << " " << full;
  }
}

TEST(LmRescorer, RejectsGraphWordsMissingFromTheLm) {
  std::mt19937 rng(6);
  const testing::LmPair lms = random_lm_pair(rng, 4);
  std::vector<std::string> words = graph_words(4);
  words.push_back("unheard");
  try {
    LmRescorer r(lms.full, lms.pruned, words, filler_flags(5), 1.0f);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unheard"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("random-full.arpa"), std::string::npos) << e.what();
  }
}

TEST(LmRescoring, RejectsWordLabelsOnEmittingArcsAndBadOptions) {
  std::mt19937 rng(7);
  const testing::LmPair lms = random_lm_pair(rng, 3);
  GraphBuilder b(2, 1, graph_words(3));
  b.arc(0, 1, 1, 2, 0.5f);  // a word on an emitting arc
  b.final(1);
  b.filler(0);
  const SearchGraph g = b.build();
  LmRescorer r(lms.full, lms.pruned, g.words, g.word_is_filler, 1.0f);
  EXPECT_THROW(CpuSearcher(g, SearchOptions{}, &r), std::invalid_argument);
  EXPECT_NO_THROW(CpuSearcher(g, SearchOptions{}));  // fine without rescoring
  SearchOptions o;
  o.lm_histories = 0;
  EXPECT_THROW(o.validate(), std::invalid_argument);
  o.lm_histories = 65;
  EXPECT_THROW(o.validate(), std::invalid_argument);
}

// With the same model as "full" and "pruned" every delta is 0: rescoring
// (word ends deferred to the word-end step, K slots) must find the same
// best path, cost bit for bit, as the plain search, on random graphs
// without ties and with beams wide enough not to prune differently.
TEST(LmRescoring, EqualModelsChangeNothing) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 8; ++trial) {
    const int words = 6;
    const SearchGraph g = random_rescoring_graph(rng, 80 + 40 * trial, 20, words, 0.0f);
    const testing::LmPair lms = random_lm_pair(rng, words);
    const Scores sc = random_scores(rng, 30, 20, 0.0f);
    for (int K : {1, 3}) {
      SearchOptions o;
      o.beam = 1e4f;
      o.word_end_beam = 1e4f;
      o.max_active = 1 << 30;
      o.lm_histories = K;
      LmRescorer r(lms.full, lms.full, g.words, g.word_is_filler, 6.5f);
      CpuSearcher plain(g, o);
      CpuSearcher rescored(g, o, &r);
      const Hypothesis hp = testing::decode(plain, sc);
      const Hypothesis hr = testing::decode(rescored, sc);
      const std::string what = "trial " + std::to_string(trial) + " K " + std::to_string(K);
      EXPECT_EQ(hp.text(), hr.text()) << what;
      EXPECT_EQ(hp.cost, hr.cost) << what;
      ASSERT_EQ(hp.words.size(), hr.words.size()) << what;
      for (size_t i = 0; i < hp.words.size(); ++i)
        EXPECT_EQ(hp.words[i].end_frame, hr.words[i].end_frame) << what;
      if (trial == 0 && K == 3) {
        EXPECT_GT(rescored.stats().word_end_events, 0) << what;
      }
    }
  }
}

// --- A word loop whose arcs carry a unigram LM, rescored with a trigram one.

struct Loop {
  SearchGraph graph;
  int len;
};

// Words w1..w{n-1} as chains of `len` emitting states entered from the loop
// state 0 at lw * the unigram cost (+ wip), the word label on the epsilon
// arc back to 0; w0 a filler (no LM cost); 0 final at lw * the </s> cost.
Loop unigram_loop(const NgramModel& unigrams, int n, int len, float lw, float wip) {
  const int num_states = 1 + n * len;
  GraphBuilder b(num_states, n * len, graph_words(n));
  auto lm_cost = [&](const std::string& w) {
    const int id = unigrams.word_id(w);
    return static_cast<float>(-unigrams.score_log10(nullptr, 0, id) * kLn10 * lw);
  };
  for (int w = 0; w < n; ++w) {
    const int first = 1 + w * len;
    const float enter = w == 0 ? 2.0f : lm_cost("w" + std::to_string(w)) + wip;
    b.arc(0, first, 0, 0, enter);
    for (int k = 0; k < len; ++k) {
      const int s = first + k;
      const int senone = w * len + k + 1;
      b.arc(s, s, senone, 0, 0.3f);
      if (k + 1 < len) b.arc(s, s + 1, senone + 1, 0, 0.3f);
    }
    b.arc(first + len - 1, 0, 0, w + 1, 0.0f);
  }
  b.final(0, lm_cost("</s>"));
  b.filler(0);
  return Loop{b.build(), len};
}

// Exhaustive Viterbi over (graph state, last two words) with the full LM's
// costs: the best word sequence and its cost.
struct Exhaustive {
  std::vector<int> words;
  double cost = 0;
};

Exhaustive exhaustive_decode(const SearchGraph& g, const Scores& sc, LmRescorer& r) {
  // Token: cost, rescorer history (exact: the rescorer's history ids stand
  // for the word suffixes), words so far.
  struct Tok {
    double cost;
    std::vector<int> words;
  };
  using Key = std::pair<int, int32_t>;  // (state, history)
  std::map<Key, Tok> cur;
  auto relax = [&](std::map<Key, Tok>& m) {
    for (bool changed = true; changed;) {
      changed = false;
      const std::map<Key, Tok> snapshot = m;
      for (const auto& kv : snapshot) {
        const int s = kv.first.first;
        for (int64_t a = g.arc_begin[s]; a < g.arc_begin[s + 1]; ++a) {
          if (g.arc_ilabel[a] != 0) continue;
          double c = kv.second.cost + g.arc_cost[a];
          int32_t h = kv.first.second;
          std::vector<int> words = kv.second.words;
          if (g.arc_olabel[a] > 0) {
            const LmRescorer::WordEnd we = r.word_end(h, g.arc_olabel[a] - 1);
            c += we.delta;
            h = we.history;
            if (!g.word_is_filler[g.arc_olabel[a] - 1]) words.push_back(g.arc_olabel[a] - 1);
          }
          const Key k{g.arc_dest[a], h};
          auto it = m.find(k);
          if (it == m.end() || c < it->second.cost - 1e-9) {
            m[k] = Tok{c, words};
            changed = true;
          }
        }
      }
    }
  };
  cur[{g.start_state, LmRescorer::kStartHistory}] = Tok{0.0, {}};
  relax(cur);
  for (int t = 0; t < sc.frames; ++t) {
    std::map<Key, Tok> next;
    for (const auto& kv : cur) {
      const int s = kv.first.first;
      for (int64_t a = g.arc_begin[s]; a < g.arc_begin[s + 1]; ++a) {
        if (g.arc_ilabel[a] == 0) continue;
        const double c = kv.second.cost + g.arc_cost[a] - sc.v[size_t(t) * sc.senones + g.arc_ilabel[a] - 1];
        const Key k{g.arc_dest[a], kv.first.second};
        auto it = next.find(k);
        if (it == next.end() || c < it->second.cost) next[k] = Tok{c, kv.second.words};
      }
    }
    relax(next);
    cur.swap(next);
  }
  Exhaustive best;
  best.cost = 1e300;
  for (const auto& kv : cur) {
    const float fc = g.final_cost[kv.first.first];
    if (!std::isfinite(fc)) continue;
    const double c = kv.second.cost + fc + r.end_delta(kv.first.second);
    if (c < best.cost) best = Exhaustive{kv.second.words, c};
  }
  return best;
}

// The number of slots at which every history of at most two words from
// `n` graph words lands in its own slot (so the searcher's K-slot states
// never merge two histories and must match the exhaustive search).
int collision_free_slots(LmRescorer& r, int n) {
  std::vector<int32_t> all{LmRescorer::kStartHistory};
  for (int a = 1; a < n; ++a) {
    const int32_t ha = r.word_end(LmRescorer::kStartHistory, a).history;
    all.push_back(ha);
    for (int b = 1; b < n; ++b) all.push_back(r.word_end(ha, b).history);
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  for (int K = static_cast<int>(all.size()); K <= 64; ++K) {
    std::set<uint32_t> slots;
    for (int32_t h : all) slots.insert(r.history_hash(h) % K);
    if (slots.size() == all.size()) return K;
  }
  return 0;
}

TEST(LmRescoring, FindsTheBestPathUnderTheFullLm) {
  std::mt19937 rng(21);
  const int n = 4;  // w0 (filler), w1..w3
  const float lw = 3.0f, wip = 0.5f;
  int changed_by_rescoring = 0;
  for (int trial = 0; trial < 10; ++trial) {
    const testing::LmPair lms = random_lm_pair(rng, n, 1.0, 0.8, 0.0);
    // The pruned model: the unigrams alone, back-offs 0, exactly what the
    // loop's arcs charge.
    NgramList uni;
    uni.order = 1;
    lms.full->for_each_ngram(1, [&](const int* w, int, float p, float, bool) {
      uni.words.push_back(static_cast<uint32_t>(w[0]));
      uni.log10_prob.push_back(p);
      uni.log10_backoff.push_back(0.0f);
    });
    auto pruned = std::make_shared<const NgramModel>(
        NgramModel::build(lms.full->vocabulary(), {uni}, "unigrams.arpa"));
    const Loop loop = unigram_loop(*pruned, n, 2, lw, wip);
    const SearchGraph& g = loop.graph;
    LmRescorer probe(lms.full, pruned, g.words, g.word_is_filler, lw);
    const int K = collision_free_slots(probe, n);
    ASSERT_GT(K, 0) << "trial " << trial;
    // Scores: each frame favours a random word's senones a little.
    Scores sc(24, g.num_senones, -6.0f);
    std::uniform_int_distribution<int> pick(0, n - 1);
    std::normal_distribution<float> noise(0.0f, 0.7f);
    for (int t = 0; t < sc.frames; ++t) {
      const int w = pick(rng);
      for (int s = 0; s < sc.senones; ++s)
        sc.at(t, s) = (s / loop.len == w ? -2.5f : -4.5f) + noise(rng);
    }
    SearchOptions o;
    o.beam = 1e4f;
    o.word_end_beam = 1e4f;
    o.max_active = 1 << 30;
    o.lm_histories = K;
    LmRescorer r(lms.full, pruned, g.words, g.word_is_filler, lw);
    CpuSearcher rescored(g, o, &r);
    const Hypothesis h = testing::decode(rescored, sc);
    LmRescorer ref_r(lms.full, pruned, g.words, g.word_is_filler, lw);
    const Exhaustive ref = exhaustive_decode(g, sc, ref_r);
    std::vector<int> got;
    for (const HypothesisWord& w : h.words) got.push_back(w.word);
    const std::string what = "trial " + std::to_string(trial) + " K " + std::to_string(K);
    EXPECT_EQ(got, ref.words) << what;
    EXPECT_NEAR(h.cost, ref.cost, 1e-3 * std::max(1.0, std::fabs(ref.cost))) << what;
    // The plain search (the unigram LM only) for comparison: the test has
    // teeth only if rescoring changes some results.
    CpuSearcher plain(g, o);
    if (testing::decode(plain, sc).text() != h.text()) ++changed_by_rescoring;
  }
  EXPECT_GT(changed_by_rescoring, 0);
}

// Rescoring with K = 1 .. 4 on random graphs and LMs, tight beams: runs
// (no error), is repeatable, and reports its events.
TEST(LmRescoring, RepeatableOnRandomGraphs) {
  std::mt19937 rng(31);
  for (int trial = 0; trial < 6; ++trial) {
    const int words = 8;
    const SearchGraph g = random_rescoring_graph(rng, 300, 30, words, trial % 2 ? 0.25f : 0.0f,
                                                 trial % 3 == 0 ? 2 : 0, 200);
    const testing::LmPair lms = random_lm_pair(rng, words);
    const Scores sc = random_scores(rng, 40, 30, trial % 2 ? 0.25f : 0.0f);
    SearchOptions o;
    o.beam = 10.0f;
    o.word_end_beam = 7.0f;
    o.max_active = 60;
    o.lm_histories = 1 + trial % 4;
    o.max_word_records = 16;  // garbage collection too
    LmRescorer r(lms.full, lms.pruned, g.words, g.word_is_filler, 0.1f);
    CpuSearcher s(g, o, &r);
    const Hypothesis a = testing::decode(s, sc);
    const Hypothesis b = testing::decode(s, sc);
    EXPECT_EQ(a.text(), b.text());
    EXPECT_EQ(a.cost, b.cost);
    EXPECT_GT(s.stats().word_end_events, 0);
    for (const SearchToken& t : s.live_tokens()) EXPECT_LT(t.state, g.num_states());
  }
}

}  // namespace
}  // namespace gpuspeech
