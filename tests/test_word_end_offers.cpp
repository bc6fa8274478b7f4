// A frame's word-end events to offers the device's way (common/search/
// word_end_offers.h with lm_history_table.h: each event's place counted
// among the others, its word end from the shared history table) against
// the host's Searcher::rescore_word_ends (a radix sort, LmRescorer): the
// same offers in the same order, field for field, over rounds of random
// events whose histories come from the rounds before (docs/search-lanes-
// plan.md, S8 step 4).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/search/cpu_searcher.h"
#include "common/search/lm_history_table.h"
#include "common/search/lm_rescorer.h"
#include "common/search/word_end_offers.h"
#include "tests/lm_history_host_table.h"
#include "tests/rescoring_test_util.h"

namespace gpuspeech {
namespace {

// The host's rescore_word_ends, reached from a test.
class ProbeSearcher : public CpuSearcher {
 public:
  using CpuSearcher::CpuSearcher;
  void offers(std::vector<WordEndEvent>& events, std::vector<WordEndOffer>& out) {
    rescore_word_ends(events, out);
  }
  using Searcher::WordEndEvent;
  using Searcher::WordEndOffer;
};

using HostTable = testing::HostHistoryTable;

TEST(WordEndOffers, CountedOrderAndTableGiveTheHostsOffers) {
  // GPUSPEECH_TEST_SEED repeats a run.
  const char* env = std::getenv("GPUSPEECH_TEST_SEED");
  const unsigned seed = env != nullptr && *env != '\0' ? static_cast<unsigned>(std::strtoul(env, nullptr, 10))
                                                         : std::random_device{}();
  std::printf("seed %u (GPUSPEECH_TEST_SEED=%u repeats this run)\n", seed, seed);
  std::fflush(stdout);
  std::mt19937 rng(seed);
  size_t compared = 0;
  for (int trial = 0; trial < 10; ++trial) {
    const int words = std::uniform_int_distribution<int>(4, 12)(rng);
    const float lw = std::uniform_real_distribution<float>(2.0f, 10.0f)(rng);
    const testing::LmPair lms = testing::random_lm_pair(rng, words);
    const SearchGraph graph = testing::random_rescoring_graph(rng, 60, 8, words, 0.0f);
    LmRescorer rescorer(lms.full, lms.pruned, graph.words, graph.word_is_filler, lw);
    SearchOptions o;
    o.lm_histories = std::uniform_int_distribution<int>(1, 5)(rng);
    // Only its rescore_word_ends is used: no decoding, so no reset (whose
    // start closure a random graph with large corrections may not settle).
    ProbeSearcher host(graph, o, &rescorer);
    const int K = host.slots();

    // The device's side: its history table and the rescoring's view.
    std::vector<int32_t> full_of_graph(graph.words.size(), -1), pruned_of_graph(graph.words.size(), -1);
    for (size_t w = 0; w < graph.words.size(); ++w) {
      if (w < graph.word_is_filler.size() && graph.word_is_filler[w]) continue;
      full_of_graph[w] = lms.full->word_id(graph.words[w]);
      pruned_of_graph[w] = lms.pruned->word_id(graph.words[w]);
    }
    LmRescoringView view;
    view.full = lms.full->view();
    view.pruned = lms.pruned->view();
    view.full_of_graph = full_of_graph.data();
    view.pruned_of_graph = pruned_of_graph.data();
    view.words = std::max(lms.full->order(), lms.pruned->order()) - 1;
    view.language_weight = lw;
    HostTable table(4096);
    const int32_t fs = lms.full->word_id("<s>"), ps = lms.pruned->word_id("<s>");
    const int32_t start = lm_history_intern(table.view, &fs, &ps, 1, history_hash_of(&fs, 1));
    ASSERT_GE(start, 0);

    // Known histories on both sides (host id, table id), grown by the rounds.
    std::vector<std::pair<int32_t, int32_t>> known{{LmRescorer::kStartHistory, start}};
    // The word-label arcs: events name one.
    std::vector<uint32_t> word_arcs;
    for (int64_t a = 0; a < graph.num_arcs(); ++a)
      if (graph.arc_olabel[a] > 0) word_arcs.push_back(static_cast<uint32_t>(a));
    ASSERT_FALSE(word_arcs.empty());
    for (int round = 0; round < 8; ++round) {
      // Distinct (source, arc) keys, in a random order, as a kernel appends them.
      const int n = std::uniform_int_distribution<int>(1, 300)(rng);
      std::set<uint64_t> used;
      std::vector<ProbeSearcher::WordEndEvent> host_events;
      std::vector<int32_t> table_history;  // each event's history on the table's side
      while (static_cast<int>(host_events.size()) < n) {
        ProbeSearcher::WordEndEvent e;
        e.arc = word_arcs[std::uniform_int_distribution<size_t>(0, word_arcs.size() - 1)(rng)];
        const int32_t state = std::uniform_int_distribution<int32_t>(0, graph.num_states() - 1)(rng);
        e.source = state * K + std::uniform_int_distribution<int32_t>(0, K - 1)(rng);
        if (!used.insert(word_end_event_key(e.source, e.arc)).second) continue;
        e.cost = std::uniform_real_distribution<float>(0.0f, 50.0f)(rng);
        e.record = std::uniform_int_distribution<int32_t>(-1, 1000)(rng);
        const auto& h = known[std::uniform_int_distribution<size_t>(0, known.size() - 1)(rng)];
        e.history = h.first;
        e.word = graph.arc_olabel[e.arc] - 1;
        e.dest = graph.arc_dest[e.arc];
        host_events.push_back(e);
        table_history.push_back(h.second);
      }
      // The device's way: places by counting, offers at their places.
      std::vector<WordEndOfferFields> device(n);
      auto key_at = [&](uint32_t j) { return word_end_event_key(host_events[j].source, host_events[j].arc); };
      for (int i = 0; i < n; ++i) {
        const ProbeSearcher::WordEndEvent& e = host_events[i];
        const uint32_t place = word_end_event_place(key_at, static_cast<uint32_t>(n), key_at(i));
        ASSERT_LT(place, static_cast<uint32_t>(n));
        const LmWordEnd we = lm_word_end(view, table.view, table_history[i], e.word);
        ASSERT_GE(we.history, 0);
        device[place] = word_end_offer(e.dest, e.cost, e.word, e.record, we, K);
      }
      // The host's way.
      std::vector<ProbeSearcher::WordEndOffer> want;
      std::vector<ProbeSearcher::WordEndEvent> events = host_events;
      host.offers(events, want);
      ASSERT_EQ(want.size(), device.size());
      for (int i = 0; i < n; ++i) {
        ASSERT_EQ(device[i].dest, want[i].dest) << "round " << round << " offer " << i;
        ASSERT_EQ(device[i].cost, want[i].cost);
        ASSERT_EQ(device[i].word, want[i].word);
        ASSERT_EQ(device[i].record, want[i].record);
        // Histories: the host's id and the table's name the same words.
        std::vector<std::string> table_words;
        for (int k = 0; k < table.lengths[device[i].history]; ++k)
          table_words.push_back(lms.full->word(table.full[device[i].history * kLmHistoryMaxWords + k]));
        ASSERT_EQ(table_words, rescorer.history_words(want[i].history));
        known.emplace_back(want[i].history, device[i].history);
        ++compared;
      }
    }
  }
  std::printf("%zu offers compared\n", compared);
}

}  // namespace
}  // namespace gpuspeech
