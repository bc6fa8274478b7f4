// Word-end rescoring over a shared history table (common/search/
// lm_history_table.h, the device's form of LmRescorer, docs/search-lanes-
// plan.md S8) against LmRescorer itself: random walks of word ends from
// the sentence start, stepped by several threads at once in phases (as a
// kernel's threads between barriers), must give every step's correction
// and next history's hash exactly as the host's rescorer does, and each
// table entry must hold the words of the host's history it stands for;
// the sentence end's correction after each history must be the host's too;
// a table too small says so (-1) instead of writing out of bounds. Every
// other trial scores through the LMs' n-gram hashes (ngram_hash.h).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/model/ngram_hash_table.h"
#include "common/model/ngram_model.h"
#include "common/search/lm_history_table.h"
#include "common/search/lm_rescorer.h"
#include "tests/lm_history_host_table.h"
#include "tests/rescoring_test_util.h"

namespace gpuspeech {
namespace {

using HostTable = testing::HostHistoryTable;

struct RescoringSetup {
  testing::LmPair lms;
  std::vector<std::string> graph_words;
  std::vector<uint8_t> fillers;
  std::vector<int32_t> full_of_graph, pruned_of_graph;
  // With `hashed`, both LMs scored through their n-gram hashes.
  std::shared_ptr<const NgramHashTable> full_hash, pruned_hash;
  LmRescoringView view;
};

RescoringSetup make_setup(std::mt19937& rng, int words, float lw, bool hashed = false) {
  RescoringSetup s;
  s.lms = testing::random_lm_pair(rng, words);
  for (int i = 0; i < words; ++i) s.graph_words.push_back("w" + std::to_string(i));
  s.fillers.assign(words, 0);
  s.fillers[0] = 1;
  for (int i = 0; i < words; ++i) {
    s.full_of_graph.push_back(i == 0 ? -1 : s.lms.full->word_id(s.graph_words[i]));
    s.pruned_of_graph.push_back(i == 0 ? -1 : s.lms.pruned->word_id(s.graph_words[i]));
  }
  s.view.full = s.lms.full->view();
  s.view.pruned = s.lms.pruned->view();
  s.view.full_of_graph = s.full_of_graph.data();
  s.view.pruned_of_graph = s.pruned_of_graph.data();
  s.view.words = std::max(s.lms.full->order(), s.lms.pruned->order()) - 1;
  s.view.language_weight = lw;
  if (hashed) {
    s.full_hash = std::make_shared<const NgramHashTable>(*s.lms.full);
    s.pruned_hash = std::make_shared<const NgramHashTable>(*s.lms.pruned);
    s.view.full_hash = s.full_hash->view();
    s.view.pruned_hash = s.pruned_hash->view();
  }
  return s;
}

// The sentence start's history in the table, as LmRescorer::reset makes it.
int32_t start_history(const RescoringSetup& s, const HostTable& t) {
  const int32_t f = s.lms.full->word_id("<s>"), p = s.lms.pruned->word_id("<s>");
  const uint32_t h = history_hash_of(&f, 1);
  return lm_history_intern(t.view, &f, &p, 1, h);
}

TEST(LmHistoryTable, ThreadedWordEndsGiveTheRescorersFloatsAndHashes) {
  // GPUSPEECH_TEST_SEED repeats a run.
  const char* env = std::getenv("GPUSPEECH_TEST_SEED");
  const unsigned seed = env != nullptr && *env != '\0' ? static_cast<unsigned>(std::strtoul(env, nullptr, 10))
                                                         : std::random_device{}();
  std::printf("seed %u (GPUSPEECH_TEST_SEED=%u repeats this run)\n", seed, seed);
  std::fflush(stdout);
  std::mt19937 rng(seed);
  size_t steps = 0;
  for (int trial = 0; trial < 20; ++trial) {
    const int words = std::uniform_int_distribution<int>(3, 12)(rng);
    const float lw = std::uniform_real_distribution<float>(1.0f, 12.0f)(rng);
    // Every other trial scores through the n-gram hashes (the device's
    // default): the same floats as the tries.
    const RescoringSetup s = make_setup(rng, words, lw, trial % 2 == 1);
    LmRescorer host(s.lms.full, s.lms.pruned, s.graph_words, s.fillers, lw);
    HostTable table(1024);
    const int32_t start = start_history(s, table);
    ASSERT_GE(start, 0);
    ASSERT_EQ(table.hashes[start], host.history_hash(LmRescorer::kStartHistory));

    // Walks in parallel: each phase, every thread takes one step of each
    // of its walks (a word end), as a kernel's threads do between two
    // barriers; a step's result becomes the walk's history in the next.
    constexpr int kThreads = 4, kWalks = 64, kPhases = 12;
    struct Step {
      int32_t history, word;
      LmWordEnd result;
    };
    std::vector<int32_t> at(kWalks, start);
    std::vector<std::vector<Step>> log(kWalks);
    std::vector<std::vector<int32_t>> plan(kWalks, std::vector<int32_t>(kPhases));
    for (auto& p : plan)
      for (int32_t& w : p) w = std::uniform_int_distribution<int32_t>(0, words - 1)(rng);
    for (int phase = 0; phase < kPhases; ++phase) {
      std::vector<std::thread> threads;
      for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
          for (int w = t; w < kWalks; w += kThreads) {
            const LmWordEnd r = lm_word_end(s.view, table.view, at[w], plan[w][phase]);
            log[w].push_back(Step{at[w], plan[w][phase], r});
          }
        });
      for (std::thread& th : threads) th.join();
      for (int w = 0; w < kWalks; ++w) {
        ASSERT_GE(log[w].back().result.history, 0) << "table full";
        at[w] = log[w].back().result.history;
      }
    }
    // The same walks through the host's rescorer, step by step.
    std::map<int32_t, int32_t> host_of;  // table id -> host id
    host_of[start] = LmRescorer::kStartHistory;
    for (int w = 0; w < kWalks; ++w) {
      int32_t h = LmRescorer::kStartHistory;
      for (const Step& st : log[w]) {
        ASSERT_EQ(host_of.at(st.history), h);
        const LmRescorer::WordEnd want = host.word_end(h, st.word);
        ASSERT_EQ(st.result.delta, want.delta) << "trial " << trial << " walk " << w;
        ASSERT_EQ(st.result.history_hash, want.history_hash);
        // The entry holds the host history's words.
        std::vector<int32_t> host_words;
        for (const std::string& word : host.history_words(want.history))
          host_words.push_back(s.lms.full->word_id(word));
        ASSERT_EQ(table.words_of(st.result.history), host_words);
        auto [it, added] = host_of.emplace(st.result.history, want.history);
        ASSERT_EQ(it->second, want.history) << "one table id, two host histories";
        h = want.history;
        ++steps;
      }
    }
    // The sentence end's correction after every history reached, as the
    // host's rescorer gives it.
    const int32_t full_end = s.lms.full->word_id("</s>"), pruned_end = s.lms.pruned->word_id("</s>");
    for (const auto& [id, host_id] : host_of)
      ASSERT_EQ(lm_end_delta(s.view, table.view, id, full_end, pruned_end), host.end_delta(host_id))
          << "trial " << trial << " history " << id;
    ASSERT_EQ(lm_end_delta(s.view, table.view, start, -1, pruned_end), 0.0f);
    // As many entries as the host has histories.
    size_t used = 0;
    for (unsigned long long k : table.keys) used += k != 0;
    EXPECT_EQ(used, host.num_histories());
  }
  std::printf("%zu word ends compared\n", steps);
}

TEST(LmHistoryTable, AFullTableSaysSo) {
  std::mt19937 rng(3);
  const RescoringSetup s = make_setup(rng, 12, 6.5f);
  HostTable table(4);
  int32_t h = start_history(s, table);
  ASSERT_GE(h, 0);
  int full = 0;
  for (int i = 0; i < 40 && full == 0; ++i) {
    const LmWordEnd r = lm_word_end(s.view, table.view, h, 1 + i % 11);
    if (r.history < 0) ++full; else h = r.history;
  }
  EXPECT_EQ(full, 1) << "a four-entry table must fill up";
}

}  // namespace
}  // namespace gpuspeech
