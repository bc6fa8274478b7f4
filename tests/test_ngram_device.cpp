// The n-gram trie on a CUDA device (common/search/cuda_ngram_model.h,
// kernels/cuda/ngram_scoring.cuh) against the host's NgramModel: every
// query must give the host's float exactly and the same n-gram length, on
// the real LMs of pocketsphinx (en-us, the turtle and tidigits models), for
// queries drawn from listed n-grams (their paths in the trie) and at random
// (mostly back-off); and the same queries through the device's n-gram
// hash (ngram_hash.h). Word-end rescoring on the device (docs/search-lanes-
// plan.md, S8) relies on this. Skips without a CUDA device (fails where
// GPUSPEECH_REQUIRE_BACKENDS names cuda).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#ifdef GPUSPEECH_HAVE_CUDA
#include <cuda_runtime.h>

#include "common/search/cuda_memory.h"
#include "common/search/cuda_ngram_model.h"
#include "kernels/cuda/ngram_scoring.cuh"
#endif

#include "common/model/ngram_model.h"
#include "tests/test_backends.h"

namespace gpuspeech {
namespace {

#ifdef GPUSPEECH_HAVE_CUDA
// Queries on `lm`: half the n-grams of each order as listed (history and
// word from a listed entry, so the walk finds them), half at random ids,
// histories of every length up to order - 1 and beyond.
void expect_device_scores_as_host(const NgramModel& lm, int queries, unsigned seed) {
  std::mt19937 rng(seed);
  // A uniform sample of each order's entries (reservoir sampling: en-us
  // lists millions).
  std::vector<std::vector<int>> listed;  // natural order
  const size_t per_order = static_cast<size_t>(queries) / 4 + 1;
  for (int k = 2; k <= lm.order(); ++k) {
    std::vector<std::vector<int>> sample;
    size_t seen = 0;
    lm.for_each_ngram(k, [&](const int* ws, int n, float, float, bool) {
      ++seen;
      if (sample.size() < per_order) {
        sample.emplace_back(ws, ws + n);
      } else {
        const size_t j = std::uniform_int_distribution<size_t>(0, seen - 1)(rng);
        if (j < per_order) sample[j].assign(ws, ws + n);
      }
    });
    listed.insert(listed.end(), sample.begin(), sample.end());
  }
  const int stride = lm.order() > 1 ? lm.order() - 1 : 1;
  std::uniform_int_distribution<int> word(0, lm.vocabulary_size() - 1);
  std::uniform_int_distribution<int> length(0, lm.order() + 1);
  std::vector<int> recent, ks, words;
  std::vector<float> want;
  std::vector<int> want_length;
  for (int q = 0; q < queries; ++q) {
    std::vector<int> h;
    int w = 0;
    if (!listed.empty() && q % 2 == 0) {
      const std::vector<int>& g = listed[std::uniform_int_distribution<size_t>(0, listed.size() - 1)(rng)];
      h.assign(g.begin(), g.end() - 1);
      w = g.back();
      if (q % 4 == 0) h.insert(h.begin(), word(rng));  // a longer history than the n-gram
    } else {
      h.resize(length(rng));
      for (int& x : h) x = word(rng);
      w = word(rng);
    }
    int n = 0;
    want.push_back(lm.score_log10(h.data(), h.size(), w, &n));
    want_length.push_back(n);
    const int k = std::min<int>(static_cast<int>(h.size()), lm.order() - 1);
    for (int i = 0; i < stride; ++i) recent.push_back(i < k ? h[h.size() - 1 - i] : 0);
    ks.push_back(k);
    words.push_back(w);
  }
  const auto device = CudaNgramModel::upload(lm, 0);
  EXPECT_GT(device->bytes(), 0u);
  cuda_memory::DeviceArray<int> d_recent, d_ks, d_words, d_length;
  cuda_memory::DeviceArray<float> d_scores;
  cuda_memory::upload(d_recent, recent, nullptr);
  cuda_memory::upload(d_ks, ks, nullptr);
  cuda_memory::upload(d_words, words, nullptr);
  d_scores.resize(queries);
  d_length.resize(queries);
  ASSERT_EQ(cuda::ngram_score_queries(device->view(), d_recent.get(), stride, d_ks.get(), d_words.get(),
                                      queries, d_scores.get(), d_length.get(), nullptr),
            cudaSuccess);
  std::vector<float> got(queries);
  std::vector<int> got_length(queries);
  ASSERT_EQ(cudaMemcpy(got.data(), d_scores.get(), queries * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(got_length.data(), d_length.get(), queries * sizeof(int), cudaMemcpyDeviceToHost),
            cudaSuccess);
  int listed_hits = 0;
  for (int q = 0; q < queries; ++q) {
    ASSERT_EQ(got[q], want[q]) << lm.source() << " query " << q << " seed " << seed;
    ASSERT_EQ(got_length[q], want_length[q]) << lm.source() << " query " << q;
    listed_hits += want_length[q] > 1;
  }
  // The same queries through the device's n-gram hash (every model here
  // is of order 3 or less, so each has one).
  ASSERT_NE(device->hash_view().slots, nullptr) << lm.source();
  ASSERT_EQ(cudaMemset(d_scores.get(), 0xff, queries * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cuda::ngram_hash_score_queries(device->hash_view(), d_recent.get(), stride, d_ks.get(), d_words.get(),
                                           queries, d_scores.get(), d_length.get(), nullptr),
            cudaSuccess);
  ASSERT_EQ(cudaMemcpy(got.data(), d_scores.get(), queries * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(got_length.data(), d_length.get(), queries * sizeof(int), cudaMemcpyDeviceToHost),
            cudaSuccess);
  for (int q = 0; q < queries; ++q) {
    ASSERT_EQ(got[q], want[q]) << lm.source() << " hash query " << q << " seed " << seed;
    ASSERT_EQ(got_length[q], want_length[q]) << lm.source() << " hash query " << q;
  }
  std::printf("%s: %d queries on the device, %d through listed n-grams of order 2 or more\n",
              lm.source().c_str(), queries, listed_hits);
  EXPECT_GT(listed_hits, lm.order() > 1 ? queries / 4 : -1);
}
#endif

TEST(NgramDevice, DeviceScoresEqualTheHostsOnRealModels) {
  const testing::BackendForTest cuda = testing::backend_for_test("cuda");
  if (cuda.backend == nullptr) {
    if (cuda.required) FAIL() << cuda.problem;
    GTEST_SKIP() << cuda.problem;
  }
#ifdef GPUSPEECH_HAVE_CUDA
  const std::vector<std::string> paths = {testing::model_dir() + "/en-us/en-us.lm.bin",
                                          testing::audio_dir() + "/turtle.lm.bin",
                                          testing::audio_dir() + "/tidigits/lm/tidigits.lm.bin"};
  int tested = 0;
  const unsigned seed = std::random_device{}();
  std::printf("seed %u\n", seed);
  for (const std::string& p : paths) {
    if (!std::ifstream(p).good()) continue;
    expect_device_scores_as_host(read_ngram_model(p), 200000, seed);
    ++tested;
  }
  if (tested == 0) GTEST_SKIP() << "pocketsphinx-en-us / pocketsphinx-testdata not installed";
#endif
}

}  // namespace
}  // namespace gpuspeech
