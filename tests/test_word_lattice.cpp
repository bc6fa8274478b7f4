// The word-lattice pass (common/search/word_lattice.h): its best path on
// hand-made records whose answer is known, against an exhaustive search of
// every path on random ones, and the acoustic costs the CPU searcher keeps
// for it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "common/model/ngram_model.h"
#include "common/search/cpu_searcher.h"
#include "common/search/lm_rescorer.h"
#include "common/search/word_lattice.h"
#include "tests/rescoring_test_util.h"
#include "tests/search_test_graphs.h"

namespace gpuspeech {
namespace {

// Senone log-likelihoods drawn uniformly from [-8, -1): the searches' scores
// in the tests that run a CpuSearcher with the pass.
testing::Scores uniform_scores(std::mt19937& rng, int frames, int senones) {
  testing::Scores sc(frames, senones);
  std::uniform_real_distribution<float> ll(-8.0f, -1.0f);
  for (float& x : sc.v) x = ll(rng);
  return sc;
}

// Vocabulary <s>, </s>, w1 .. w{words-1}; unigrams only, all equal.
std::shared_ptr<const NgramModel> uniform_unigrams(int words) {
  std::vector<std::string> vocab{"<s>", "</s>"};
  for (int w = 1; w < words; ++w) vocab.push_back("w" + std::to_string(w));
  NgramList uni;
  uni.order = 1;
  for (size_t w = 0; w < vocab.size(); ++w) {
    uni.words.push_back(static_cast<uint32_t>(w));
    uni.log10_prob.push_back(w == 0 ? -99.0f : -1.0f);
    uni.log10_backoff.push_back(0.0f);
  }
  return std::make_shared<const NgramModel>(NgramModel::build(vocab, {uni}, "uniform.arpa"));
}

// Vocabulary <s>, </s>, w1 .. w{words-1}; unigrams log10 -1 (<s> -99)
// with the back-offs given by id (0 elsewhere), and the bigrams listed
// (natural order, ids into that vocabulary).
struct Bigram {
  uint32_t first, second;
  float log10_prob;
};
std::shared_ptr<const NgramModel> bigram_lm(int words, const std::map<uint32_t, float>& backoffs,
                                            const std::vector<Bigram>& bigrams) {
  std::vector<std::string> vocab{"<s>", "</s>"};
  for (int w = 1; w < words; ++w) vocab.push_back("w" + std::to_string(w));
  NgramList uni, bi;
  uni.order = 1;
  bi.order = 2;
  for (size_t w = 0; w < vocab.size(); ++w) {
    uni.words.push_back(static_cast<uint32_t>(w));
    uni.log10_prob.push_back(w == 0 ? -99.0f : -1.0f);
    auto b = backoffs.find(static_cast<uint32_t>(w));
    uni.log10_backoff.push_back(b == backoffs.end() ? 0.0f : b->second);
  }
  for (const Bigram& g : bigrams) {
    bi.words.insert(bi.words.end(), {g.first, g.second});
    bi.log10_prob.push_back(g.log10_prob);
    bi.log10_backoff.push_back(0.0f);
  }
  return std::make_shared<const NgramModel>(NgramModel::build(vocab, {uni, bi}, "bigram.arpa"));
}

// Graph words w0 (a filler) .. w{words-1}, as the test graphs name them,
// and their ids in `lm` (-1 for the filler).
struct GraphWords {
  std::vector<std::string> spelling;
  std::vector<uint8_t> filler;
  std::vector<int> lm_id;
};
GraphWords graph_words(const NgramModel& lm, int words) {
  GraphWords g;
  for (int w = 0; w < words; ++w) {
    g.spelling.push_back("w" + std::to_string(w));
    g.filler.push_back(w == 0 ? 1 : 0);
    g.lm_id.push_back(w == 0 ? -1 : lm.word_id(g.spelling.back()));
  }
  return g;
}

std::vector<int32_t> words_of(const LatticePath& p) {
  std::vector<int32_t> out;
  for (const LatticeWord& w : p.words) out.push_back(w.word);
  return out;
}

// A random record tree as a search makes one (a record's predecessor ended
// earlier; steps of 1 to max_step frames, acoustic costs 5-30 a word), its
// ends (every record within two frames of the last, with a random tail),
// and for the references the lattice's nodes as the pass defines them.
struct RandomLattice {
  WordRecordStore records{1024};
  std::vector<LatticeEnd> ends;
  std::map<std::tuple<int, int, int>, float> node;  // (start, word, end) -> acoustic
  std::map<std::tuple<int, int, int>, float> tail;  // the end nodes' tail costs
};
RandomLattice random_lattice(std::mt19937& rng, int words, int n, int max_step) {
  RandomLattice l;
  WordRecordStore& rec = l.records;
  std::uniform_int_distribution<int> word(0, words - 1), step(1, max_step);
  std::uniform_real_distribution<float> ac(5.0f, 30.0f);
  for (int r = 0; r < n; ++r) {
    std::uniform_int_distribution<int> prev(-1, r - 1);
    const int32_t p = r == 0 ? -1 : prev(rng);
    const int32_t start = p >= 0 ? rec[p].frame : 0;
    const float before = p >= 0 ? rec[p].acoustic : 0.0f;
    rec.append(word(rng), start + step(rng), p, 0.0f, before + ac(rng));
  }
  int32_t last = 0;
  for (int32_t r = 0; r < n; ++r) last = std::max(last, rec[r].frame);
  for (int32_t r = 0; r < n; ++r)
    if (rec[r].frame >= last - 2) l.ends.push_back({r, ac(rng)});
  auto key_of = [&](int32_t r) {
    return std::make_tuple(rec[r].prev >= 0 ? rec[rec[r].prev].frame : 0, rec[r].word,
                           rec[r].frame);
  };
  for (int32_t r = 0; r < n; ++r) {
    const float a = rec[r].acoustic - (rec[r].prev >= 0 ? rec[rec[r].prev].acoustic : 0.0f);
    auto [it, inserted] = l.node.emplace(key_of(r), a);
    if (!inserted) it->second = std::min(it->second, a);
  }
  for (const LatticeEnd& e : l.ends) {
    auto [it, inserted] = l.tail.emplace(key_of(e.record), e.tail_acoustic);
    if (!inserted) it->second = std::min(it->second, e.tail_acoustic);
  }
  return l;
}

// Two paths the search kept, w1 w2 and w3 w4, over frames 0-10-20: the
// lattice may join w3 to w2, which no path of the search did.
TEST(WordLattice, JoinsSegmentsOfDifferentPaths) {
  auto lm = uniform_unigrams(5);
  const GraphWords g = graph_words(*lm, 5);
  WordRecordStore rec(64);
  const int32_t a1 = rec.append(1, 10, -1, 0.0f, 100.0f);
  const int32_t a2 = rec.append(2, 20, a1, 0.0f, 200.0f);  // w2: 100
  const int32_t b1 = rec.append(3, 10, -1, 0.0f, 90.0f);   // w3: 90
  const int32_t b2 = rec.append(4, 20, b1, 0.0f, 210.0f);  // w4: 120
  LatticeOptions o;
  o.language_weight = 2.0f;
  const LatticePath p = lattice_best_path(rec, {{a2, 5.0f}, {b2, 5.0f}}, *lm, g.lm_id, g.spelling,
                                          g.filler, o);
  ASSERT_TRUE(p.found);
  EXPECT_EQ(words_of(p), (std::vector<int32_t>{3, 2}));
  ASSERT_EQ(p.words.size(), 2u);
  EXPECT_EQ(p.words[0].start, 0);
  EXPECT_EQ(p.words[0].end, 10);
  EXPECT_EQ(p.words[1].start, 10);
  EXPECT_EQ(p.words[1].end, 20);
  EXPECT_FLOAT_EQ(p.words[1].acoustic, 100.0f);
  // Two words and </s>, each -lw ln(0.1), two word insertion penalties.
  const double lang = 3 * o.language_weight * std::log(10.0) - 2 * std::log(0.65);
  EXPECT_NEAR(p.cost, 90.0 + 100.0 + 5.0 + lang, 1e-3);
  EXPECT_EQ(p.nodes, 4);
  EXPECT_EQ(p.nodes_used, 4);
}

// The same records under a bigram LM that makes w3 -> w2 unlikely: a low
// weight keeps the acoustically best join, a high one the LM's choice.
TEST(WordLattice, TheLanguageWeightTradesAcousticsForTheLm) {
  // After w3, backed-off words are rare; w3 w4 is likely.
  auto lm = bigram_lm(5, {{4, -3.0f}}, {{4, 5, -0.1f}});
  const GraphWords g = graph_words(*lm, 5);
  WordRecordStore rec(64);
  const int32_t a1 = rec.append(1, 10, -1, 0.0f, 100.0f);
  const int32_t a2 = rec.append(2, 20, a1, 0.0f, 200.0f);
  const int32_t b1 = rec.append(3, 10, -1, 0.0f, 90.0f);
  const int32_t b2 = rec.append(4, 20, b1, 0.0f, 210.0f);
  const std::vector<LatticeEnd> ends{{a2, 0.0f}, {b2, 0.0f}};
  LatticeOptions o;
  // log10 P of the paths, </s> included: w1 w2 -3, w3 w2 -6 (the back-off
  // after w3), w3 w4 -2.1, w1 w4 -3; acoustics 200, 190, 210, 220. At
  // weight lw a path costs its acoustics + lw ln 10 (-log10 P) (+ the same
  // two insertion penalties).
  o.language_weight = 0.5f;  // 203.5, 196.9, 212.4, 223.5: w3 w2
  EXPECT_EQ(words_of(lattice_best_path(rec, ends, *lm, g.lm_id, g.spelling, g.filler, o)),
            (std::vector<int32_t>{3, 2}));
  o.language_weight = 2.0f;  // 213.8, 217.6, 219.7, 233.8: w1 w2
  EXPECT_EQ(words_of(lattice_best_path(rec, ends, *lm, g.lm_id, g.spelling, g.filler, o)),
            (std::vector<int32_t>{1, 2}));
  o.language_weight = 0.5f;
  // Only w4's path may end the utterance: w2's frames cannot be the end.
  EXPECT_EQ(words_of(lattice_best_path(rec, {{b2, 0.0f}}, *lm, g.lm_id, g.spelling, g.filler, o)),
            (std::vector<int32_t>{3, 4}));
}

// Random record trees (as a search makes them: a record's predecessor
// ended earlier) and random trigram LMs: the pass with room for every
// history equals an exhaustive walk over every path of the lattice.
TEST(WordLattice, EqualsAnExhaustiveSearchOnRandomLattices) {
  std::mt19937 rng(7);
  const int words = 5;  // w0 the filler
  int joined = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const testing::LmPair lms = testing::random_lm_pair(rng, words, 0.7, 0.5, 0.5);
    const NgramModel& lm = *lms.full;
    const GraphWords g = graph_words(lm, words);
    const RandomLattice l = random_lattice(rng, words, 14, 4);
    const WordRecordStore& rec = l.records;
    const std::vector<LatticeEnd>& ends = l.ends;
    LatticeOptions o;
    o.language_weight = 1.5f;
    o.max_histories = 4096;
    const LatticePath got = lattice_best_path(rec, ends, lm, g.lm_id, g.spelling, g.filler, o);

    // The reference: every path through the nodes walked.
    const double lw = o.language_weight;
    auto lm_cost = [&](const std::vector<int>& h, int w) {
      const size_t from = h.size() > 2 ? h.size() - 2 : 0;
      return -lw * lm.score_ln(h.data() + from, h.size() - from, w);
    };
    double best = std::numeric_limits<double>::infinity();
    std::vector<int32_t> best_words, path;
    std::function<void(int, double, std::vector<int>&)> walk = [&](int at, double cost,
                                                                   std::vector<int>& hist) {
      for (const auto& [k, a] : l.node) {
        const auto [s, w, e] = k;
        if (s != at) continue;
        double c = cost + a;
        const bool filler = g.filler[static_cast<size_t>(w)] != 0;
        if (filler) {
          c += -std::log(static_cast<double>(o.filler_prob));
        } else {
          c += lm_cost(hist, g.lm_id[static_cast<size_t>(w)]) -
               std::log(static_cast<double>(o.word_insertion_penalty));
          hist.push_back(g.lm_id[static_cast<size_t>(w)]);
        }
        path.push_back(w);
        auto t = l.tail.find(k);
        if (t != l.tail.end()) {
          const double total = c + t->second + lm_cost(hist, lm.word_id("</s>"));
          if (total < best) {
            best = total;
            best_words = path;
          }
        }
        walk(e, c, hist);
        path.pop_back();
        if (!filler) hist.pop_back();
      }
    };
    std::vector<int> start{lm.word_id("<s>")};
    walk(0, 0.0, start);

    const std::string what = "trial " + std::to_string(trial);
    ASSERT_EQ(got.found, std::isfinite(best)) << what;
    if (!got.found) continue;
    EXPECT_NEAR(got.cost, best, 1e-3 * std::max(1.0, std::fabs(best))) << what;
    EXPECT_EQ(words_of(got), best_words) << what;
    // Teeth: the best path is often not a chain of the records.
    bool is_chain = false;
    for (const LatticeEnd& e : ends) {
      std::vector<int32_t> chain;
      for (int32_t r : rec.chain(e.record)) chain.push_back(rec[r].word);
      if (chain == best_words) is_chain = true;
    }
    if (!is_chain) ++joined;
  }
  EXPECT_GT(joined, 5);
}

// With few histories kept per boundary (max_histories 1-3), against a
// plain reference of the rule: at each boundary every history's cheapest
// arriving path, of those the max_histories cheapest extended. The pass
// leaves out early the paths that cannot be among them; the result must
// not change.
TEST(WordLattice, KeepsTheCheapestHistoriesPerBoundary) {
  std::mt19937 rng(11);
  const int words = 6;  // w0 the filler
  int bound_binds = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const testing::LmPair lms = testing::random_lm_pair(rng, words, 0.7, 0.5, 0.5);
    const NgramModel& lm = *lms.full;
    const GraphWords g = graph_words(lm, words);
    const RandomLattice l = random_lattice(rng, words, 60, 3);
    LatticeOptions o;
    o.language_weight = 1.5f;
    o.max_histories = 1 + trial % 3;
    const LatticePath got =
        lattice_best_path(l.records, l.ends, lm, g.lm_id, g.spelling, g.filler, o);

    const double lw = o.language_weight;
    const size_t keep = static_cast<size_t>(lm.order() - 1);
    auto lm_cost = [&](const std::vector<int>& h, int w) {
      return -lw * lm.score_ln(h.data(), h.size(), w);
    };
    struct Path {
      double cost;
      std::vector<int32_t> words;
    };
    std::map<int, std::map<std::vector<int>, Path>> arrivals;  // boundary -> history -> best
    std::vector<int> start_hist;
    if (keep > 0) start_hist.push_back(lm.word_id("<s>"));
    arrivals[0][start_hist] = Path{0.0, {}};
    double best = std::numeric_limits<double>::infinity();
    std::vector<int32_t> best_words;
    for (auto b = arrivals.begin(); b != arrivals.end(); b = arrivals.erase(b)) {
      std::vector<std::pair<double, const std::pair<const std::vector<int>, Path>*>> here;
      for (const auto& entry : b->second) here.push_back({entry.second.cost, &entry});
      std::sort(here.begin(), here.end(),
                [](const auto& x, const auto& y) { return x.first < y.first; });
      if (here.size() > static_cast<size_t>(o.max_histories)) {
        here.resize(static_cast<size_t>(o.max_histories));
        ++bound_binds;
      }
      for (const auto& [k, a] : l.node) {
        const auto [s, w, e] = k;
        if (s != b->first) continue;
        for (const auto& [cost, entry] : here) {
          std::vector<int> hist = entry->first;
          double c = cost + a;
          if (g.filler[static_cast<size_t>(w)] != 0) {
            c += -std::log(static_cast<double>(o.filler_prob));
          } else {
            c += lm_cost(hist, g.lm_id[static_cast<size_t>(w)]) -
                 std::log(static_cast<double>(o.word_insertion_penalty));
            hist.push_back(g.lm_id[static_cast<size_t>(w)]);
            if (hist.size() > keep) hist.erase(hist.begin(), hist.end() - static_cast<long>(keep));
          }
          std::vector<int32_t> path = entry->second.words;
          path.push_back(w);
          auto t = l.tail.find(k);
          if (t != l.tail.end()) {
            const double total = c + t->second + lm_cost(hist, lm.word_id("</s>"));
            if (total < best) {
              best = total;
              best_words = path;
            }
          }
          auto [it, inserted] = arrivals[e].emplace(hist, Path{c, path});
          if (!inserted && c < it->second.cost) it->second = Path{c, path};
        }
      }
    }
    const std::string what = "trial " + std::to_string(trial);
    ASSERT_EQ(got.found, std::isfinite(best)) << what;
    if (!got.found) continue;
    EXPECT_NEAR(got.cost, best, 1e-3 * std::max(1.0, std::fabs(best))) << what;
    EXPECT_EQ(words_of(got), best_words) << what;
  }
  EXPECT_GT(bound_binds, 20);  // the limit decided something
}

// The pass looks first only for paths no costlier than the ends' own
// record chains (the search's result is one). When the history bound has
// dropped every such path, it must still give the best path the bound
// leaves, as without that first look, not nothing.
TEST(WordLattice, GivesWhatTheHistoryBoundLeavesWhenItDropsTheChains) {
  // w1 w3 unlikely, w2 w3 likely.
  auto lm = bigram_lm(4, {}, {{2, 4, -3.0f}, {3, 4, -0.1f}});
  const GraphWords g = graph_words(*lm, 4);
  WordRecordStore rec(64);
  rec.append(1, 10, -1, 0.0f, 10.0f);                     // w1, frames 0-10: 10
  const int32_t b = rec.append(2, 10, -1, 0.0f, 12.0f);   // w2, frames 0-10: 12
  const int32_t c = rec.append(3, 20, b, 0.0f, 22.0f);    // w3 after w2, frames 10-20: 10
  LatticeOptions o;
  o.language_weight = 1.0f;
  // One history at boundary 10: w1's, the cheaper there; so w1 w3, dearer
  // than the record chain w2 w3 by 2 acoustic less 2.9 ln 10 of LM.
  o.max_histories = 1;
  const LatticePath one = lattice_best_path(rec, {{c, 0.0f}}, *lm, g.lm_id, g.spelling, g.filler, o);
  ASSERT_TRUE(one.found);
  EXPECT_EQ(words_of(one), (std::vector<int32_t>{1, 3}));
  const double ln10 = std::log(10.0), wip = -std::log(0.65);
  EXPECT_NEAR(one.cost, 10 + ln10 + wip + 10 + 3 * ln10 + wip + ln10, 1e-3);
  o.max_histories = 2;
  const LatticePath two = lattice_best_path(rec, {{c, 0.0f}}, *lm, g.lm_id, g.spelling, g.filler, o);
  ASSERT_TRUE(two.found);
  EXPECT_EQ(words_of(two), (std::vector<int32_t>{2, 3}));
  EXPECT_NEAR(two.cost, 12 + ln10 + wip + 10 + 0.1 * ln10 + wip + ln10, 1e-3);
}

TEST(WordLattice, RejectsBadOptions) {
  LatticeOptions o;
  o.language_weight = -1.0f;
  EXPECT_THROW(o.validate(), std::invalid_argument);
  o = LatticeOptions{};
  o.silence_prob = 0.0f;
  EXPECT_THROW(o.validate(), std::invalid_argument);
  o = LatticeOptions{};
  o.max_histories = 0;
  EXPECT_THROW(o.validate(), std::invalid_argument);
  SearchOptions s;
  s.lattice.max_records = 2;
  EXPECT_THROW(s.validate(), std::invalid_argument);
}

// The CPU searcher's acoustic costs: on a graph whose arcs cost nothing,
// with LMs that agree (no rescoring correction), a path's cost is its
// acoustic cost, record by record; with arc costs, the acoustic part is
// what is left without them.
TEST(WordLattice, CpuSearcherKeepsAcousticCostsApart) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 6; ++trial) {
    SearchGraph graph = testing::random_rescoring_graph(rng, 40, 12, 5, 0.0f);
    const bool free_arcs = trial % 2 == 0;
    if (free_arcs) std::fill(graph.arc_cost.begin(), graph.arc_cost.end(), 0.0f);
    const testing::LmPair lms = testing::random_lm_pair(rng, 5);
    LmRescorer r(lms.full, lms.full, graph.words, graph.word_is_filler, 2.0f);
    SearchOptions o;
    o.lattice.language_weight = 2.0f;
    o.max_active = 200;
    CpuSearcher s(graph, o, &r);
    const testing::Scores sc = uniform_scores(rng, 30, graph.num_senones);
    testing::decode(s, sc);
    const WordRecordStore& rec = s.word_records();
    ASSERT_GT(rec.size(), 0) << "trial " << trial;
    for (int32_t i = 0; i < rec.size(); ++i) {
      if (free_arcs) {
        EXPECT_NEAR(rec[i].acoustic, rec[i].cost, 1e-3f * std::max(1.0f, rec[i].cost))
            << "trial " << trial << " record " << i;
      } else {
        EXPECT_LE(rec[i].acoustic, rec[i].cost + 1e-3f) << "trial " << trial << " record " << i;
      }
      if (rec[i].frame > 0) {
        EXPECT_GT(rec[i].acoustic, 0.0f) << "trial " << trial << " record " << i;
      }
    }
  }
}

// Past lattice.max_records the utterance's records are collected as
// without the pass, and the result is the search's own best path.
TEST(WordLattice, GivesUpPastItsRecordLimit) {
  std::mt19937 rng(5);
  const SearchGraph graph = testing::random_rescoring_graph(rng, 60, 12, 5, 0.0f);
  const testing::LmPair lms = testing::random_lm_pair(rng, 5);
  const testing::Scores sc = uniform_scores(rng, 200, graph.num_senones);
  SearchOptions plain;
  plain.max_word_records = 16;
  LmRescorer r0(lms.full, lms.pruned, graph.words, graph.word_is_filler, 2.0f);
  CpuSearcher viterbi(graph, plain, &r0);
  const Hypothesis want = testing::decode(viterbi, sc);
  ASSERT_GT(viterbi.stats().collections, 0);
  SearchOptions capped = plain;
  capped.lattice.language_weight = 4.0f;
  capped.lattice.max_records = 16;
  LmRescorer r1(lms.full, lms.pruned, graph.words, graph.word_is_filler, 2.0f);
  CpuSearcher lattice(graph, capped, &r1);
  const Hypothesis got = testing::decode(lattice, sc);
  EXPECT_GT(lattice.stats().collections, 0);
  EXPECT_EQ(got.text(), want.text());
  // With room for every record the pass runs and keeps them all.
  capped.lattice.max_records = 1 << 20;
  LmRescorer r2(lms.full, lms.pruned, graph.words, graph.word_is_filler, 2.0f);
  CpuSearcher kept(graph, capped, &r2);
  testing::decode(kept, sc);
  EXPECT_EQ(kept.stats().collections, 0);
  EXPECT_GT(kept.word_records().size(), 16);
}

// With the lattice result off, best() gives the search's own path (the
// records kept all the same); turned on again, best() on the same
// utterance gives the pass's words, as a searcher that had it on all along.
// Two-pass fMLLR takes pass 1 so, and the lattice's words where the final
// pass would only decode the same features again.
TEST(WordLattice, TheResultCanBeTakenWithoutThePassThenWithIt) {
  std::mt19937 rng(7);
  int differ = 0;
  for (int trial = 0; trial < 12; ++trial) {
    // Word arcs dear enough that no rescoring makes an epsilon cycle
    // negative.
    const SearchGraph graph = testing::random_rescoring_graph(rng, 40, 12, 5, 0.0f, 0, 0, 6.0f);
    const testing::LmPair lms = testing::random_lm_pair(rng, 5);
    const testing::Scores sc = uniform_scores(rng, 60, graph.num_senones);
    SearchOptions plain;
    plain.max_active = 200;
    SearchOptions with_lattice = plain;
    with_lattice.lattice.language_weight = 4.0f;
    LmRescorer r0(lms.full, lms.pruned, graph.words, graph.word_is_filler, 2.0f);
    LmRescorer r1(lms.full, lms.pruned, graph.words, graph.word_is_filler, 2.0f);
    LmRescorer r2(lms.full, lms.pruned, graph.words, graph.word_is_filler, 2.0f);
    CpuSearcher viterbi(graph, plain, &r0), lattice(graph, with_lattice, &r1),
        later(graph, with_lattice, &r2);
    const Hypothesis want_viterbi = testing::decode(viterbi, sc);
    const Hypothesis want_lattice = testing::decode(lattice, sc);
    const std::string what = "trial " + std::to_string(trial);
    later.set_lattice_result(false);
    const Hypothesis first = testing::decode(later, sc);
    EXPECT_EQ(first.text(), want_viterbi.text()) << what;
    EXPECT_EQ(first.cost, want_viterbi.cost) << what;
    later.set_lattice_result(true);
    const Hypothesis second = later.best();
    EXPECT_EQ(second.text(), want_lattice.text()) << what;
    ASSERT_EQ(second.words.size(), want_lattice.words.size()) << what;
    for (size_t k = 0; k < second.words.size(); ++k) {
      EXPECT_EQ(second.words[k].start_frame, want_lattice.words[k].start_frame) << what;
      EXPECT_EQ(second.words[k].end_frame, want_lattice.words[k].end_frame) << what;
    }
    differ += want_lattice.text() != want_viterbi.text();
  }
  // The trials must include some where the pass changes the words.
  EXPECT_GT(differ, 0);
}

}  // namespace
}  // namespace gpuspeech
