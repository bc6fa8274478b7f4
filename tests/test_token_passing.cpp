// Token passing on the CPU (common/search): hand-built graphs with known best
// paths, an exhaustive Viterbi reference on random graphs, pruning, ties,
// word-record garbage collection, partial results and n-best, errors.
// test_token_passing_devices.cpp holds the CUDA searcher against this one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "common/search/cpu_searcher.h"
#include "common/search/radix_sort.h"
#include "common/search/search_graph.h"
#include "common/search/token_passing.h"
#include "tests/search_test_graphs.h"


namespace gpuspeech {
namespace {

using testing::decode;
using testing::GraphBuilder;
using testing::kInf;
using testing::make_word_loop;
using testing::random_graph;
using testing::random_scores;
using testing::Scores;
using testing::word_texts;
using testing::WordLoop;

// ---------------------------------------------------------------------------
// An exhaustive Viterbi reference in double precision: no pruning; per
// frame, the emitting step then Bellman-Ford over epsilon arcs until
// nothing changes; back-pointers per (frame, state) give the word sequence.

struct ReferenceResult {
  double cost = std::numeric_limits<double>::infinity();
  std::vector<int> words;
  bool final_state = false;
};

ReferenceResult reference_viterbi(const SearchGraph& g, const Scores& sc) {
  const int n = g.num_states();
  const double inf = std::numeric_limits<double>::infinity();
  struct Cell {
    double cost;
    int prev_frame;  // boundary of the predecessor cell
    int prev_state;
    int arc;
  };
  std::vector<std::vector<Cell>> cells(sc.frames + 1, std::vector<Cell>(n, {inf, -1, -1, -1}));
  auto closure = [&](int b) {
    bool changed = true;
    while (changed) {
      changed = false;
      for (int s = 0; s < n; ++s) {
        if (cells[b][s].cost == inf) continue;
        for (int64_t a = g.arc_begin[s]; a < g.arc_begin[s + 1]; ++a) {
          if (g.arc_ilabel[a] != 0) continue;
          const double c = cells[b][s].cost + g.arc_cost[a];
          Cell& d = cells[b][g.arc_dest[a]];
          if (c < d.cost - 1e-12) {
            d = {c, b, s, static_cast<int>(a)};
            changed = true;
          }
        }
      }
    }
  };
  cells[0][g.start_state] = {0.0, -1, -1, -1};
  closure(0);
  for (int t = 0; t < sc.frames; ++t) {
    for (int s = 0; s < n; ++s) {
      if (cells[t][s].cost == inf) continue;
      for (int64_t a = g.arc_begin[s]; a < g.arc_begin[s + 1]; ++a) {
        const int il = g.arc_ilabel[a];
        if (il == 0) continue;
        const double c = cells[t][s].cost + g.arc_cost[a] - sc.v[size_t(t) * sc.senones + il - 1];
        Cell& d = cells[t + 1][g.arc_dest[a]];
        if (c < d.cost) d = {c, t, s, static_cast<int>(a)};
      }
    }
    closure(t + 1);
  }
  ReferenceResult r;
  int best = -1;
  bool any_final = false;
  for (int s = 0; s < n; ++s)
    if (cells[sc.frames][s].cost < inf && g.final_cost[s] < kInf) any_final = true;
  for (int s = 0; s < n; ++s) {
    const Cell& c = cells[sc.frames][s];
    if (c.cost == inf) continue;
    if (any_final && !(g.final_cost[s] < kInf)) continue;
    const double total = c.cost + (any_final ? g.final_cost[s] : 0.0);
    if (total < r.cost) {
      r.cost = total;
      best = s;
    }
  }
  r.final_state = any_final;
  for (int b = sc.frames, s = best; s >= 0 && cells[b][s].arc >= 0;) {
    const Cell& c = cells[b][s];
    const int ol = g.arc_olabel[c.arc];
    if (ol > 0 && !g.word_is_filler[ol - 1]) r.words.push_back(ol - 1);
    b = c.prev_frame;
    s = c.prev_state;
  }
  std::reverse(r.words.begin(), r.words.end());
  return r;
}

SearchOptions wide_options() {
  SearchOptions o;
  o.beam = 1e4f;
  o.word_end_beam = 1e4f;
  o.max_active = 1 << 30;
  return o;
}

// ---------------------------------------------------------------------------

TEST(TokenPassing, PicksTheWordTheScoresFavour) {
  const WordLoop loop = make_word_loop({"yes", "no"}, 3, 1.0f);
  // 9 frames: "yes" senones 0..2 favoured for 3 frames each.
  Scores sc(9, 6, -10.0f);
  for (int t = 0; t < 9; ++t) sc.at(t, t / 3) = -1.0f;
  CpuSearcher s(loop.graph, wide_options());
  Hypothesis h = decode(s, sc);
  ASSERT_EQ(word_texts(h), std::vector<std::string>({"yes"}));
  EXPECT_TRUE(h.final_state);
  EXPECT_EQ(h.words[0].start_frame, 0);
  EXPECT_EQ(h.words[0].end_frame, 8);
  // Known cost: entry 1.0, then 9 frames: 2 forward arcs and 7 self-loops
  // at 0.7 each, each frame scoring -1.
  EXPECT_FLOAT_EQ(h.cost, 1.0f + 9 * 0.7f + 9 * 1.0f);

  // Now "no" for 4 frames, then "yes" for 5: two words with their times.
  Scores sc2(9, 6, -10.0f);
  for (int t = 0; t < 4; ++t) sc2.at(t, 3 + std::min(t, 2)) = -1.0f;
  for (int t = 4; t < 9; ++t) sc2.at(t, std::min((t - 4) * 3 / 5, 2)) = -1.0f;
  sc2.at(5, 1) = -1.0f;  // a 5-frame "yes": 0 0 1 1 2
  sc2.at(6, 1) = -1.0f;
  Hypothesis h2 = decode(s, sc2);
  ASSERT_EQ(word_texts(h2), std::vector<std::string>({"no", "yes"}));
  EXPECT_EQ(h2.words[0].start_frame, 0);
  EXPECT_EQ(h2.words[0].end_frame, 3);
  EXPECT_EQ(h2.words[1].start_frame, 4);
  EXPECT_EQ(h2.words[1].end_frame, 8);
}

TEST(TokenPassing, EpsilonChainsAndFinalCosts) {
  // 0 -eps 0.5-> 1 -eps 0.25-> 2 -emit s0 1.0-> 3 -eps "a" 0.125-> 4 -eps 2.0-> 5 (final 0.5)
  //                              also 3 is final with cost 10.
  GraphBuilder b(6, 1, {"a"});
  b.arc(0, 1, 0, 0, 0.5f);
  b.arc(1, 2, 0, 0, 0.25f);
  b.arc(2, 3, 1, 0, 1.0f);
  b.arc(3, 4, 0, 1, 0.125f);
  b.arc(4, 5, 0, 0, 2.0f);
  b.final(5, 0.5f);
  b.final(3, 10.0f);
  const SearchGraph g = b.build();
  Scores sc(1, 1, -0.5f);
  CpuSearcher s(g, wide_options());
  Hypothesis h = decode(s, sc);
  ASSERT_EQ(word_texts(h), std::vector<std::string>({"a"}));
  EXPECT_TRUE(h.final_state);
  EXPECT_FLOAT_EQ(h.cost, 0.5f + 0.25f + 1.0f + 0.5f + 0.125f + 2.0f + 0.5f);
  // The record was made at boundary 1 by an epsilon arc: the word is frame 0.
  EXPECT_EQ(h.words[0].start_frame, 0);
  EXPECT_EQ(h.words[0].end_frame, 0);
  // All four states reachable after the frame are live (beam is wide).
  EXPECT_EQ(s.live_tokens().size(), 3u);  // 3, 4, 5
}

TEST(TokenPassing, NoFinalStateFallsBackToTheBestToken) {
  GraphBuilder b(3, 2, {"x", "y"});
  b.arc(0, 1, 1, 1, 0.0f);
  b.arc(0, 2, 2, 2, 0.0f);
  const SearchGraph g = b.build();  // no final states
  Scores sc(1, 2);
  sc.at(0, 0) = -3.0f;
  sc.at(0, 1) = -2.0f;
  CpuSearcher s(g, wide_options());
  Hypothesis h = decode(s, sc);
  EXPECT_FALSE(h.final_state);
  ASSERT_EQ(word_texts(h), std::vector<std::string>({"y"}));
  EXPECT_FLOAT_EQ(h.cost, 2.0f);
}

TEST(TokenPassing, TiesGoToTheLowerArcIndex) {
  // Two arcs of equal total cost into state 3, labelled "b" and "a"; the
  // one earlier in CSR order wins, whatever the word or the source.
  for (int order = 0; order < 2; ++order) {
    GraphBuilder b(4, 1, {"a", "b"});
    if (order == 0) {
      b.arc(0, 1, 0, 0, 1.0f);  // arc 0
      b.arc(0, 2, 0, 0, 1.0f);  // arc 1
    } else {
      b.arc(0, 2, 0, 0, 1.0f);
      b.arc(0, 1, 0, 0, 1.0f);
    }
    b.arc(1, 3, 1, 1, 0.5f);  // via 1: word "a"
    b.arc(2, 3, 1, 2, 0.5f);  // via 2: word "b" (state 2's arcs come later in CSR)
    b.final(3);
    const SearchGraph g = b.build();
    Scores sc(1, 1, -1.0f);
    CpuSearcher s(g, wide_options());
    Hypothesis h = decode(s, sc);
    ASSERT_EQ(word_texts(h), std::vector<std::string>({"a"})) << "order " << order;
  }
  // Equal final totals in different states: the lower state index.
  GraphBuilder b(3, 1, {"a", "b"});
  b.arc(0, 2, 1, 2, 1.0f);
  b.arc(0, 1, 1, 1, 1.0f);
  b.final(1);
  b.final(2);
  const SearchGraph g = b.build();
  CpuSearcher s(g, wide_options());
  Scores sc(1, 1, 0.0f);
  EXPECT_EQ(word_texts(decode(s, sc)), std::vector<std::string>({"a"}));
}

TEST(TokenPassing, MatchesExhaustiveViterbiOnRandomGraphs) {
  std::mt19937 rng(1234);
  int compared = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const SearchGraph g = random_graph(rng, 30 + trial, 8, 6, 0.0f);
    const Scores sc = random_scores(rng, 25, 8, 0.0f);
    const ReferenceResult ref = reference_viterbi(g, sc);
    CpuSearcher s(g, wide_options());
    const Hypothesis h = decode(s, sc);
    if (ref.cost == std::numeric_limits<double>::infinity()) {
      EXPECT_TRUE(h.words.empty());
      continue;
    }
    ++compared;
    EXPECT_EQ(h.final_state, ref.final_state) << "trial " << trial;
    EXPECT_NEAR(h.cost, ref.cost, 1e-4 * std::max(1.0, std::fabs(ref.cost))) << "trial " << trial;
    std::vector<int> got;
    for (const HypothesisWord& w : h.words) got.push_back(w.word);
    EXPECT_EQ(got, ref.words) << "trial " << trial;
  }
  EXPECT_GT(compared, 30);
}

TEST(TokenPassing, BeamKeepsOrDropsALateWinner) {
  // Path A is cheap on frame 0 and dear on frame 1; path B the reverse and
  // better overall. A wide beam keeps B alive to win; a beam narrower than
  // B's frame-0 deficit drops it and A wins.
  GraphBuilder b(5, 4, {"A", "B"});
  b.arc(0, 1, 1, 0, 0.0f);
  b.arc(1, 2, 2, 1, 0.0f);
  b.arc(0, 3, 3, 0, 0.0f);
  b.arc(3, 4, 4, 2, 0.0f);
  b.final(2);
  b.final(4);
  const SearchGraph g = b.build();
  Scores sc(2, 4);
  sc.at(0, 0) = -1.0f;  // A frame 0
  sc.at(0, 2) = -6.0f;  // B frame 0: 5 behind
  sc.at(1, 1) = -9.0f;  // A frame 1
  sc.at(1, 3) = -1.0f;  // B frame 1
  SearchOptions o;
  o.beam = 5.5f;
  o.word_end_beam = 5.5f;
  CpuSearcher wide(g, o);
  EXPECT_EQ(word_texts(decode(wide, sc)), std::vector<std::string>({"B"}));
  o.beam = 4.5f;
  o.word_end_beam = 4.5f;
  CpuSearcher narrow(g, o);
  EXPECT_EQ(word_texts(decode(narrow, sc)), std::vector<std::string>({"A"}));
}

TEST(TokenPassing, WordEndBeamPrunesOnlyFreshWordEnds) {
  // From the start, two emitting arcs: one ends word "w" (label on the arc),
  // 3 behind the best; one continues a word (no label), 3 behind as well.
  GraphBuilder b(4, 2, {"best", "w"});
  b.arc(0, 1, 1, 1, 0.0f);  // best, word end
  b.arc(0, 2, 2, 2, 3.0f);  // word end of "w", 3 worse
  b.arc(0, 3, 2, 0, 3.0f);  // no word end, 3 worse
  const SearchGraph g = b.build();
  Scores sc(1, 2, -1.0f);
  SearchOptions o;
  o.beam = 10.0f;
  o.word_end_beam = 2.0f;
  CpuSearcher s(g, o);
  s.reset();
  s.advance(sc.v.data(), 1, 2);
  std::vector<int> states;
  for (const SearchToken& t : s.live_tokens()) states.push_back(t.state);
  std::sort(states.begin(), states.end());
  EXPECT_EQ(states, std::vector<int>({1, 3}));
}

TEST(TokenPassing, MaxActiveCapsTheLiveTokensAndKeepsTheBest) {
  // A fan of 200 states with distinct costs, all within the beam.
  const int n = 200;
  GraphBuilder b(n + 1, 1, {"x"});
  for (int k = 0; k < n; ++k) b.arc(0, 1 + k, 1, 0, 0.01f * static_cast<float>((k * 37) % n));
  const SearchGraph g = b.build();
  Scores sc(1, 1, 0.0f);
  for (int cap : {1, 7, 50, 150}) {
    SearchOptions o;
    o.beam = 10.0f;
    o.word_end_beam = 10.0f;
    o.max_active = cap;
    o.histogram_bins = 4096;  // finer than the cost spacing: exact cap
    CpuSearcher s(g, o);
    s.reset();
    s.advance(sc.v.data(), 1, 1);
    const std::vector<SearchToken> live = s.live_tokens();
    EXPECT_LE(static_cast<int>(live.size()), cap) << cap;
    EXPECT_GE(static_cast<int>(live.size()), cap * 9 / 10) << cap;
    float best = kInf, worst = -kInf;
    for (const SearchToken& t : live) {
      best = std::min(best, t.cost);
      worst = std::max(worst, t.cost);
    }
    EXPECT_FLOAT_EQ(best, 0.0f) << cap;
    // The survivors are the cheapest: nothing dropped is cheaper.
    EXPECT_LE(worst, 0.01f * static_cast<float>(cap) + 1e-4f) << cap;
  }
}

TEST(TokenPassing, GarbageCollectionLeavesResultsUnchanged) {
  // A long utterance of many short words through a word loop: with a 16
  // record buffer the store is collected many times, and the result and
  // every word time equal those of an unbounded buffer.
  const WordLoop loop = make_word_loop({"a", "b", "c", "d"}, 2, 2.0f);
  std::mt19937 rng(7);
  const int frames = 600;
  Scores sc(frames, 8, -6.0f);
  std::uniform_int_distribution<int> pick(0, 3), dur(2, 6);
  for (int t = 0; t < frames;) {
    const int w = pick(rng), d = dur(rng);
    for (int k = 0; k < d && t < frames; ++k, ++t) sc.at(t, w * 2 + (k * 2 >= d ? 1 : 0)) = -1.0f;
  }
  SearchOptions big = wide_options();
  big.beam = 30.0f;
  big.word_end_beam = 30.0f;
  SearchOptions tiny = big;
  tiny.max_word_records = 16;
  CpuSearcher a(loop.graph, big), b(loop.graph, tiny);
  const Hypothesis ha = decode(a, sc), hb = decode(b, sc);
  EXPECT_GT(ha.words.size(), 50u);
  EXPECT_EQ(ha.text(), hb.text());
  ASSERT_EQ(ha.words.size(), hb.words.size());
  for (size_t i = 0; i < ha.words.size(); ++i) {
    EXPECT_EQ(ha.words[i].start_frame, hb.words[i].start_frame);
    EXPECT_EQ(ha.words[i].end_frame, hb.words[i].end_frame);
  }
  EXPECT_EQ(ha.cost, hb.cost);
  EXPECT_GT(b.stats().collections, 5);
  EXPECT_EQ(a.stats().collections, 0);
  // Bounded: the capacity stayed small (live records only).
  EXPECT_LT(b.stats().record_capacity, 4096);
}

TEST(TokenPassing, PartialResultMarksTheSharedPrefixStable) {
  // "hello" then a branch, "world" or "there", each to its own final state.
  GraphBuilder b(7, 4, {"hello", "world", "there"});
  b.arc(0, 1, 1, 0, 0.0f);
  b.arc(1, 1, 1, 0, 0.0f);
  b.arc(1, 2, 0, 1, 0.0f);  // "hello" ends
  b.arc(2, 3, 2, 0, 0.0f);  // world...
  b.arc(3, 3, 2, 0, 0.0f);
  b.arc(3, 5, 0, 2, 0.0f);
  b.arc(2, 4, 3, 0, 0.0f);  // there...
  b.arc(4, 4, 3, 0, 0.0f);
  b.arc(4, 6, 0, 3, 0.0f);
  b.arc(5, 5, 4, 0, 0.0f);
  b.arc(6, 6, 4, 0, 0.0f);
  b.final(5);
  b.final(6);
  const SearchGraph g = b.build();
  Scores sc(7, 4, -20.0f);
  for (int t = 0; t < 3; ++t) sc.at(t, 0) = -1.0f;
  for (int t = 3; t < 6; ++t) {
    sc.at(t, 1) = -1.0f;  // world slightly better than there
    sc.at(t, 2) = -1.5f;
  }
  sc.at(6, 3) = -1.0f;
  SearchOptions o;
  o.beam = 5.0f;
  o.word_end_beam = 5.0f;
  CpuSearcher s(g, o);
  s.reset();
  s.advance(sc.v.data(), 2, 4);  // inside "hello"
  Hypothesis p = s.partial();
  EXPECT_TRUE(p.words.empty());
  EXPECT_EQ(p.stable_words, 0);
  s.advance(sc.v.data() + 2 * 4, 3, 4);  // 5 frames: inside world/there
  p = s.partial();
  ASSERT_EQ(word_texts(p), std::vector<std::string>({"hello"}));
  EXPECT_EQ(p.stable_words, 1);
  EXPECT_EQ(p.words[0].end_frame, 2);
  s.advance(sc.v.data() + 5 * 4, 2, 4);
  p = s.partial();
  EXPECT_EQ(p.stable_words, 1);  // world and there both alive
  const Hypothesis h = s.best();
  EXPECT_EQ(word_texts(h), std::vector<std::string>({"hello", "world"}));
  EXPECT_GT(h.confidence, 0.5f);
  EXPECT_LT(h.confidence, 1.0f);  // "there" survived the beam as an alternative
  const std::vector<Hypothesis> nb = s.nbest(5);
  ASSERT_EQ(nb.size(), 2u);
  EXPECT_EQ(nb[0].text(), "hello world");
  EXPECT_EQ(nb[1].text(), "hello there");
  EXPECT_FLOAT_EQ(nb[1].cost - nb[0].cost, 1.5f);
  EXPECT_NEAR(nb[0].confidence + nb[1].confidence, 1.0f, 1e-6f);
  EXPECT_NEAR(nb[0].confidence, 1.0 / (1.0 + std::exp(-0.1 * 1.5)), 1e-5);
  EXPECT_NEAR(nb[0].words[0].confidence, 1.0f, 1e-6f);  // "hello" is in both
  EXPECT_NEAR(nb[0].words[1].confidence, nb[0].confidence, 1e-6f);
}

// Hypothesis::trailing_silence_frames: a word "w" (senone 0, label on an
// epsilon arc at its end), then silence (senone 1, filler word <sil>, which
// may repeat). Inside "w" the count is 0 however long the word lasts; in
// the silence after it, the frames since "w" ended, across <sil> records.
TEST(TokenPassing, TrailingSilenceCountsFillerFramesAfterTheLastWord) {
  GraphBuilder b(4, 2, {"w", "<sil>"});
  b.filler(1);
  b.arc(0, 1, 1, 0, 0.0f);  // into w
  b.arc(1, 1, 1, 0, 0.0f);
  b.arc(1, 2, 0, 1, 0.0f);  // "w" ends
  b.arc(2, 3, 2, 0, 0.0f);  // into silence
  b.arc(3, 3, 2, 0, 0.0f);
  b.arc(3, 2, 0, 2, 0.0f);  // "<sil>" ends
  b.arc(2, 1, 1, 0, 0.0f);  // w again
  b.final(2);
  const SearchGraph g = b.build();
  Scores sc(30, 2, -8.0f);
  for (int t = 0; t < 12; ++t) sc.at(t, 0) = -1.0f;  // a long "w": 12 frames
  for (int t = 12; t < 30; ++t) sc.at(t, 1) = -1.0f;
  CpuSearcher s(g, wide_options());
  s.set_filler_senones({0, 1});
  s.reset();
  for (int t = 0; t < 11; ++t) {  // inside the word
    s.advance(sc.v.data() + t * 2, 1, 2);
    EXPECT_EQ(s.partial().trailing_silence_frames, 0) << "frame " << t;
  }
  s.advance(sc.v.data() + 11 * 2, 9, 2);  // w ended at frame 11; 8 frames of silence
  Hypothesis p = s.partial();
  ASSERT_EQ(word_texts(p), std::vector<std::string>({"w"}));
  EXPECT_EQ(p.words[0].end_frame, 11);
  EXPECT_EQ(p.trailing_silence_frames, 8);
  s.advance(sc.v.data() + 20 * 2, 10, 2);
  p = s.partial();
  EXPECT_EQ(p.trailing_silence_frames, 18);
  EXPECT_EQ(s.best().trailing_silence_frames, 18);  // best() says the same

  // Without filler senones the segment after the last record counts as
  // silence: 11 frames "since the start" inside the word.
  CpuSearcher plain(g, wide_options());
  plain.reset();
  plain.advance(sc.v.data(), 11, 2);
  EXPECT_EQ(plain.partial().trailing_silence_frames, 11);
  EXPECT_THROW(plain.set_filler_senones({1}), std::invalid_argument);  // too short
}

// Searcher::state_kinds against its definition, computed plainly: a state
// entered by emitting arcs has their senones' kind (word, filler, or mixed
// when both); one entered only by label-less epsilon arcs takes the kinds
// of their sources, to a fixed point; anything mixed or unreached is
// unknown. Random graphs of at most 7 states (so that the fixed point is
// reached within the searcher's 16 passes: a state changes at most twice).
TEST(TokenPassing, StateKindsAreTheFixedPointOfTheirDefinition) {
  std::mt19937 rng(57);
  constexpr int kUnset = 0, kWord = 1, kFiller = 2, kMixed = 3;
  auto merge = [](int a, int b) { return a == kUnset || a == b ? b : kMixed; };
  int seen_filler = 0, seen_word = 0, seen_inherited = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 6), senones = 4;
    GraphBuilder b(n, senones, {"a", "<sil>"});
    b.filler(1);
    const std::vector<uint8_t> is_filler{0, 0, 1, 1};
    const int arcs = static_cast<int>(rng() % (3 * n)) + 1;
    for (int i = 0; i < arcs; ++i) {
      const int src = static_cast<int>(rng() % n), dst = static_cast<int>(rng() % n);
      const int r = static_cast<int>(rng() % 4);
      // Emitting, label-less epsilon, or epsilon with a word label.
      b.arc(src, dst, r < 2 ? 1 + static_cast<int>(rng() % senones) : 0,
            r == 3 ? 1 + static_cast<int>(rng() % 2) : 0, 0.0f);
    }
    b.final(n - 1);
    const SearchGraph g = b.build();
    std::vector<int> kind(n, kUnset);
    std::vector<bool> emitting_in(n, false);
    for (int s = 0; s < n; ++s)
      for (int64_t a = g.arc_begin[s]; a < g.arc_begin[s + 1]; ++a)
        if (g.arc_ilabel[a] > 0) {
          emitting_in[g.arc_dest[a]] = true;
          kind[g.arc_dest[a]] =
              merge(kind[g.arc_dest[a]], is_filler[g.arc_ilabel[a] - 1] ? kFiller : kWord);
        }
    for (bool changed = true; changed;) {
      changed = false;
      for (int s = 0; s < n; ++s)
        for (int64_t a = g.arc_begin[s]; a < g.arc_begin[s + 1]; ++a) {
          const int d = g.arc_dest[a];
          if (g.arc_ilabel[a] != 0 || g.arc_olabel[a] != 0 || emitting_in[d] || kind[s] == kUnset)
            continue;
          const int k = merge(kind[d], kind[s]);
          if (k != kind[d]) {
            kind[d] = k;
            changed = true;
            if (k != kMixed) ++seen_inherited;
          }
        }
    }
    const auto got = Searcher::state_kinds(g, is_filler);
    ASSERT_EQ(got->size(), static_cast<size_t>(n));
    for (int s = 0; s < n; ++s) {
      // StateKind: 0 unknown, 1 word, 2 filler.
      const int want = kind[s] == kWord ? 1 : kind[s] == kFiller ? 2 : 0;
      ASSERT_EQ((*got)[s], want) << "trial " << trial << ", state " << s;
      seen_word += want == 1;
      seen_filler += want == 2;
    }
  }
  // The trials reached every case.
  EXPECT_GT(seen_word, 100);
  EXPECT_GT(seen_filler, 100);
  EXPECT_GT(seen_inherited, 20);
}

// Word confidences come with best() and partial() (not only n-best): where
// an alternative survives, the word it disputes gets less than 1, the word
// every path shares 1.
TEST(TokenPassing, BestAndPartialCarryWordConfidences) {
  GraphBuilder b(7, 4, {"hello", "world", "there"});
  b.arc(0, 1, 1, 0, 0.0f);
  b.arc(1, 1, 1, 0, 0.0f);
  b.arc(1, 2, 0, 1, 0.0f);
  b.arc(2, 3, 2, 0, 0.0f);
  b.arc(3, 3, 2, 0, 0.0f);
  b.arc(3, 5, 0, 2, 0.0f);
  b.arc(2, 4, 3, 0, 0.0f);
  b.arc(4, 4, 3, 0, 0.0f);
  b.arc(4, 6, 0, 3, 0.0f);
  b.arc(5, 5, 4, 0, 0.0f);
  b.arc(6, 6, 4, 0, 0.0f);
  b.final(5);
  b.final(6);
  const SearchGraph g = b.build();
  Scores sc(7, 4, -20.0f);
  for (int t = 0; t < 3; ++t) sc.at(t, 0) = -1.0f;
  for (int t = 3; t < 6; ++t) {
    sc.at(t, 1) = -1.0f;
    sc.at(t, 2) = -1.5f;
  }
  sc.at(6, 3) = -1.0f;
  SearchOptions o;
  o.beam = 5.0f;
  o.word_end_beam = 5.0f;
  CpuSearcher s(g, o);
  s.reset();
  s.advance(sc.v.data(), 7, 4);
  const Hypothesis h = s.best();
  ASSERT_EQ(word_texts(h), std::vector<std::string>({"hello", "world"}));
  const double expected = 1.0 / (1.0 + std::exp(-0.1 * 1.5));
  EXPECT_NEAR(h.words[0].confidence, 1.0f, 1e-6f);
  EXPECT_NEAR(h.words[1].confidence, expected, 1e-5);
  EXPECT_NEAR(h.confidence, expected, 1e-5);
  const Hypothesis p = s.partial();
  ASSERT_EQ(word_texts(p), std::vector<std::string>({"hello", "world"}));
  EXPECT_NEAR(p.words[0].confidence, 1.0f, 1e-6f);
  EXPECT_NEAR(p.words[1].confidence, expected, 1e-5);  // equal final costs here
  const std::vector<Hypothesis> nb = s.nbest(2);
  ASSERT_EQ(nb.size(), 2u);
  EXPECT_EQ(nb[0].words[1].confidence, h.words[1].confidence);
}

TEST(TokenPassing, FillersAreLeftOutOfHypotheses) {
  GraphBuilder b(3, 2, {"<sil>", "go"});
  b.filler(0);
  b.arc(0, 1, 1, 1, 0.0f);  // silence
  b.arc(1, 2, 2, 2, 0.0f);  // "go"
  b.final(2);
  Scores sc(2, 2, -1.0f);
  const SearchGraph g = b.build();
  CpuSearcher s(g, wide_options());
  const Hypothesis h = decode(s, sc);
  ASSERT_EQ(word_texts(h), std::vector<std::string>({"go"}));
  EXPECT_EQ(h.words[0].start_frame, 1);  // silence took frame 0
  EXPECT_EQ(h.words[0].end_frame, 1);
}

TEST(TokenPassing, ErrorsAreClear) {
  const WordLoop loop = make_word_loop({"a"}, 2, 0.0f);
  CpuSearcher s(loop.graph);
  Scores sc(1, 2);
  EXPECT_THROW(s.advance(sc.v.data(), 1, 2), std::logic_error);
  s.reset();
  EXPECT_THROW(s.advance(sc.v.data(), 1, 1), std::invalid_argument);  // too few columns
  EXPECT_THROW(s.advance(nullptr, 1, 2), std::invalid_argument);
  SearchOptions bad;
  bad.beam = -1.0f;
  EXPECT_THROW(CpuSearcher(loop.graph, bad), std::invalid_argument);
  bad = SearchOptions{};
  bad.word_end_beam = bad.beam * 2;
  EXPECT_THROW(CpuSearcher(loop.graph, bad), std::invalid_argument);
  bad = SearchOptions{};
  bad.max_active = 0;
  EXPECT_THROW(CpuSearcher(loop.graph, bad), std::invalid_argument);
  // A negative-cost epsilon cycle never settles.
  GraphBuilder b(2, 1, {"a"});
  b.arc(0, 1, 0, 0, -1.0f);
  b.arc(1, 0, 0, 0, -1.0f);
  const SearchGraph cycle = b.build();
  CpuSearcher cyc(cycle, wide_options());
  EXPECT_THROW(cyc.reset(), std::runtime_error);
  EXPECT_THROW(cyc.advance(sc.v.data(), 1, 2), std::logic_error);  // needs a good reset
  // A broken graph is refused before anything else.
  SearchGraph broken = loop.graph;
  broken.arc_dest[0] = 99;
  EXPECT_THROW(CpuSearcher{broken}, std::invalid_argument);
  // Non-finite scores never become tokens: all -inf kills every path.
  CpuSearcher dead(loop.graph, wide_options());
  Scores neg(3, 2, -kInf);
  const Hypothesis h = decode(dead, neg);
  EXPECT_TRUE(h.words.empty());
  EXPECT_TRUE(dead.live_tokens().empty());
  Scores nan(1, 2, std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(decode(dead, nan).words.empty());
}

TEST(TokenPassing, ActiveSenonesAreWhatTheNextFrameReads) {
  // Scoring only the active senones (all others -inf) must not change
  // anything: run one searcher on full scores and one on masked ones.
  std::mt19937 rng(31);
  const SearchGraph g = random_graph(rng, 400, 500, 20, 0.0f);
  const Scores sc = random_scores(rng, 40, 500, 0.0f);
  SearchOptions o;
  o.beam = 8.0f;
  o.word_end_beam = 6.0f;
  o.max_active = 60;
  CpuSearcher full(g, o), masked(g, o);
  full.reset();
  masked.reset();
  size_t active_total = 0;
  for (int t = 0; t < sc.frames; ++t) {
    const std::vector<int32_t> active = masked.active_senones();
    active_total += active.size();
    ASSERT_TRUE(std::is_sorted(active.begin(), active.end()));
    std::vector<float> row(sc.senones, -kInf);
    for (int32_t k : active) row[k] = sc.v[size_t(t) * sc.senones + k];
    full.advance(sc.v.data() + size_t(t) * sc.senones, 1, sc.senones);
    masked.advance(row.data(), 1, sc.senones);
  }
  EXPECT_EQ(full.best().text(), masked.best().text());
  EXPECT_EQ(full.best().cost, masked.best().cost);
  EXPECT_LT(active_total, size_t(sc.frames) * sc.senones / 2);  // a real subset
}

TEST(TokenPassing, WordRecordStoreCollectsAndFindsCommonAncestors) {
  WordRecordStore st(8);
  const int32_t r0 = st.append(0, 1, -1, 1.0f);
  const int32_t r1 = st.append(1, 2, r0, 2.0f);
  const int32_t dead = st.append(2, 2, r0, 2.5f);
  const int32_t r2 = st.append(3, 3, r1, 3.0f);
  const int32_t r3 = st.append(4, 3, r1, 3.5f);
  EXPECT_EQ(st.common_ancestor({r2, r3}), r1);
  EXPECT_EQ(st.common_ancestor({r2, dead}), r0);
  EXPECT_EQ(st.common_ancestor({r2, -1}), -1);
  int32_t roots[3] = {r2, r3, -1};
  EXPECT_EQ(st.collect(roots, 3), 1);  // only `dead` goes
  EXPECT_EQ(st.size(), 4);
  EXPECT_EQ(roots[2], -1);
  const std::vector<int32_t> c = st.chain(roots[0]);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(st[c[0]].word, 0);
  EXPECT_EQ(st[c[1]].word, 1);
  EXPECT_EQ(st[c[2]].word, 3);
  EXPECT_EQ(st[roots[1]].word, 4);
  EXPECT_EQ(st[roots[1]].depth, 3);
}

// Depths are filled in only when a common-ancestor search needs them: on
// random record trees, with appends, searches and a collection between
// them, every search agrees with intersecting the chains themselves.
TEST(TokenPassing, WordRecordStoreLazyDepthsGiveTheSameAncestors) {
  std::mt19937 rng(20261127u);
  for (int trial = 0; trial < 20; ++trial) {
    WordRecordStore st(1 << 20);
    auto brute = [&](const std::vector<int32_t>& lasts) {
      // The deepest record on every chain: the last entry that all the
      // chains (oldest first) share at the same place.
      std::vector<std::vector<int32_t>> chains;
      for (int32_t l : lasts) chains.push_back(st.chain(l));
      int32_t shared = -1;
      for (size_t k = 0;; ++k) {
        bool all = !chains.empty();
        for (const auto& c : chains) all = all && k < c.size() && c[k] == chains[0][k];
        if (!all) break;
        shared = chains[0][k];
      }
      return shared;
    };
    for (int step = 0; step < 300; ++step) {
      const int32_t n = static_cast<int32_t>(st.size());
      // Mostly recent predecessors, as a search makes them; some roots.
      std::uniform_int_distribution<int32_t> recent(std::max(0, n - 40), std::max(0, n - 1));
      const int32_t prev = (n == 0 || rng() % 10 == 0) ? -1 : recent(rng);
      st.append(step, step, prev, 0.0f);
      if (step % 7 == 0) {
        std::vector<int32_t> lasts;
        const int m = 1 + static_cast<int>(rng() % 6);
        std::uniform_int_distribution<int32_t> any(0, static_cast<int32_t>(st.size()) - 1);
        for (int j = 0; j < m; ++j) lasts.push_back(any(rng));
        const int32_t want = brute(lasts);
        EXPECT_EQ(st.common_ancestor(lasts), want) << "trial " << trial << " step " << step;
      }
      if (step == 150) {  // keep the chains of a few records, renumbered
        int32_t roots[4];
        std::uniform_int_distribution<int32_t> any(0, static_cast<int32_t>(st.size()) - 1);
        for (int32_t& r : roots) r = any(rng);
        st.collect(roots, 4);
        EXPECT_EQ(st.common_ancestor({roots[0], roots[1], roots[2], roots[3]}),
                  brute({roots[0], roots[1], roots[2], roots[3]}));
      }
    }
  }
}

// The rescorer's canonical event order: the radix sort must give exactly
// what std::sort gives on the (key, index) pairs, for short and long
// lists, keys that differ only in some bytes, and repeated keys (indices
// increase through the input, so a stable sort by key equals the pairs'
// order).
TEST(RadixSort, EqualsStdSortOnPairs) {
  std::mt19937_64 rng(2026);
  std::vector<KeyIndex> scratch;
  for (int trial = 0; trial < 200; ++trial) {
    const size_t n = trial % 7 == 0 ? rng() % 64 : 64 + rng() % 3000;
    std::vector<KeyIndex> items(n);
    const int kind = trial % 4;
    for (size_t i = 0; i < n; ++i) {
      uint64_t k = rng();
      if (kind == 1) k &= 0x00FF00000000FF00ull;  // most bytes equal
      if (kind == 2) k = (k % 16) << 40;           // few distinct keys, one byte
      if (kind == 3) k = (k >> 39 << 32) | (k & 0x1FFFFFFu);  // (source, arc)-shaped
      items[i] = {k, static_cast<uint32_t>(i)};
    }
    std::vector<KeyIndex> expected = items;
    std::sort(expected.begin(), expected.end());
    radix_sort_by_key(items, scratch);
    ASSERT_EQ(items, expected) << "trial " << trial << ", " << n << " items, kind " << kind;
  }
}

}  // namespace
}  // namespace gpuspeech

