// The restricted fMLLR updates (FmllrOptions::update, Kaldi's
// fmllr-update-type): a diagonal distortion (per-component scale and
// shift) is undone by the diagonal update, a pure shift by the offset
// update; each restricted estimate is the maximum of the objective over its
// parameters (no small change of a_ii or b_i does better), and the full
// update reaches at least the diagonal one's objective. The prior of the
// full update (FmllrOptions::prior_frames) moves its estimate from the full
// one (no prior) to the diagonal one (a prior of many frames), maximising
// the objective less the prior's penalty. The block update (three diagonal
// blocks) undoes a block-diagonal distortion, keeps the entries outside its
// blocks at zero, is a maximum over its own entries, and lies between the
// diagonal and the full update's objectives; a dimension that does not
// split into three blocks is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "common/backends/backend_registry.h"
#include "common/fmllr/fmllr_estimate.h"
#include "common/fmllr/fmllr_stats.h"
#include "common/fmllr/fmllr_transform.h"
#include "common/fmllr/online_fmllr.h"
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

// Statistics at the identity of `frames` frames drawn from a test model of
// dimension d and put through a random affine distortion (the draws of
// `seed`).
FmllrStats distorted_stats(int d, unsigned seed, int64_t frames) {
  std::mt19937 rng(seed);
  const GaussianMixtures gm = fmllr_test_model(d, 1, 8, 3, rng);
  std::vector<int32_t> senones;
  const std::vector<float> clean = draw_features(gm, frames, senones, rng);
  const FmllrTransform distortion = testing::random_affine(d, 0.3, rng);
  std::vector<float> x(clean.size());
  apply_fmllr_reference(distortion, clean.data(), frames, x.data());
  return stats_at(gm, x, senones, FmllrTransform::identity(d));
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
    // The start, then every sweep of the row updates; the block update's
    // diagonal start before its sweeps.
    EXPECT_EQ(est.objective.size(), type == FmllrUpdateType::kFull    ? 11u
                                    : type == FmllrUpdateType::kBlock ? 12u
                                                                      : 2u);
    w = est.transform;
  }
  return w;
}

TEST(FmllrUpdateTypes, NamesRoundTrip) {
  for (FmllrUpdateType t : {FmllrUpdateType::kFull, FmllrUpdateType::kBlock, FmllrUpdateType::kDiag,
                            FmllrUpdateType::kOffset}) {
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
  const int d = 5;
  const FmllrStats st = distorted_stats(d, 13, 3000);
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

TEST(FmllrUpdateTypes, BlockUndoesABlockDiagonalDistortion) {
  std::mt19937 rng(19);
  const int d = 6, size = d / kFmllrBlocks;
  const GaussianMixtures gm = fmllr_test_model(d, 2, 12, 2, rng);
  std::vector<int32_t> senones;
  const std::vector<float> clean = draw_features(gm, 8000, senones, rng);
  // Each block mixed within itself, and shifted.
  FmllrTransform distortion = testing::random_affine(d, 0.3, rng);
  for (int i = 0; i < d; ++i)
    for (int j = 0; j < d; ++j)
      if (i / size != j / size) distortion.at(i, j) = 0.0;
  std::vector<float> x(clean.size());
  apply_fmllr_reference(distortion, clean.data(), 8000, x.data());
  const FmllrTransform w = em(gm, x, senones, FmllrUpdateType::kBlock, 4);
  EXPECT_EQ(fmllr_transform_update_type(w), FmllrUpdateType::kBlock);
  // W o distortion, the identity's A and a zero offset.
  double worst = 0.0;
  for (int i = 0; i < d; ++i) {
    for (int j = 0; j < d; ++j) {
      if (i / size != j / size) {
        EXPECT_EQ(w.at(i, j), 0.0) << "entry outside the blocks " << i << "," << j;
      }
      double m = 0.0;
      for (int r = 0; r < d; ++r) m += w.at(i, r) * distortion.at(r, j);
      worst = std::max(worst, std::fabs(m - (i == j ? 1.0 : 0.0)));
    }
    double b = w.at(i, d);
    for (int r = 0; r < d; ++r) b += w.at(i, r) * distortion.at(r, d);
    worst = std::max(worst, std::fabs(b) / 3.0);
  }
  std::printf("block update: largest deviation of W o distortion from the identity %.4f\n", worst);
  EXPECT_LT(worst, 0.05);
  // The diagonal update cannot undo the mixing within the blocks.
  const FmllrTransform diag = em(gm, x, senones, FmllrUpdateType::kDiag, 4);
  double diag_worst = 0.0;
  for (int i = 0; i < d; ++i)
    for (int j = 0; j < d; ++j) {
      const double m = diag.at(i, i) * distortion.at(i, j);
      diag_worst = std::max(diag_worst, std::fabs(m - (i == j ? 1.0 : 0.0)));
    }
  EXPECT_GT(diag_worst, 4.0 * worst);
}

TEST(FmllrUpdateTypes, BlockIsItsEntriesMaximumBetweenDiagonalAndFull) {
  const int d = 6, size = d / kFmllrBlocks;
  const FmllrStats st = distorted_stats(d, 23, 3000);
  FmllrOptions opt;
  opt.update = FmllrUpdateType::kBlock;
  opt.iterations = 30;
  // The start transform does not matter, as for diag and offset.
  std::mt19937 rng(5);
  const FmllrTransform start = testing::random_affine(d, 0.1, rng);
  const FmllrEstimate est = estimate_fmllr(st, opt, &start);
  ASSERT_EQ(est.outcome, FmllrOutcome::kUpdated) << est.message;
  const FmllrEstimate again = estimate_fmllr(st, opt);
  EXPECT_EQ(again.transform.w, est.transform.w);
  const double best = fmllr_objective(st, est.transform);
  EXPECT_NEAR(best / st.beta, est.objective.back(), 1e-9 * std::fabs(best));
  for (size_t k = 2; k < est.objective.size(); ++k)
    EXPECT_GE(est.objective[k], est.objective[k - 1] - 1e-12) << "sweep " << k - 1;
  for (int i = 0; i < d; ++i)
    for (int col = 0; col <= d; ++col) {
      if (col < d && col / size != i / size) {
        EXPECT_EQ(est.transform.at(i, col), 0.0);
        continue;
      }
      for (double step : {-1e-3, 1e-3}) {
        FmllrTransform t = est.transform;
        t.at(i, col) += step;
        EXPECT_LE(fmllr_objective(st, t), best + 1e-9 * std::fabs(best))
            << "entry " << i << "," << col << " step " << step;
      }
    }
  FmllrOptions diag_opt;
  diag_opt.update = FmllrUpdateType::kDiag;
  const FmllrEstimate diag = estimate_fmllr(st, diag_opt);
  const FmllrEstimate full = estimate_fmllr(st, FmllrOptions{}, &est.transform);
  ASSERT_EQ(full.outcome, FmllrOutcome::kUpdated) << full.message;
  // The random distortion mixes across blocks: strictly between.
  EXPECT_GT(est.objective.back(), diag.objective.back() + 1e-3);
  EXPECT_GT(full.objective.back(), est.objective.back() + 1e-3);

  // A dimension that three blocks do not divide: refused, start kept.
  const FmllrStats odd = distorted_stats(5, 29, 3000);
  const FmllrEstimate refused = estimate_fmllr(odd, opt);
  EXPECT_EQ(refused.outcome, FmllrOutcome::kRefused);
  EXPECT_NE(refused.message.find("divisible by 3"), std::string::npos) << refused.message;
  EXPECT_EQ(refused.transform.w, FmllrTransform::identity(5).w);
}

// The penalty of the prior as fmllr_estimate.h defines it.
double prior_penalty(const FmllrStats& st, double tau, const FmllrTransform& w,
                     const FmllrTransform& v) {
  const int d = st.dim, n = d + 1;
  double pen = 0.0;
  for (int i = 0; i < d; ++i) {
    const double* g = st.g_matrix(i);
    for (int p = 0; p < n; ++p)
      for (int r = 0; r < n; ++r)
        pen += (w.at(i, p) - v.at(i, p)) * g[p * n + r] * (w.at(i, r) - v.at(i, r));
  }
  return 0.5 * tau / st.beta * pen;
}

double distance(const FmllrTransform& a, const FmllrTransform& b) {
  double s = 0.0;
  for (size_t j = 0; j < a.w.size(); ++j) s += (a.w[j] - b.w[j]) * (a.w[j] - b.w[j]);
  return std::sqrt(s);
}

TEST(FmllrUpdateTypes, APriorDrawsTheFullEstimateToTheDiagonalOne) {
  const int d = 5;
  const FmllrStats st = distorted_stats(d, 17, 2000);

  FmllrOptions diag_opt;
  diag_opt.update = FmllrUpdateType::kDiag;
  const FmllrEstimate diag = estimate_fmllr(st, diag_opt);
  const FmllrEstimate full = estimate_fmllr(st, FmllrOptions{});
  ASSERT_EQ(diag.outcome, FmllrOutcome::kUpdated) << diag.message;
  ASSERT_EQ(full.outcome, FmllrOutcome::kUpdated) << full.message;
  // The distortion mixes the dimensions: the two estimates differ.
  ASSERT_GT(distance(full.transform, diag.transform), 0.05);

  // A prior for a diagonal update is no prior: the options say full only.
  diag_opt.prior_frames = 1000.0;
  EXPECT_EQ(estimate_fmllr(st, diag_opt).transform.w, diag.transform.w);

  double last_distance = distance(full.transform, diag.transform);
  double last_q = fmllr_objective(st, full.transform);
  for (double tau : {100.0, 1000.0, 10000.0, 1e8}) {
    FmllrOptions opt;
    opt.prior_frames = tau;
    opt.iterations = 30;
    const FmllrEstimate est = estimate_fmllr(st, opt);
    ASSERT_EQ(est.outcome, FmllrOutcome::kUpdated) << est.message;
    // Nearer the diagonal estimate as the prior grows, the objective of the
    // data alone lower, never below the diagonal estimate's.
    const double dist = distance(est.transform, diag.transform);
    const double q = fmllr_objective(st, est.transform);
    EXPECT_LT(dist, last_distance) << "tau " << tau;
    EXPECT_LE(q, last_q + 1e-9 * std::fabs(q)) << "tau " << tau;
    EXPECT_GE(q, fmllr_objective(st, diag.transform) - 1e-9 * std::fabs(q)) << "tau " << tau;
    last_distance = dist;
    last_q = q;
    // The maximum of the objective less the penalty: no small change of an
    // entry does better.
    const double best = q - prior_penalty(st, tau, est.transform, diag.transform);
    for (int i = 0; i < d; ++i)
      for (int col = 0; col <= d; ++col)
        for (double step : {-1e-3, 1e-3}) {
          FmllrTransform t = est.transform;
          t.at(i, col) += step;
          EXPECT_LE(fmllr_objective(st, t) - prior_penalty(st, tau, t, diag.transform),
                    best + 1e-9 * std::fabs(best))
              << "tau " << tau << " entry " << i << "," << col << " step " << step;
        }
  }
  // Many more frames of prior than of data: the diagonal estimate.
  EXPECT_LT(last_distance, 1e-4);
}

}  // namespace
}  // namespace gpuspeech
