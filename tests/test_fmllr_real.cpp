// fMLLR on real speech with the en-us model: unsupervised statistics (the
// Recognizer does not expose per-frame senone alignments yet, so there is no
// supervised real-data test), estimation, and the per-frame log-likelihood
// before and after the transform:
//  - under the flat top-4 mixture the statistics came from (what EM
//    guarantees not to decrease, up to the top-4 approximation), and
//  - of the best senone of each frame (the acoustic scorer, full mixtures),
// both with the Jacobian ln|det A| added. On the LibriVox utterance as
// recorded, and on a copy with a spectral tilt (y[n] = x[n] + 0.8 x[n-1]),
// a channel mismatch fMLLR should largely undo.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "common/backends/backend_registry.h"
#include "common/features/feature_pipeline.h"
#include "common/fmllr/fmllr_estimate.h"
#include "common/fmllr/fmllr_stats.h"
#include "common/fmllr/fmllr_transform.h"
#include "common/scoring/gaussian_scoring.h"
#include "common/model/acoustic_model.h"
#include "common/features/wav_reader.h"
#include "tests/test_backends.h"

namespace gpuspeech {
namespace {

bool have_file(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

double mean(const std::vector<double>& v) {
  double s = 0.0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

double best_senone_loglik(GaussianScorer& scorer, const std::vector<float>& feats, int64_t frames) {
  std::vector<float> scores(static_cast<size_t>(frames * scorer.num_senones()));
  scorer.score(feats.data(), frames, scores.data());
  double total = 0.0;
  for (int64_t f = 0; f < frames; ++f) {
    const float* row = scores.data() + f * scorer.num_senones();
    total += *std::max_element(row, row + scorer.num_senones());
  }
  return total / static_cast<double>(frames);
}

struct Gains {
  double flat = 0.0, best = 0.0;
};

Gains adapt(const AcousticModel& am, Backend& be, const std::vector<float>& samples,
            const std::string& what) {
  const GaussianMixtures& gm = am.mixtures();
  const FeatureMatrix feats = compute_features(am.feature_options(), be, samples.data(),
                                               static_cast<int64_t>(samples.size()));
  EXPECT_EQ(feats.dim, gm.feature_dim());
  UnsupervisedPosteriors posteriors(gm, be, 4);
  std::vector<double> ll_before, ll_after;
  posteriors.set_log_likelihood_output(&ll_before);
  const GaussianPosteriors post = posteriors.compute(feats.data.data(), feats.rows);
  FmllrAccumulator acc(gm, be);
  acc.accumulate(feats.data.data(), feats.rows, post);
  const FmllrEstimate est = estimate_fmllr(acc.stats());
  EXPECT_EQ(est.outcome, FmllrOutcome::kUpdated) << est.message;
  EXPECT_EQ(est.regularised_dims, 0) << est.message;
  for (size_t i = 1; i < est.objective.size(); ++i)
    EXPECT_GE(est.objective[i], est.objective[i - 1] - 1e-9 * std::fabs(est.objective[i - 1]));

  std::vector<float> adapted(feats.data.size());
  FmllrApplier app(be, feats.dim);
  app.set_transform(est.transform);
  app.apply(feats.data.data(), feats.rows, adapted.data());
  const double logdet = est.transform.log_abs_det();
  posteriors.set_log_likelihood_output(&ll_after);
  posteriors.compute(adapted.data(), feats.rows);
  Gains g;
  g.flat = mean(ll_after) + logdet - mean(ll_before);

  ScorerOptions so;
  so.top_n = 4;
  GaussianScorer scorer(gm, be, so);
  const double best_before = best_senone_loglik(scorer, feats.data, feats.rows);
  const double best_after = best_senone_loglik(scorer, adapted, feats.rows) + logdet;
  g.best = best_after - best_before;
  std::printf("%s: %lld frames, objective/frame %.3f -> %.3f, ln|det A| %.3f; "
              "flat top-4 log-likelihood/frame %.3f -> %.3f (+%.3f); "
              "best senone %.3f -> %.3f (+%.3f)\n",
              what.c_str(), static_cast<long long>(feats.rows), est.objective.front(),
              est.objective.back(), logdet, mean(ll_before), mean(ll_after) + logdet, g.flat,
              best_before, best_after, g.best);
  return g;
}

TEST(FmllrReal, LibriVoxLikelihoodIncreases) {
  const std::string model = testing::model_dir() + "/en-us/en-us";
  const std::string wav = testing::audio_dir() +
                          "/librivox/sense_and_sensibility_01_austen_64kb-0870.wav";
  if (!have_file(model + "/mdef") || !have_file(wav))
    GTEST_SKIP() << "pocketsphinx-en-us or pocketsphinx-testdata not installed";
  const AcousticModel am = AcousticModel::load(model);
  ASSERT_EQ(am.mixtures().feature_dim(), 39);
  BackendPtr be = make_cpu_backend();
  const AudioData audio = read_wav_file(wav);
  const Gains clean = adapt(am, *be, audio.samples, "librivox");
  EXPECT_GT(clean.flat, 0.0);
  EXPECT_GT(clean.best, 0.0);

  std::vector<float> tilted(audio.samples.size());
  for (size_t i = 0; i < tilted.size(); ++i)
    tilted[i] = 0.6f * (audio.samples[i] + (i ? 0.8f * audio.samples[i - 1] : 0.0f));
  const Gains mismatched = adapt(am, *be, tilted, "librivox, tilted");
  EXPECT_GT(mismatched.flat, 0.0);
  EXPECT_GT(mismatched.best, 0.0);
}

}  // namespace
}  // namespace gpuspeech
