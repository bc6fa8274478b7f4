// Word-end rescoring on a CUDA device (common/search/cuda_lm_rescoring.h,
// kernels/cuda/lm_word_ends.cuh) against the host's LmRescorer: thousands
// of random walks of word ends from the sentence start, one kernel launch
// a step (every walk's step in the same launch, so threads add the same
// histories at once), must give every step's correction and next
// history's hash exactly as the host does, and the table's entries the
// host histories' words (docs/search-lanes-plan.md, S8). Skips without a
// CUDA device (fails where GPUSPEECH_REQUIRE_BACKENDS names cuda).
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#ifdef GPUSPEECH_HAVE_CUDA
#include <cuda_runtime.h>

#include "common/search/cuda_lm_rescoring.h"
#include "common/search/cuda_memory.h"
#include "kernels/cuda/lm_word_ends.cuh"
#endif

#include "common/search/lm_rescorer.h"
#include "tests/rescoring_test_util.h"
#include "tests/test_backends.h"

namespace gpuspeech {
namespace {

TEST(LmRescoringDevice, WalksOfWordEndsGiveTheHostsFloatsHashesAndHistories) {
  const testing::BackendForTest cuda = testing::backend_for_test("cuda");
  if (cuda.backend == nullptr) {
    if (cuda.required) FAIL() << cuda.problem;
    GTEST_SKIP() << cuda.problem;
  }
#ifdef GPUSPEECH_HAVE_CUDA
  const unsigned seed = std::random_device{}();
  std::printf("seed %u\n", seed);
  std::mt19937 rng(seed);
  size_t steps = 0;
  for (int trial = 0; trial < 10; ++trial) {
    const int words = std::uniform_int_distribution<int>(4, 40)(rng);
    const float lw = std::uniform_real_distribution<float>(1.0f, 12.0f)(rng);
    const testing::LmPair lms = testing::random_lm_pair(rng, words);
    std::vector<std::string> graph_words;
    for (int i = 0; i < words; ++i) graph_words.push_back("w" + std::to_string(i));
    std::vector<uint8_t> fillers(words, 0);
    fillers[0] = 1;
    LmRescorer host(lms.full, lms.pruned, graph_words, fillers, lw);
    const auto device = CudaLmRescoring::upload(host, 0);
    CudaLmHistoryTable table(*device, 1 << 16);
    table.reset(nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

    constexpr int kWalks = 4096, kPhases = 10;
    std::vector<int32_t> at(kWalks, table.start()), plan(kWalks);
    cuda_memory::DeviceArray<int32_t> d_hist(kWalks), d_word(kWalks);
    cuda_memory::DeviceArray<LmWordEnd> d_out(kWalks);
    std::vector<LmWordEnd> out(kWalks);
    // Per walk: the host's history id beside the device's.
    std::vector<int32_t> host_at(kWalks, LmRescorer::kStartHistory);
    std::map<int32_t, int32_t> host_of{{table.start(), LmRescorer::kStartHistory}};
    std::vector<std::pair<int32_t, int32_t>> pairs;  // (device id, host id) seen
    for (int phase = 0; phase < kPhases; ++phase) {
      for (int32_t& w : plan) w = std::uniform_int_distribution<int32_t>(0, words - 1)(rng);
      ASSERT_EQ(cudaMemcpy(d_hist.get(), at.data(), kWalks * sizeof(int32_t), cudaMemcpyHostToDevice), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(d_word.get(), plan.data(), kWalks * sizeof(int32_t), cudaMemcpyHostToDevice), cudaSuccess);
      ASSERT_EQ(cuda::lm_word_ends(device->view(), table.view(), d_hist.get(), d_word.get(), kWalks,
                                   d_out.get(), nullptr),
                cudaSuccess);
      ASSERT_EQ(cudaMemcpy(out.data(), d_out.get(), kWalks * sizeof(LmWordEnd), cudaMemcpyDeviceToHost),
                cudaSuccess);
      for (int w = 0; w < kWalks; ++w) {
        const LmRescorer::WordEnd want = host.word_end(host_at[w], plan[w]);
        ASSERT_GE(out[w].history, 0) << "table full";
        ASSERT_EQ(out[w].delta, want.delta) << "trial " << trial << " phase " << phase << " walk " << w;
        ASSERT_EQ(out[w].history_hash, want.history_hash);
        auto [it, added] = host_of.emplace(out[w].history, want.history);
        ASSERT_EQ(it->second, want.history) << "one device id, two host histories";
        at[w] = out[w].history;
        host_at[w] = want.history;
        ++steps;
      }
    }
    // Every entry's words are its host history's.
    const uint32_t cap = table.view().capacity;
    std::vector<unsigned long long> keys(cap);
    std::vector<int32_t> full(cap * kLmHistoryMaxWords), lengths(cap);
    ASSERT_EQ(cudaMemcpy(keys.data(), table.view().keys, cap * sizeof(unsigned long long), cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(full.data(), table.view().full_words, full.size() * sizeof(int32_t), cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(lengths.data(), table.view().lengths, cap * sizeof(int32_t), cudaMemcpyDeviceToHost), cudaSuccess);
    size_t used = 0;
    for (uint32_t e = 0; e < cap; ++e) {
      if (keys[e] == 0) continue;
      ++used;
      ASSERT_TRUE(host_of.count(static_cast<int32_t>(e))) << "an entry no walk reached";
      std::vector<std::string> got;
      for (int k = 0; k < lengths[e]; ++k) got.push_back(lms.full->word(full[e * kLmHistoryMaxWords + k]));
      ASSERT_EQ(got, host.history_words(host_of[static_cast<int32_t>(e)]));
    }
    EXPECT_EQ(used, host.num_histories());
  }
  std::printf("%zu word ends on the device compared\n", steps);
#endif
}

}  // namespace
}  // namespace gpuspeech
