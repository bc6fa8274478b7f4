// The restricted fMLLR updates (FmllrOptions::update, Kaldi's
// fmllr-update-type): a diagonal distortion (per-component scale and
// shift) is undone by the diagonal update, a pure shift by the offset
// update; each restricted estimate is the maximum of the objective over its
// parameters (no small change of a_ii or b_i does better), and the full
// update reaches at least the diagonal one's objective.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "common/backends/backend_registry.h"
#include "common/fmllr/fmllr_estimate.h"
#include "common/fmllr/fmllr_stats.h"
#include "common/fmllr/fmllr_transform.h"
#include "tests/fmllr_test_util.h"

namespace gpuspeech {
namespace {

using testing::draw_features;
using testing::fmllr_test_model;

FmllrStats stats_at(const GaussianMixtures& gm, const std::vector<float>& x,
                    const std::vector<int32_t>& senones, const FmllrTransform& w) {
  const int64_t frames = static_cast<int64_t>(senones.size());
  std::vector<float> xt(x.size());
  apply_fmllr_reference(w, x.data(), frames, xt.data());
  const GaussianPosteriors post = supervised_posteriors(gm, xt.data(), frames, senones.data());
  BackendPtr cpu = make_cpu_backend();
  FmllrAccumulator acc(gm, *cpu);
  acc.accumulate(x.data(), frames, post);
  return acc.stats();
}

// EM passes of one update type from the identity.
FmllrTransform em(const GaussianMixtures& gm, const std::vector<float>& x,
                  const std::vector<int32_t>& senones, FmllrUpdateType type, int passes) {
  FmllrOptions opt;
  opt.update = type;
  FmllrTransform w = FmllrTransform::identity(gm.feature_dim());
  for (int p = 0; p < passes; ++p) {
    const FmllrEstimate est = estimate_fmllr(stats_at(gm, x, senones, w), opt, &w);
    EXPECT_EQ(est.outcome, FmllrOutcome::kUpdated) << est.message;
    EXPECT_EQ(est.objective.size(), type == FmllrUpdateType::kFull ? 11u : 2u);
    w = est.transform;
  }
  return w;
}

TEST(FmllrUpdateTypes, NamesRoundTrip) {
  for (FmllrUpdateType t : {FmllrUpdateType::kFull, FmllrUpdateType::kDiag, FmllrUpdateType::kOffset}) {
    FmllrUpdateType back = FmllrUpdateType::kFull;
    ASSERT_TRUE(parse_fmllr_update_type(to_string(t), &back));
    EXPECT_EQ(back, t);
  }
  FmllrUpdateType t = FmllrUpdateType::kDiag;
  EXPECT_FALSE(parse_fmllr_update_type("diagonal", &t));
  EXPECT_FALSE(parse_fmllr_update_type("", &t));
  EXPECT_EQ(t, FmllrUpdateType::kDiag);
}

TEST(FmllrUpdateTypes, DiagonalUndoesAScaleAndShift) {
  std::mt19937 rng(11);
  const int d = 6;
  const GaussianMixtures gm = fmllr_test_model(d, 2, 12, 2, rng);
  std::vector<int32_t> senones;
  const std::vector<float> clean = draw_features(gm, 6000, senones, rng);
  FmllrTransform distortion = FmllrTransform::identity(d);
  for (int i = 0; i < d; ++i) {
    distortion.at(i, i) = 0.8 + 0.08 * i;  // 0.8 .. 1.2
    distortion.at(i, d) = (i % 2 ? 1.0 : -1.0) * (0.3 + 0.1 * i);
  }
  std::vector<float> x(clean.size());
  apply_fmllr_reference(distortion, clean.data(), 6000, x.data());
  const FmllrTransform w = em(gm, x, senones, FmllrUpdateType::kDiag, 4);
  double worst = 0.0;
  for (int i = 0; i < d; ++i) {
    for (int j = 0; j < d; ++j) {
      if (j == i) continue;
      EXPECT_EQ(w.at(i, j), 0.0) << "off-diagonal entry " << i << "," << j;
    }
    // W o distortion: a_ii m_ii = 1, a_ii c_i + b_i = 0.
    worst = std::max(worst, std::fabs(w.at(i, i) * distortion.at(i, i) - 1.0));
    worst = std::max(worst, std::fabs(w.at(i, i) * distortion.at(i, d) + w.at(i, d)) / 3.0);
  }
  std::printf("diagonal update: largest deviation of W o distortion from the identity %.4f\n", worst);
  EXPECT_LT(worst, 0.05);
}

TEST(FmllrUpdateTypes, OffsetUndoesAShift) {
  std::mt19937 rng(12);
  const int d = 6;
  const GaussianMixtures gm = fmllr_test_model(d, 3, 10, 2, rng);
  std::vector<int32_t> senones;
  const std::vector<float> clean = draw_features(gm, 5000, senones, rng);
  FmllrTransform shift = FmllrTransform::identity(d);
  for (int i = 0; i < d; ++i) shift.at(i, d) = 0.5 - 0.2 * i;
  std::vector<float> x(clean.size());
  apply_fmllr_reference(shift, clean.data(), 5000, x.data());
  const FmllrTransform w = em(gm, x, senones, FmllrUpdateType::kOffset, 3);
  for (int i = 0; i < d; ++i) {
    for (int j = 0; j < d; ++j) EXPECT_EQ(w.at(i, j), i == j ? 1.0 : 0.0);
    EXPECT_NEAR(w.at(i, d), -shift.at(i, d), 0.05) << "dimension " << i;
  }
}

// On fixed statistics, each restricted estimate is a maximum over its own
// parameters, and the full update (from the diagonal estimate) does at least
// as well.
TEST(FmllrUpdateTypes, EachEstimateIsItsParametersMaximum) {
  std::mt19937 rng(13);
  const int d = 5;
  const GaussianMixtures gm = fmllr_test_model(d, 1, 8, 3, rng);
  std::vector<int32_t> senones;
  const std::vector<float> clean = draw_features(gm, 3000, senones, rng);
  const FmllrTransform distortion = testing::random_affine(d, 0.3, rng);
  std::vector<float> x(clean.size());
  apply_fmllr_reference(distortion, clean.data(), 3000, x.data());
  const FmllrStats st = stats_at(gm, x, senones, FmllrTransform::identity(d));
  for (FmllrUpdateType type : {FmllrUpdateType::kDiag, FmllrUpdateType::kOffset}) {
    FmllrOptions opt;
    opt.update = type;
    const FmllrEstimate est = estimate_fmllr(st, opt);
    ASSERT_EQ(est.outcome, FmllrOutcome::kUpdated) << est.message;
    const double best = fmllr_objective(st, est.transform);
    EXPECT_NEAR(best / st.beta, est.objective.back(), 1e-9 * std::fabs(best));
    EXPECT_GE(est.objective.back(), est.objective.front());
    for (int i = 0; i < d; ++i)
      for (int col : {i, d}) {
        if (type == FmllrUpdateType::kOffset && col != d) continue;
        for (double step : {-1e-3, 1e-3}) {
          FmllrTransform t = est.transform;
          t.at(i, col) += step;
          EXPECT_LE(fmllr_objective(st, t), best + 1e-9 * std::fabs(best))
              << to_string(type) << " entry " << i << "," << col << " step " << step;
        }
      }
    if (type == FmllrUpdateType::kDiag) {
      const FmllrEstimate full = estimate_fmllr(st, FmllrOptions{}, &est.transform);
      ASSERT_EQ(full.outcome, FmllrOutcome::kUpdated) << full.message;
      EXPECT_GE(full.objective.back(), est.objective.back());
    }
  }
}

}  // namespace
}  // namespace gpuspeech
