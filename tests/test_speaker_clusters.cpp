// Speaker clustering by BIC (common/fmllr/speaker_clusters.h): the
// Gaussian summaries against their definitions, and the clusters of
// recordings drawn from known voices (a voice here: a full-covariance
// Gaussian of its own, as the clustering assumes; real voices are tested
// through gpuspeech-transcribe in test_transcribe_cli.sh).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "common/fmllr/speaker_clusters.h"

namespace gpuspeech {
namespace {

// A voice: mean and a lower-triangular factor L of its covariance L Lᵀ.
struct Voice {
  std::vector<double> mean;
  std::vector<double> factor;  // d x d, lower triangle
  double log_det() const {
    const size_t d = mean.size();
    double s = 0.0;
    for (size_t i = 0; i < d; ++i) s += 2.0 * std::log(factor[i * d + i]);
    return s;
  }
};

Voice random_voice(int d, double spread, std::mt19937& rng) {
  std::normal_distribution<double> n(0.0, 1.0);
  std::uniform_real_distribution<double> u(0.5, 1.5);
  Voice v;
  v.mean.resize(static_cast<size_t>(d));
  v.factor.assign(static_cast<size_t>(d) * d, 0.0);
  for (int i = 0; i < d; ++i) {
    v.mean[static_cast<size_t>(i)] = spread * n(rng);
    v.factor[static_cast<size_t>(i) * d + i] = u(rng);
    for (int j = 0; j < i; ++j) v.factor[static_cast<size_t>(i) * d + j] = 0.3 * n(rng);
  }
  return v;
}

// n frames of `stride` floats, the voice's d components from `first`, the
// other components noise of no voice (they must not count).
std::vector<float> speak(const Voice& v, int64_t n, int stride, int first, std::mt19937& rng) {
  std::normal_distribution<double> z(0.0, 1.0);
  const size_t d = v.mean.size();
  std::vector<float> out(static_cast<size_t>(n) * stride);
  std::vector<double> e(d);
  for (int64_t t = 0; t < n; ++t) {
    float* row = out.data() + t * stride;
    for (int k = 0; k < stride; ++k) row[k] = static_cast<float>(100.0 * z(rng));
    for (size_t i = 0; i < d; ++i) e[i] = z(rng);
    for (size_t i = 0; i < d; ++i) {
      double x = v.mean[i];
      for (size_t j = 0; j <= i; ++j) x += v.factor[i * d + j] * e[j];
      row[first + static_cast<int>(i)] = static_cast<float>(x);
    }
  }
  return out;
}

TEST(GaussianSummary, LogDetAndMergeMatchTheDefinitions) {
  std::mt19937 rng(31);
  const int d = 12;
  const Voice v = random_voice(d, 2.0, rng);
  const std::vector<float> a = speak(v, 30000, 13, 1, rng);
  const std::vector<float> b = speak(v, 20000, 13, 1, rng);
  GaussianSummary all(d), first(d), second(d);
  all.add(a.data(), 30000, 13, 1);
  all.add(b.data(), 20000, 13, 1);
  first.add(a.data(), 30000, 13, 1);
  second.add(b.data(), 20000, 13, 1);
  first.merge(second);
  EXPECT_EQ(first.frames, 50000.0);
  for (size_t i = 0; i < all.scatter.size(); ++i)
    EXPECT_NEAR(first.scatter[i], all.scatter[i], 1e-9 * std::fabs(all.scatter[i]) + 1e-9);
  // The sample covariance's log-determinant, against the voice's own
  // (sampling error of a d x d covariance from 50 000 frames: a few 0.01).
  EXPECT_NEAR(all.log_det_covariance(), v.log_det(), 0.05);
  for (int i = 0; i < d; ++i) EXPECT_NEAR(all.sum[static_cast<size_t>(i)] / 50000, v.mean[static_cast<size_t>(i)], 0.05);
  // Too few frames for a covariance: -infinity, never NaN.
  GaussianSummary few(d);
  few.add(a.data(), d, 13, 1);
  EXPECT_TRUE(std::isinf(few.log_det_covariance()) && few.log_det_covariance() < 0);
  EXPECT_THROW(few.add(a.data(), 1, 12, 1), std::invalid_argument);
}

TEST(SpeakerClusters, RecoversTheVoicesOfShuffledRecordings) {
  std::mt19937 rng(32);
  const int d = 12;
  std::vector<Voice> voices;
  for (int k = 0; k < 3; ++k) voices.push_back(random_voice(d, 0.7, rng));
  // Four recordings per voice, 250-600 frames (2.5-6 s of speech), in a
  // shuffled order.
  std::vector<int> truth;
  for (int k = 0; k < 3; ++k)
    for (int r = 0; r < 4; ++r) truth.push_back(k);
  std::shuffle(truth.begin(), truth.end(), rng);
  std::uniform_int_distribution<int64_t> len(250, 600);
  std::vector<GaussianSummary> recs;
  for (int k : truth) {
    const int64_t n = len(rng);
    const std::vector<float> x = speak(voices[static_cast<size_t>(k)], n, 13, 1, rng);
    GaussianSummary g(d);
    g.add(x.data(), n, 13, 1);
    recs.push_back(g);
  }
  const std::vector<int> got = cluster_speakers(recs);
  ASSERT_EQ(got.size(), truth.size());
  // The same partition: equal voices, equal clusters, and the reverse;
  // clusters numbered by their first recording.
  int next = 0;
  for (size_t i = 0; i < truth.size(); ++i) {
    bool seen = false;
    for (size_t j = 0; j < i; ++j) seen = seen || truth[j] == truth[i];
    if (!seen) {
      EXPECT_EQ(got[i], next++) << "recording " << i;
    }
    for (size_t j = 0; j < truth.size(); ++j)
      EXPECT_EQ(got[i] == got[j], truth[i] == truth[j]) << "recordings " << i << " and " << j;
  }
  // Each pair's criterion says the same: negative within a voice, positive
  // across voices.
  for (size_t i = 0; i < recs.size(); ++i)
    for (size_t j = i + 1; j < recs.size(); ++j) {
      const double bic = merge_bic(recs[i], recs[j], SpeakerClusteringOptions{}.penalty_weight);
      if (truth[i] == truth[j])
        EXPECT_LT(bic, 0.0) << i << "," << j;
      else
        EXPECT_GT(bic, 0.0) << i << "," << j;
    }
}

TEST(SpeakerClusters, OneVoiceIsOneClusterButShortRecordingsStayApart) {
  std::mt19937 rng(33);
  const int d = 12;
  const Voice v = random_voice(d, 1.0, rng);
  std::vector<GaussianSummary> recs;
  for (int64_t n : {400, 300, 50, 500, 0}) {
    GaussianSummary g(d);
    const std::vector<float> x = speak(v, n, 13, 1, rng);
    g.add(x.data(), n, 13, 1);
    recs.push_back(g);
  }
  const std::vector<int> got = cluster_speakers(recs);
  EXPECT_EQ(got, (std::vector<int>{0, 0, 1, 0, 2}));  // 50 and 0 frames: below min_frames
  SpeakerClusteringOptions keep_all;
  keep_all.min_frames = 0;
  EXPECT_EQ(cluster_speakers(recs, keep_all)[2], 0) << "50 frames of the voice join it";
  EXPECT_TRUE(cluster_speakers({}).empty());
  recs.push_back(GaussianSummary(d - 1));
  EXPECT_THROW(cluster_speakers(recs), std::invalid_argument);
}

// Past a block of recordings the clustering starts again: the same voice in
// two blocks is two clusters, numbered on.
TEST(SpeakerClusters, ClustersInBlocksOfBoundedSize) {
  std::mt19937 rng(34);
  const int d = 4;
  const Voice v = random_voice(d, 1.0, rng);
  SpeakerClusteringOptions options;
  options.block = 5;
  std::vector<GaussianSummary> recs;
  for (size_t i = 0; i < 8; ++i) {
    GaussianSummary g(d);
    const std::vector<float> x = speak(v, 120, d, 0, rng);
    g.add(x.data(), 120, d, 0);
    recs.push_back(g);
  }
  const std::vector<int> got = cluster_speakers(recs, options);
  EXPECT_EQ(got, (std::vector<int>{0, 0, 0, 0, 0, 1, 1, 1}));
  options.block = 8;
  EXPECT_EQ(cluster_speakers(recs, options), std::vector<int>(8, 0));
}

}  // namespace
}  // namespace gpuspeech
