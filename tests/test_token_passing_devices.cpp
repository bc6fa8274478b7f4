// The CUDA searcher against the CPU reference (suite 'backend'): identical
// live tokens, partial results, best paths (words, frames, costs bit for bit)
// and n-best on random graphs with ties, heavy fan-out, pruning that bites
// and a tiny word-record buffer. Skipped without a usable CUDA device unless
// GPUSPEECH_REQUIRE_BACKENDS names cuda.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/search/cpu_searcher.h"
#include "common/search/lm_rescorer.h"
#include "tests/rescoring_test_util.h"
#include "tests/search_test_graphs.h"
#include "tests/test_backends.h"

#ifdef GPUSPEECH_HAVE_CUDA
#include <cuda_runtime.h>

#include <memory>
#include <functional>
#include <stdexcept>
#include <thread>

#include "common/engine/fiber_pool.h"
#include "common/search/cuda_round_batcher.h"
#include "common/search/cuda_searcher.h"
#endif

namespace gpuspeech {
namespace {

using testing::decode;
using testing::make_word_loop;
using testing::random_graph;
using testing::random_scores;
using testing::Scores;
using testing::WordLoop;

// ---------------------------------------------------------------------------
// CUDA against the CPU reference.

#ifdef GPUSPEECH_HAVE_CUDA
bool cuda_usable() {
  for (const std::string& b : testing::backends_under_test())
    if (b == "cuda") return true;
  return false;
}

// (state, cost, LM history) of every live token, by state; the history
// by its words (empty without rescoring), since the ids are a searcher's
// own (the device's table when word ends are rescored there). Record
// indices are left out: the device numbers a frame's records in arrival
// order; the words they stand for are compared through partial() and
// best().
std::vector<std::tuple<int32_t, float, std::string>> canonical_live(Searcher& s) {
  std::vector<std::tuple<int32_t, float, std::string>> out;
  for (const SearchToken& t : s.live_tokens()) {
    std::string words;
    for (const std::string& w : s.history_words(t.history)) words += w + " ";
    out.emplace_back(t.state, t.cost, words);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Whether word ends should be rescored on the device in this run: by
// default, not with GPUSPEECH_CUDA_RESCORE=host; it needs the fused round
// kernel and, batched, the cluster kernel.
bool device_rescoring_expected() {
  const char* rescore = std::getenv("GPUSPEECH_CUDA_RESCORE");
  const char* closure = std::getenv("GPUSPEECH_CUDA_CLOSURE");
  const char* batch = std::getenv("GPUSPEECH_CUDA_BATCH");
  const bool batched = batch != nullptr && std::string(batch) == "1";
  if (rescore != nullptr && std::string(rescore) == "host") return false;
  if (closure != nullptr && std::string(closure) == "passes") return false;
  if (batched) return CudaRoundBatcher::for_device(0)->cluster() > 0;
  return true;
}

void expect_same_hypothesis(const Hypothesis& a, const Hypothesis& b, const std::string& what) {
  EXPECT_EQ(a.text(), b.text()) << what;
  EXPECT_EQ(a.cost, b.cost) << what;  // bit for bit
  EXPECT_EQ(a.final_state, b.final_state) << what;
  EXPECT_EQ(a.stable_words, b.stable_words) << what;
  EXPECT_EQ(a.trailing_silence_frames, b.trailing_silence_frames) << what;
  // Posterior sums over live tokens, which the two hand over in different
  // orders: equal up to float rounding.
  EXPECT_NEAR(a.confidence, b.confidence, 1e-5) << what;
  ASSERT_EQ(a.words.size(), b.words.size()) << what;
  for (size_t i = 0; i < a.words.size(); ++i) {
    EXPECT_EQ(a.words[i].start_frame, b.words[i].start_frame) << what << " word " << i;
    EXPECT_EQ(a.words[i].end_frame, b.words[i].end_frame) << what << " word " << i;
    EXPECT_EQ(a.words[i].cost, b.words[i].cost) << what << " word " << i;
    EXPECT_NEAR(a.words[i].confidence, b.words[i].confidence, 1e-5) << what << " word " << i;
  }
}

// Both searchers through `sc` in blocks of `block` frames: the same live
// tokens and partial result after every block, then the same best path.
void expect_same_search(Searcher& cpu, Searcher& gpu, const Scores& sc, int block,
                        const std::string& what) {
  for (int f0 = 0; f0 < sc.frames; f0 += block) {
    const int n = std::min(block, sc.frames - f0);
    cpu.advance(sc.v.data() + size_t(f0) * sc.senones, n, sc.senones);
    gpu.advance(sc.v.data() + size_t(f0) * sc.senones, n, sc.senones);
    EXPECT_EQ(canonical_live(cpu), canonical_live(gpu)) << what << " frame " << f0 + n;
    expect_same_hypothesis(cpu.partial(), gpu.partial(), what + " partial");
  }
  expect_same_hypothesis(cpu.best(), gpu.best(), what);
}

void expect_same_nbest(Searcher& cpu, Searcher& gpu, int n, const std::string& what) {
  const auto nc = cpu.nbest(n), ng = gpu.nbest(n);
  EXPECT_EQ(nc.size(), ng.size()) << what;
  for (size_t i = 0; i < std::min(nc.size(), ng.size()); ++i)
    expect_same_hypothesis(nc[i], ng[i], what + " nbest");
}

// The random trials' options: wider beams trial by trial, max-active that
// bites (uncapped every fourth trial), and a record store small enough to
// be collected every other trial.
SearchOptions random_trial_options(int trial) {
  SearchOptions o;
  o.beam = 8.0f + trial;
  o.word_end_beam = 6.0f + trial / 2.0f;
  o.max_active = trial % 4 == 0 ? 1 << 30 : 40 + 30 * trial;
  o.histogram_bins = 64;
  o.max_word_records = trial % 2 == 0 ? 64 : 1 << 20;
  return o;
}

// The utterance's word records as (frame, word, cost, acoustic), sorted (the
// device numbers a frame's records in arrival order).
std::vector<std::tuple<int32_t, int32_t, float, float>> canonical_records(const Searcher& s) {
  std::vector<std::tuple<int32_t, int32_t, float, float>> out;
  const WordRecordStore& r = s.word_records();
  for (int64_t i = 0; i < r.size(); ++i) {
    const WordRecord& w = r[static_cast<int32_t>(i)];
    out.emplace_back(w.frame, w.word, w.cost, w.acoustic);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Both searchers' word records, as multisets: the same records, with the
// same costs and acoustic parts, bit for bit.
void expect_same_records(const Searcher& cpu, const Searcher& gpu, const std::string& what) {
  const auto rec_cpu = canonical_records(cpu), rec_gpu = canonical_records(gpu);
  EXPECT_EQ(rec_cpu.size(), rec_gpu.size()) << what;
  if (rec_cpu != rec_gpu) {  // the first difference, (frame, word, cost, acoustic) each
    size_t i = 0;
    while (i < rec_cpu.size() && i < rec_gpu.size() && rec_cpu[i] == rec_gpu[i]) ++i;
    auto show = [](const std::vector<std::tuple<int32_t, int32_t, float, float>>& v, size_t i) {
      if (i >= v.size()) return std::string("(none)");
      char b[128];
      std::snprintf(b, sizeof b, "(%d, %d, %.9g, %.9g)", std::get<0>(v[i]), std::get<1>(v[i]),
                    std::get<2>(v[i]), std::get<3>(v[i]));
      return std::string(b);
    };
    ADD_FAILURE() << what << ": records differ at " << i << " of " << rec_cpu.size() << " (cuda "
                  << rec_gpu.size() << "): cpu " << show(rec_cpu, i) << ", cuda " << show(rec_gpu, i);
  }
}

// Random searches without rescoring, `trials` of them from `seed`, each
// compared with the CPU's after every block of 15 frames.
void plain_trials(uint32_t seed, int trials) {
  std::mt19937 rng(seed);
  for (int trial = 0; trial < trials; ++trial) {
    // Quantised costs and scores make ties common; heavy states exercise
    // the grid-wide expansion; tight beams and caps make pruning bite.
    const float quantum = trial % 2 == 0 ? 0.25f : 0.0f;
    const SearchGraph g =
        random_graph(rng, 300 + 200 * trial, 40, 30, quantum, trial % 3 == 0 ? 3 : 0, 3000);
    const Scores sc = random_scores(rng, 60, 40, quantum);
    const SearchOptions o = random_trial_options(trial);
    CpuSearcher cpu(g, o);
    CudaSearcher gpu(g, o);
    cpu.reset();
    gpu.reset();
    const std::string what = "seed " + std::to_string(seed) + " trial " + std::to_string(trial);
    expect_same_search(cpu, gpu, sc, 15, what);
    expect_same_nbest(cpu, gpu, 4, what);
  }
}

TEST(TokenPassingCuda, IdenticalToCpuOnRandomGraphs) {
  if (!cuda_usable()) GTEST_SKIP() << "no usable CUDA device";
  plain_trials(99, 12);
}

// One random rescoring search's graph, LM pair, scores and options, drawn
// in that order: quantised costs and scores on even trials, heavy states
// on every third, 1-4 LM histories a state.
struct RescoringTrial {
  SearchGraph graph;
  testing::LmPair lms;
  Scores scores;
  SearchOptions options;
};
RescoringTrial rescoring_trial(std::mt19937& rng, int trial) {
  const float quantum = trial % 2 == 0 ? 0.25f : 0.0f;
  const int words = 12;
  SearchGraph g = testing::random_rescoring_graph(rng, 300 + 150 * trial, 40, words, quantum,
                                                  trial % 3 == 0 ? 3 : 0, 2000);
  testing::LmPair lms = testing::random_lm_pair(rng, words);
  Scores sc = random_scores(rng, 60, 40, quantum);
  RescoringTrial t{std::move(g), std::move(lms), std::move(sc), random_trial_options(trial)};
  t.options.lm_histories = 1 + trial % 4;
  return t;
}

// Word-end rescoring (token_passing.h): the device's word-end events go to
// the host rescorer and back; the result must be the CPU's, tokens with
// their LM histories included, for K = 1 .. 4 slots, with ties, heavy
// states, pruning that bites and garbage collection. Random searches,
// compared after every block of 15 frames; returns the CUDA searchers'
// statistics summed over the trials. `long_chains`, if given, is set when
// a searcher chained several frames a launch with the device's rescoring
// (so that frames ended inside chains).
SearchStats rescoring_trials(uint32_t seed, int trials, bool* long_chains = nullptr) {
  std::mt19937 rng(seed);
  SearchStats sum;
  for (int trial = 0; trial < trials; ++trial) {
    const RescoringTrial t = rescoring_trial(rng, trial);
    const SearchGraph& g = t.graph;
    const testing::LmPair& lms = t.lms;
    const Scores& sc = t.scores;
    SearchOptions o = t.options;
    // The largest histogram the device takes: beside the batched lanes'
    // static shared memory it needs the kernel's opt-in to more.
    if (trial % 4 == 3) o.histogram_bins = 8192;
    // Each searcher its own rescorer (each resets its history table).
    LmRescorer rc(lms.full, lms.pruned, g.words, g.word_is_filler, 0.1f);
    LmRescorer rg(lms.full, lms.pruned, g.words, g.word_is_filler, 0.1f);
    CpuSearcher cpu(g, o, &rc);
    CudaSearcher gpu(g, o, 0, &rg);
    cpu.reset();
    gpu.reset();
    const std::string what =
        "rescoring seed " + std::to_string(seed) + " trial " + std::to_string(trial);
    EXPECT_EQ(gpu.rescores_on_device(), device_rescoring_expected()) << what;
    expect_same_search(cpu, gpu, sc, 15, what);
    // Records no live path reaches too (search::offer_in_beam), where
    // neither store was collected.
    if (cpu.stats().collections == 0 && gpu.stats().collections == 0) expect_same_records(cpu, gpu, what);
    EXPECT_GT(cpu.stats().word_end_events, 0) << what;
    if (gpu.rescores_on_device()) {
      // The events the device rescored are the CPU's, round for round (a
      // frame run again counts its last attempt only).
      EXPECT_EQ(cpu.stats().word_end_events, gpu.stats().word_end_events) << what;
      EXPECT_EQ(cpu.stats().rescore_rounds, gpu.stats().rescore_rounds) << what;
    } else {
      EXPECT_EQ(rc.num_histories(), rg.num_histories()) << what;
    }
    expect_same_nbest(cpu, gpu, 4, what);
    sum.chained_frames += gpu.stats().chained_frames;
    sum.chained_frames_ended += gpu.stats().chained_frames_ended;
    // Chains of several frames end frames inside the launch only when the
    // device rescores (the host's rescoring needs its round trips).
    if (!gpu.rescores_on_device() || gpu.max_chained_frames() < 2) {
      EXPECT_EQ(gpu.stats().chained_frames_ended, 0) << what;
    } else if (long_chains != nullptr) {
      *long_chains = true;
    }
    sum.rescore_rounds += gpu.stats().rescore_rounds;
    sum.rescore_rounds_sorted += gpu.stats().rescore_rounds_sorted;
    sum.frames_rerun += gpu.stats().frames_rerun;
    sum.collections += gpu.stats().collections;
  }
  return sum;
}

// Chaining (a frame begun on the device behind the previous frame's offer
// round) needs the fused round kernel, which every current NVIDIA GPU
// allows, unless the environment turns it off.
bool chaining_expected() {
  const char* closure = std::getenv("GPUSPEECH_CUDA_CLOSURE");
  const char* chain = std::getenv("GPUSPEECH_CUDA_CHAIN");
  return (closure == nullptr || std::string(closure) != "passes") &&
         (chain == nullptr || std::string(chain) != "0");
}

TEST(TokenPassingCuda, IdenticalToCpuWithRescoring) {
  if (!cuda_usable()) GTEST_SKIP() << "no usable CUDA device";
  bool long_chains = false;
  const SearchStats st = rescoring_trials(314, 12, &long_chains);
  EXPECT_GT(st.collections, 0);  // the record store filled (max_word_records 64)
  if (chaining_expected()) {
    EXPECT_GT(st.chained_frames, 0);
  }
  // Chains of several frames (a stream alone by default, the *_chain3
  // entries batched too) with the device's rescoring end frames inside
  // the launch.
  if (long_chains) {
    EXPECT_GT(st.chained_frames_ended, 0);
  }
  const char* chain = std::getenv("GPUSPEECH_CUDA_CHAIN");
  if (chain != nullptr && std::atoi(chain) >= 2 && device_rescoring_expected()) {
    EXPECT_TRUE(long_chains);
  }
  // Batched lanes of the cluster kernel hand over their events in the
  // host's order, but for rounds with more than the device orders
  // (kPlacedEvents); the cooperative lanes kernel (GPUSPEECH_LANES_CLUSTER=0,
  // devices below sm_90) and the single-stream path leave it to the host.
  const char* batch = std::getenv("GPUSPEECH_CUDA_BATCH");
  std::printf("word-end rounds: %lld, %lld sorted on the host\n",
              static_cast<long long>(st.rescore_rounds),
              static_cast<long long>(st.rescore_rounds_sorted));
  EXPECT_GT(st.rescore_rounds, 0);
  if (batch != nullptr && std::string(batch) == "1" && CudaRoundBatcher::totals().cluster > 0) {
    EXPECT_LT(st.rescore_rounds_sorted * 10, st.rescore_rounds);
  }
}

// The same with device buffers (word records, word-end events) so small
// that frames overflow them and run again; the reruns must change nothing.
TEST(TokenPassingCuda, RescoringAgreesWhenBuffersOverflow) {
  if (!cuda_usable()) GTEST_SKIP() << "no usable CUDA device";
  ::setenv("GPUSPEECH_CUDA_TINY_BUFFERS", "1", 1);
  bool long_chains = false;
  const SearchStats st = rescoring_trials(2718, 8, &long_chains);
  ::unsetenv("GPUSPEECH_CUDA_TINY_BUFFERS");
  EXPECT_GT(st.frames_rerun, 0);
  if (chaining_expected()) {
    EXPECT_GT(st.chained_frames, 0);
  }
  if (long_chains) {
    EXPECT_GT(st.chained_frames_ended, 0);
  }
}

// A random graph with epsilon chains of 14 states, some behind word ends,
// so both emitting and offer rounds need many closure passes.
SearchGraph deep_closure_graph(std::mt19937& rng, int senones, int words) {
  const int base = 300, chains = 12, chain_len = 14;
  const int n = base + chains * chain_len;
  std::vector<std::string> names;
  for (int w = 0; w < words; ++w) names.push_back("w" + std::to_string(w));
  testing::GraphBuilder b(n, senones, names);
  std::uniform_int_distribution<int> any(0, n - 1), in_base(0, base - 1), senone(1, senones),
      word(1, words), degree(1, 3);
  std::uniform_real_distribution<float> cost(0.05f, 2.0f), unit(0.0f, 1.0f);
  for (int s = 0; s < base; ++s) {
    for (int k = degree(rng); k > 0; --k) b.arc(s, in_base(rng), senone(rng), 0, cost(rng));
    if (unit(rng) < 0.3f) b.arc(s, any(rng), 0, word(rng), 1.0f + cost(rng));
    if (unit(rng) < 0.2f) b.arc(s, in_base(rng), 0, 0, cost(rng));
    if (unit(rng) < 0.2f) b.final(s, cost(rng));
  }
  for (int c = 0; c < chains; ++c) {
    const int first = base + c * chain_len;
    b.arc(in_base(rng), first, 0, 0, 0.1f);  // into the chain without a word
    for (int k = 0; k < chain_len; ++k) {
      const int s = first + k;
      b.arc(s, s, senone(rng), 0, cost(rng));  // tokens may stay in the chain
      if (k + 1 < chain_len)
        b.arc(s, s + 1, 0, 0, 0.05f);
      else
        b.arc(s, in_base(rng), 0, word(rng), 1.0f + cost(rng));  // a word end after it
    }
  }
  b.filler(0);
  return b.build();
}

// Beams and a max-active for deep_closure_graph under which closures stay
// deep and pruning bites.
SearchOptions deep_closure_options() {
  SearchOptions o;
  o.beam = 14.0f;
  o.word_end_beam = 10.0f;
  o.max_active = 150;
  o.histogram_bins = 64;
  return o;
}

// Rescoring rounds whose closures are deeper than the device's pass batch
// (long epsilon chains, some behind word ends, so both emitting and offer
// rounds need many passes): the searcher continues such rounds with more
// passes and re-chooses its batch size as it goes (every 64 rounds, so
// the utterance is long); the result must still be the CPU's.
TEST(TokenPassingCuda, RescoringWithDeepClosuresAgrees) {
  if (!cuda_usable()) GTEST_SKIP() << "no usable CUDA device";
  std::mt19937 rng(77);
  const int senones = 30, words = 10;
  const SearchGraph g = deep_closure_graph(rng, senones, words);
  const testing::LmPair lms = testing::random_lm_pair(rng, words);
  const Scores sc = random_scores(rng, 400, senones, 0.0f);
  for (int k : {1, 3}) {
    SearchOptions o = deep_closure_options();
    o.lm_histories = k;
    LmRescorer rc(lms.full, lms.pruned, g.words, g.word_is_filler, 0.1f);
    LmRescorer rg(lms.full, lms.pruned, g.words, g.word_is_filler, 0.1f);
    CpuSearcher cpu(g, o, &rc);
    CudaSearcher gpu(g, o, 0, &rg);
    cpu.reset();
    gpu.reset();
    const std::string what = "deep closures, K " + std::to_string(k);
    expect_same_search(cpu, gpu, sc, 40, what);
    // The closures were deep enough to outlast the initial batch of 4.
    EXPECT_GT(cpu.stats().epsilon_passes, 6 * cpu.stats().frames) << what;
    EXPECT_GT(cpu.stats().rescore_rounds, 64) << what;
  }
}

// The word-lattice pass (docs/search.md): the device keeps each token's
// acoustic part apart as the CPU searcher does, so every record carries
// the same acoustic part, bit for bit, and the pass's final words are the
// same. Random rescoring searches with the pass on (as rescoring_trials,
// whose checks of live tokens, partial and final results all hold), the
// record store small enough to grow while the lattice keeps it whole, and
// on some trials a record limit low enough that the lattice is given up
// and the store collected; then the utterance's records compared as a
// multiset (the device numbers a frame's records in arrival order).
void lattice_trials(uint32_t seed, int trials) {
  std::mt19937 rng(seed);
  int lattice_results = 0;
  for (int trial = 0; trial < trials; ++trial) {
    const RescoringTrial t = rescoring_trial(rng, trial);
    const SearchGraph& g = t.graph;
    const testing::LmPair& lms = t.lms;
    const Scores& sc = t.scores;
    SearchOptions o = t.options;
    o.lattice.language_weight = 0.1f * (1.0f + static_cast<float>(trial % 3));
    const bool given_up = trial % 4 == 2;  // even: a store of 64 records, so it fills
    if (given_up) o.lattice.max_records = 16;
    LmRescorer rc(lms.full, lms.pruned, g.words, g.word_is_filler, 0.1f);
    LmRescorer rg(lms.full, lms.pruned, g.words, g.word_is_filler, 0.1f);
    CpuSearcher cpu(g, o, &rc);
    CudaSearcher gpu(g, o, 0, &rg);
    cpu.reset();
    gpu.reset();
    const std::string what = "lattice seed " + std::to_string(seed) + " trial " + std::to_string(trial);
    expect_same_search(cpu, gpu, sc, 15, what);
    // The result without the pass, then with it again, on the same
    // utterance (two-pass fMLLR's pass 1 takes them so).
    cpu.set_lattice_result(false);
    gpu.set_lattice_result(false);
    expect_same_hypothesis(cpu.best(), gpu.best(), what + " lattice result off");
    cpu.set_lattice_result(true);
    gpu.set_lattice_result(true);
    expect_same_hypothesis(cpu.best(), gpu.best(), what + " lattice result on again");
    const auto rec_gpu = canonical_records(gpu);
    expect_same_records(cpu, gpu, what);
    if (given_up) {
      EXPECT_GT(gpu.stats().collections, 0) << what;
    } else {
      // Kept whole: no record collected, and acoustic parts in them.
      EXPECT_EQ(gpu.stats().collections, 0) << what;
      EXPECT_GT(gpu.stats().lattice_nodes, 0) << what;
      bool any_acoustic = false;
      for (const auto& r : rec_gpu) any_acoustic = any_acoustic || std::get<3>(r) != 0.0f;
      EXPECT_TRUE(any_acoustic) << what;
      ++lattice_results;
    }
  }
  EXPECT_GT(lattice_results, 0);
}

TEST(TokenPassingCuda, IdenticalToCpuWithTheLatticePass) {
  if (!cuda_usable()) GTEST_SKIP() << "no usable CUDA device";
  lattice_trials(4711, 8);
}

// The same with buffers so small that frames overflow them and run again
// (the acoustic parts beside the tokens, winners and records must follow).
TEST(TokenPassingCuda, LatticePassAgreesWhenBuffersOverflow) {
  if (!cuda_usable()) GTEST_SKIP() << "no usable CUDA device";
  ::setenv("GPUSPEECH_CUDA_TINY_BUFFERS", "1", 1);
  lattice_trials(4712, 6);
  ::unsetenv("GPUSPEECH_CUDA_TINY_BUFFERS");
}

// max_epsilon_passes bounds a frame's closure passes, counted as the CPU
// searcher counts them (with rescoring, over all of a frame's rounds); the
// CUDA searcher, whose fused rounds queue up to 64 passes at a time, must
// fail at the same frame with the same message for every limit, and succeed
// with the same result where the CPU does. The limits compared surround the
// smallest one at which the CPU searcher settles (found first, on the CPU
// alone: a larger limit never fails where a smaller one settled), so the
// edge between failing and settling is checked on both sides.
TEST(TokenPassingCuda, EpsilonPassLimitAsOnCpu) {
  if (!cuda_usable()) GTEST_SKIP() << "no usable CUDA device";
  std::mt19937 rng(4242);
  const int senones = 30, words = 10;
  const SearchGraph g = deep_closure_graph(rng, senones, words);
  const testing::LmPair lms = testing::random_lm_pair(rng, words);
  const Scores sc = random_scores(rng, 120, senones, 0.0f);
  auto options = [](int limit) {
    SearchOptions o = deep_closure_options();
    o.max_epsilon_passes = limit;
    return o;
  };
  auto run = [&](Searcher& s) -> std::string {
    try {
      s.reset();
      s.advance(sc.v.data(), sc.frames, sc.senones);
      return "";
    } catch (const std::runtime_error& e) {
      return e.what();
    }
  };
  for (const bool rescoring : {false, true}) {
    auto cpu_settles = [&](int limit) {
      LmRescorer rc(lms.full, lms.pruned, g.words, g.word_is_filler, 0.1f);
      CpuSearcher cpu(g, options(limit), rescoring ? &rc : nullptr);
      return run(cpu).empty();
    };
    // The smallest settling limit, by doubling and then bisection.
    int hi = 1;
    while (!cpu_settles(hi)) {
      ASSERT_LT(hi, 1 << 16) << "the CPU searcher never settles (rescoring " << rescoring << ")";
      hi *= 2;
    }
    int lo = hi / 2;  // fails (or 0)
    while (hi - lo > 1) {
      const int mid = (lo + hi) / 2;
      (cpu_settles(mid) ? hi : lo) = mid;
    }
    const int edge = hi;
    std::printf("%s: the CPU searcher settles from %d epsilon passes a frame\n",
                rescoring ? "rescoring" : "plain", edge);
    // Deep enough that the limit matters, and crosses a fused round's 64
    // passes where the graph allows it.
    ASSERT_GT(edge, 2) << rescoring;
    int failed = 0, settled = 0;
    for (int limit : {1, 2, edge / 2, edge - 2, edge - 1, edge, edge + 1, edge + 2, 2 * edge, 1000}) {
      if (limit < 1) continue;
      LmRescorer rc(lms.full, lms.pruned, g.words, g.word_is_filler, 0.1f);
      LmRescorer rg(lms.full, lms.pruned, g.words, g.word_is_filler, 0.1f);
      CpuSearcher cpu(g, options(limit), rescoring ? &rc : nullptr);
      CudaSearcher gpu(g, options(limit), 0, rescoring ? &rg : nullptr);
      const std::string what =
          std::string(rescoring ? "rescoring" : "plain") + ", limit " + std::to_string(limit);
      const std::string cpu_error = run(cpu), gpu_error = run(gpu);
      EXPECT_EQ(cpu_error, gpu_error) << what;
      if (cpu_error.empty() && gpu_error.empty())
        expect_same_hypothesis(cpu.best(), gpu.best(), what);
      ++(cpu_error.empty() ? settled : failed);
    }
    EXPECT_GT(failed, 0) << rescoring;
    EXPECT_GT(settled, 0) << rescoring;
  }
}

TEST(TokenPassingCuda, GarbageCollectionAndResetOnTheDevice) {
  if (!cuda_usable()) GTEST_SKIP() << "no usable CUDA device";
  const WordLoop loop = make_word_loop({"a", "b", "c", "d"}, 2, 2.0f);
  std::mt19937 rng(5);
  Scores sc(400, 8, -6.0f);
  std::uniform_int_distribution<int> pick(0, 7);
  for (int t = 0; t < sc.frames; ++t) sc.at(t, pick(rng)) = -1.0f;
  SearchOptions o;
  o.beam = 20.0f;
  o.word_end_beam = 15.0f;
  o.max_word_records = 16;
  CpuSearcher cpu(loop.graph, o);
  CudaSearcher gpu(loop.graph, o);
  for (int rep = 0; rep < 2; ++rep) {
    expect_same_hypothesis(decode(cpu, sc), decode(gpu, sc), "rep " + std::to_string(rep));
    EXPECT_GE(gpu.stats().collections, 3);
    EXPECT_GE(cpu.stats().collections, 3);
  }
}

TEST(TokenPassingCuda, LargeRandomGraphAgreesAndReportsSpeed) {
  if (!cuda_usable()) GTEST_SKIP() << "no usable CUDA device";
  // 200k states, a few arcs each, 20k live tokens a frame: a stress test
  // of the device lists (not a realistic graph: destinations are random).
  std::mt19937 rng(2024);
  const SearchGraph g = random_graph(rng, 200000, 2000, 5000, 0.0f, 20, 4000);
  const Scores sc = random_scores(rng, 150, 2000, 0.0f);
  SearchOptions o;
  o.beam = 12.0f;
  o.word_end_beam = 10.0f;
  o.max_active = 20000;
  CpuSearcher cpu(g, o);
  CudaSearcher gpu(g, o);
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  cpu.reset();
  cpu.advance(sc.v.data(), sc.frames, sc.senones);
  auto t1 = clock::now();
  gpu.reset();
  gpu.advance(sc.v.data(), sc.frames, sc.senones);
  auto t2 = clock::now();
  const double cpu_ms = std::chrono::duration<double, std::milli>(t1 - t0).count() / sc.frames;
  const double gpu_ms = std::chrono::duration<double, std::milli>(t2 - t1).count() / sc.frames;
  std::printf("large random graph: %d states, %lld arcs, max live %lld: cpu %.3f ms/frame, "
              "cuda %.3f ms/frame (%s)\n",
              g.num_states(), static_cast<long long>(g.num_arcs()),
              static_cast<long long>(gpu.stats().max_live_tokens), cpu_ms, gpu_ms,
              gpu.device_name().c_str());
  EXPECT_EQ(canonical_live(cpu), canonical_live(gpu));
  expect_same_hypothesis(cpu.best(), gpu.best(), "large");
  EXPECT_EQ(cpu.stats().max_live_tokens, gpu.stats().max_live_tokens);
}
// The batched search (cuda_round_batcher.h): streams decoded at the same
// time run their rounds as lanes of shared launches. Each of these
// streams has its own graph, LM, options and scores, rescoring and plain
// searches side by side so that rounds of every kind (start, emitting,
// offers, continuations, pruning alone) share launches, and each must
// give exactly what the CPU searcher gives it alone.
TEST(TokenPassingCuda, LanesInSharedLaunchesAgreeWithCpu) {
  if (!cuda_usable()) GTEST_SKIP() << "no usable CUDA device";
  const char* was = std::getenv("GPUSPEECH_CUDA_BATCH");
  const std::string saved = was != nullptr ? was : "";
  ::setenv("GPUSPEECH_CUDA_BATCH", "1", 1);
  const std::shared_ptr<CudaRoundBatcher> batcher = CudaRoundBatcher::for_device(0);
  const CudaRoundBatcher::Stats before = batcher->stats();
  constexpr int kStreams = 12;
  std::vector<std::thread> threads;
  for (int k = 0; k < kStreams; ++k)
    threads.emplace_back([k] {
      if (k % 3 == 0)
        plain_trials(500 + k, 4);
      else
        rescoring_trials(700 + k, 3);
    });
  for (std::thread& t : threads) t.join();
  if (was != nullptr)
    ::setenv("GPUSPEECH_CUDA_BATCH", saved.c_str(), 1);
  else
    ::unsetenv("GPUSPEECH_CUDA_BATCH");
  const CudaRoundBatcher::Stats after = batcher->stats();
  std::printf("lanes: %llu rounds in %llu launches, at most %u in one\n",
              static_cast<unsigned long long>(after.rounds - before.rounds),
              static_cast<unsigned long long>(after.launches - before.launches), after.widest);
  EXPECT_GT(after.widest, 1u);  // the streams did share launches
  EXPECT_GT(after.rounds - before.rounds, after.launches - before.launches);
}
// The same streams as fibers on three worker threads (fiber_pool.h): a
// stream waiting for its round gives its thread to the others, and is
// resumed by the batcher instead of woken.
TEST(TokenPassingCuda, LanesFromFibersAgreeWithCpu) {
  if (!cuda_usable()) GTEST_SKIP() << "no usable CUDA device";
  const char* was = std::getenv("GPUSPEECH_CUDA_BATCH");
  const std::string saved = was != nullptr ? was : "";
  ::setenv("GPUSPEECH_CUDA_BATCH", "1", 1);
  const std::shared_ptr<CudaRoundBatcher> batcher = CudaRoundBatcher::for_device(0);
  const CudaRoundBatcher::Stats before = batcher->stats();
  constexpr int kStreams = 12;
  std::vector<std::function<void()>> tasks;
  for (int k = 0; k < kStreams; ++k)
    tasks.push_back([k] {
      if (cudaSetDevice(0) != cudaSuccess) throw std::runtime_error("cudaSetDevice");
      if (k % 3 == 0)
        plain_trials(900 + k, 3);
      else
        rescoring_trials(1100 + k, 2);
    });
  const std::vector<std::exception_ptr> errors = run_fibers(std::move(tasks), 3);
  if (was != nullptr)
    ::setenv("GPUSPEECH_CUDA_BATCH", saved.c_str(), 1);
  else
    ::unsetenv("GPUSPEECH_CUDA_BATCH");
  for (int k = 0; k < kStreams; ++k) EXPECT_FALSE(errors[k]) << "stream " << k << " threw";
  const CudaRoundBatcher::Stats after = batcher->stats();
  std::printf("lanes from fibers: %llu rounds in %llu launches, at most %u in one\n",
              static_cast<unsigned long long>(after.rounds - before.rounds),
              static_cast<unsigned long long>(after.launches - before.launches), after.widest);
  EXPECT_GT(after.rounds - before.rounds, after.launches - before.launches);
}
#else
TEST(TokenPassingCuda, NotBuilt) {
  if (testing::is_required_backend("cuda"))
    FAIL() << "GPUSPEECH_REQUIRE_BACKENDS names cuda but CUDA is not built";
  GTEST_SKIP() << "built without CUDA";
}
#endif

}  // namespace
}  // namespace gpuspeech
