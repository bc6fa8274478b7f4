// Linear VTLN (common/features/linear_vtln.h) and the warp chosen from
// fMLLR statistics (common/fmllr/vtln_choice.h).
//
// The matrix against the front end itself: on random vowel-like signals it
// takes the unwarped MFCCs most of the way to the warped front end's, and
// the matrix of the opposite warp does not (so a warp read the wrong way
// round would fail). The choice, on features put through the inverse of a
// warp's matrix: exact maximum likelihood finds that warp; the transform
// is the warp's matrix followed by a diagonal one that no small change
// improves; its objective is the fMLLR objective of that transform. The
// choice along an alignment: each warp's objective is the statistics'
// choice on statistics with that warp's own posteriors, and maximum
// likelihood finds the warp there too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "common/backends/backend_registry.h"
#include "common/features/feature_pipeline.h"
#include "common/features/linear_vtln.h"
#include "common/fmllr/fmllr_estimate.h"
#include "common/fmllr/fmllr_stats.h"
#include "common/fmllr/fmllr_transform.h"
#include "common/fmllr/vtln_choice.h"
#include "tests/fmllr_test_util.h"

namespace gpuspeech {
namespace {

FeatureOptions sphinx_mfcc() { return FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kMfcc); }

// 1.5 s of a random voiced sound: a pulse train whose pitch glides through
// three resonances that glide too, and a little noise, in 16-bit units.
std::vector<float> vowel_like(std::mt19937& rng, float rate) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const int n = static_cast<int>(1.5 * rate);
  const double f0a = 90 + 160 * u(rng), f0b = 90 + 160 * u(rng);
  double fa[3], fb[3], bw[3];
  for (int k = 0; k < 3; ++k) {
    fa[k] = 300 + 900 * k + 700 * u(rng);
    fb[k] = 300 + 900 * k + 700 * u(rng);
    bw[k] = 60 + 120 * u(rng);
  }
  std::normal_distribution<double> noise(0.0, 30.0);
  std::vector<float> x(static_cast<size_t>(n));
  double phase = 0.0, y1[3] = {0, 0, 0}, y2[3] = {0, 0, 0};
  for (int t = 0; t < n; ++t) {
    const double a = static_cast<double>(t) / n;
    phase += (f0a + (f0b - f0a) * a) / rate;
    double v = 0.0;
    if (phase >= 1.0) {
      phase -= 1.0;
      v = 3000.0;
    }
    for (int k = 0; k < 3; ++k) {  // a two-pole resonator per formant, in series
      const double f = fa[k] + (fb[k] - fa[k]) * a;
      const double r = std::exp(-M_PI * bw[k] / rate);
      const double y = v + 2 * r * std::cos(2 * M_PI * f / rate) * y1[k] - r * r * y2[k];
      y2[k] = y1[k];
      y1[k] = y;
      v = y * (1 - r);
    }
    x[static_cast<size_t>(t)] = static_cast<float>(v + noise(rng));
  }
  return x;
}

FeatureMatrix cepstra(const FeatureOptions& o, const std::vector<float>& signal, Backend& cpu) {
  FeatureExtractor fx(o, cpu);
  return fx.compute(signal.data(), static_cast<int64_t>(signal.size()));
}

// sum |M c1 - cw|² / sum |c1 - cw|² over the frames, each side less its
// mean (as CMN leaves them).
double residual_share(const std::vector<double>& m, const FeatureMatrix& c1, const FeatureMatrix& cw) {
  const int d = c1.dim;
  std::vector<double> mean1(d, 0.0), meanw(d, 0.0);
  for (int64_t r = 0; r < c1.rows; ++r)
    for (int i = 0; i < d; ++i) {
      mean1[i] += c1.row(r)[i] / c1.rows;
      meanw[i] += cw.row(r)[i] / cw.rows;
    }
  double err = 0.0, change = 0.0;
  for (int64_t r = 0; r < c1.rows; ++r)
    for (int i = 0; i < d; ++i) {
      double mapped = 0.0;
      for (int j = 0; j < d; ++j) mapped += m[static_cast<size_t>(i) * d + j] * (c1.row(r)[j] - mean1[j]);
      const double target = cw.row(r)[i] - meanw[i];
      err += (mapped - target) * (mapped - target);
      change += (c1.row(r)[i] - mean1[i] - target) * (c1.row(r)[i] - mean1[i] - target);
    }
  return err / change;
}

TEST(LinearVtln, WarpOneIsTheIdentity) {
  const std::vector<double> m = linear_vtln_matrix(sphinx_mfcc(), 1.0);
  ASSERT_EQ(m.size(), 13u * 13u);
  for (int i = 0; i < 13; ++i)
    for (int j = 0; j < 13; ++j) EXPECT_EQ(m[static_cast<size_t>(i) * 13 + j], i == j ? 1.0 : 0.0);
}

TEST(LinearVtln, TakesUnwarpedCepstraToTheWarpedFrontEnds) {
  BackendPtr cpu = make_cpu_backend();
  std::mt19937 rng(20261205);
  for (const CepstralTransform transform : {CepstralTransform::kSphinxDct, CepstralTransform::kHtkDct}) {
    FeatureOptions o = sphinx_mfcc();
    o.mfcc.transform = transform;
    for (int trial = 0; trial < 4; ++trial) {
      const std::vector<float> signal = vowel_like(rng, o.frame.sample_rate);
      const FeatureMatrix c1 = cepstra(o, signal, *cpu);
      for (const double w : {0.9, 1.1}) {
        FeatureOptions ow = o;
        ow.mel.vtln.warp = static_cast<float>(w);
        const FeatureMatrix cw = cepstra(ow, signal, *cpu);
        ASSERT_EQ(cw.rows, c1.rows);
        const double right = residual_share(linear_vtln_matrix(o, w), c1, cw);
        const double opposite = residual_share(linear_vtln_matrix(o, 2.0 - w), c1, cw);
        EXPECT_LT(right, 0.35) << "warp " << w << " trial " << trial;
        EXPECT_GT(opposite, 1.0) << "warp " << w << " trial " << trial;
      }
    }
  }
}

TEST(LinearVtln, LogEnergyInPlaceOfC0StaysPut) {
  FeatureOptions o = sphinx_mfcc();
  o.mfcc.use_energy = true;
  const std::vector<double> m = linear_vtln_matrix(o, 1.08);
  for (int k = 0; k < 13; ++k) {
    EXPECT_EQ(m[static_cast<size_t>(k)], k == 0 ? 1.0 : 0.0);
    EXPECT_EQ(m[static_cast<size_t>(k) * 13], k == 0 ? 1.0 : 0.0);
  }
  EXPECT_NE(m[1 * 13 + 2], 0.0);  // the cepstra do move
}

TEST(LinearVtln, RefusesWhatItCannotWarp) {
  FeatureOptions plp = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kPlp);
  EXPECT_THROW(linear_vtln_matrix(plp, 1.05), std::invalid_argument);
  EXPECT_THROW(linear_vtln_matrix(sphinx_mfcc(), 0.3), std::invalid_argument);
  FeatureOptions s2 = sphinx_mfcc();
  s2.delta.layout = DeltaOptions::Layout::kSphinxS2_4x;
  EXPECT_EQ(linear_vtln_blocks(s2), 0);
  EXPECT_THROW(LinearVtlnCandidates(s2, s2.output_dim()), std::invalid_argument);
  FeatureOptions three = sphinx_mfcc();
  three.delta.layout = DeltaOptions::Layout::kSphinx1sCDDd;
  EXPECT_EQ(linear_vtln_blocks(three), 3);
  EXPECT_THROW(LinearVtlnCandidates(three, 13), std::invalid_argument);
  VtlnChoiceOptions bad;
  bad.step = 0.0;
  EXPECT_THROW(LinearVtlnCandidates(three, 39, bad), std::invalid_argument);
}

// x = A_w0⁻¹ z per block, z drawn from a random 39-dimensional model:
// features that the warp w0 puts right. Gauss-Jordan on the 13 x 13 block.
std::vector<double> inverse(std::vector<double> m, int n) {
  std::vector<double> inv(static_cast<size_t>(n) * n, 0.0);
  for (int i = 0; i < n; ++i) inv[static_cast<size_t>(i) * n + i] = 1.0;
  for (int c = 0; c < n; ++c) {
    int p = c;
    for (int r = c + 1; r < n; ++r)
      if (std::fabs(m[static_cast<size_t>(r) * n + c]) > std::fabs(m[static_cast<size_t>(p) * n + c])) p = r;
    for (int k = 0; k < n; ++k) {
      std::swap(m[static_cast<size_t>(p) * n + k], m[static_cast<size_t>(c) * n + k]);
      std::swap(inv[static_cast<size_t>(p) * n + k], inv[static_cast<size_t>(c) * n + k]);
    }
    const double piv = m[static_cast<size_t>(c) * n + c];
    for (int k = 0; k < n; ++k) {
      m[static_cast<size_t>(c) * n + k] /= piv;
      inv[static_cast<size_t>(c) * n + k] /= piv;
    }
    for (int r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = m[static_cast<size_t>(r) * n + c];
      for (int k = 0; k < n; ++k) {
        m[static_cast<size_t>(r) * n + k] -= f * m[static_cast<size_t>(c) * n + k];
        inv[static_cast<size_t>(r) * n + k] -= f * inv[static_cast<size_t>(c) * n + k];
      }
    }
  }
  return inv;
}

struct WarpedSpeech {
  FeatureOptions front_end;
  GaussianMixtures model;
  std::vector<float> x;  // frames x 39
  std::vector<int32_t> senones;
  int64_t frames = 0;
};

WarpedSpeech warped_speech(double w0, unsigned seed, int streams = 1, int64_t frames = 4000) {
  WarpedSpeech w;
  w.front_end = sphinx_mfcc();
  w.front_end.delta.layout = DeltaOptions::Layout::kSphinx1sCDDd;
  std::mt19937 rng(seed);
  w.model = testing::fmllr_test_model(39, streams, 12, 3, rng);
  w.frames = frames;
  const std::vector<float> z = testing::draw_features(w.model, frames, w.senones, rng);
  const std::vector<double> back = inverse(linear_vtln_matrix(w.front_end, w0), 13);
  w.x.resize(z.size());
  for (int64_t f = 0; f < frames; ++f)
    for (int b = 0; b < 3; ++b)
      for (int i = 0; i < 13; ++i) {
        double v = 0.0;
        for (int j = 0; j < 13; ++j) v += back[static_cast<size_t>(i) * 13 + j] * z[static_cast<size_t>(f * 39 + b * 13 + j)];
        w.x[static_cast<size_t>(f * 39 + b * 13 + i)] = static_cast<float>(v);
      }
  return w;
}

// Statistics of frames [from, from + n) of the speech with posteriors on
// the features put through `t` (the identity: a first pass at warp 1), from
// the definitions.
FmllrStats stats_under(const WarpedSpeech& w, const FmllrTransform& t, int64_t from, int64_t n) {
  const float* x = w.x.data() + from * 39;
  std::vector<float> y(static_cast<size_t>(n) * 39);
  apply_fmllr_reference(t, x, n, y.data());
  return accumulate_fmllr_reference(w.model, x, n, supervised_posteriors(w.model, y.data(), n, w.senones.data() + from));
}

FmllrStats warped_stats(double w0, unsigned seed, FeatureOptions* front_end) {
  const WarpedSpeech w = warped_speech(w0, seed);
  *front_end = w.front_end;
  // Posteriors on the features as they come (a first pass at warp 1).
  const GaussianPosteriors post = supervised_posteriors(w.model, w.x.data(), w.frames, w.senones.data());
  BackendPtr cpu = make_cpu_backend();
  FmllrAccumulator acc(w.model, *cpu);
  acc.accumulate(w.x.data(), w.frames, post);
  return acc.stats();
}

TEST(VtlnChoice, MaximumLikelihoodFindsTheWarpThatMadeTheFeatures) {
  VtlnChoiceOptions exact;
  exact.warp_jacobian = true;
  unsigned seed = 7;
  for (const double w0 : {0.86, 0.94, 1.0, 1.1, 1.16}) {
    FeatureOptions fe;
    const FmllrStats stats = warped_stats(w0, ++seed, &fe);
    const LinearVtlnCandidates candidates(fe, 39, exact);
    const VtlnChoice c = choose_vtln_warp(stats, candidates, exact);
    EXPECT_NEAR(c.warp, w0, 1e-9) << "seed " << seed;
    EXPECT_GE(c.objective, c.unwarped_objective);
  }
}

TEST(VtlnChoice, TheTransformIsTheWarpThenTheBestDiagonal) {
  FeatureOptions fe;
  const FmllrStats stats = warped_stats(1.08, 99, &fe);
  for (const bool jacobian : {false, true}) {
    VtlnChoiceOptions o;
    o.warp_jacobian = jacobian;
    const LinearVtlnCandidates candidates(fe, 39, o);
    const VtlnChoice c = choose_vtln_warp(stats, candidates, o);
    size_t k = 0;
    while (candidates.warps()[k] != c.warp) ++k;
    EXPECT_EQ(c.index, k);
    const FmllrTransform& warp = candidates.transform(k);
    // Row i is a_i times the warp's row i: one ratio over the row's block.
    for (int i = 0; i < 39; ++i) {
      const int lo = i / 13 * 13;
      const double a = c.transform.at(i, i) / warp.at(i, i);
      for (int j = 0; j < 39; ++j) {
        if (j < lo || j >= lo + 13)
          EXPECT_EQ(c.transform.at(i, j), 0.0);
        else
          EXPECT_NEAR(c.transform.at(i, j), a * warp.at(i, j), 1e-9 * std::fabs(a) + 1e-12);
      }
    }
    const double jac = jacobian ? 0.0 : warp.log_abs_det();
    EXPECT_NEAR(c.objective, fmllr_objective(stats, c.transform) / stats.beta - jac, 1e-9);
    // No small change of a row's scale or offset does better.
    for (int i : {0, 5, 13, 38})
      for (const double step : {1e-3, -1e-3})
        for (const bool offset : {false, true}) {
          FmllrTransform t = c.transform;
          if (offset) {
            t.at(i, 39) += step;
          } else {
            for (int j = i / 13 * 13; j < i / 13 * 13 + 13; ++j) t.at(i, j) *= 1.0 + step;
          }
          EXPECT_LE(fmllr_objective(stats, t), fmllr_objective(stats, c.transform) + 1e-9 * stats.beta)
              << "row " << i << " offset " << offset << " step " << step;
        }
  }
}

// The choice along an alignment is the statistics' choice made once per
// warp, each on statistics whose posteriors came from that warp's
// features: every candidate's objective is choose_vtln_warp's for that
// candidate on such statistics (from the definitions, in double, the
// earlier speech's added), the largest is chosen, and its transform has
// that objective. Three streams, two stretches of speech and earlier
// statistics whose frames are gone.
TEST(VtlnChoice, OnAnAlignmentEachWarpIsScoredWithItsOwnPosteriors) {
  const WarpedSpeech w = warped_speech(1.12, 5, 3, 1800);
  // Frames [0, 500): earlier speech, known by its statistics alone (at
  // warp 1); [500, 1200) and [1200, 1800) the stretches, a few frames
  // unaligned.
  std::vector<int32_t> senones = w.senones;
  for (int64_t f = 600; f < 640; ++f) senones[static_cast<size_t>(f)] = -1;
  const FmllrStats earlier = stats_under(w, FmllrTransform::identity(39), 0, 500);
  const std::vector<AlignedFrames> speech = {{w.x.data() + 500 * 39, 700, senones.data() + 500},
                                             {w.x.data() + 1200 * 39, 600, senones.data() + 1200}};
  for (const bool jacobian : {false, true}) {
    VtlnChoiceOptions o;
    o.warp_jacobian = jacobian;
    const LinearVtlnCandidates candidates(w.front_end, 39, o);
    const VtlnChoice c = choose_vtln_warp_on_alignment(speech, w.model, candidates, &earlier, o);
    ASSERT_EQ(c.objectives.size(), candidates.warps().size());
    WarpedSpeech masked = w;
    masked.senones = senones;
    std::vector<double> expected;
    std::vector<FmllrStats> stats;
    for (size_t k = 0; k < candidates.warps().size(); ++k) {
      FmllrStats st = earlier;
      st.add(stats_under(masked, candidates.transform(k), 500, 1300));
      expected.push_back(choose_vtln_warp(st, candidates, o).objectives[k]);
      stats.push_back(std::move(st));
      EXPECT_NEAR(c.objectives[k], expected[k], 1e-6 * std::fabs(expected[k]) + 1e-9) << "warp " << k;
    }
    const size_t best = static_cast<size_t>(std::max_element(expected.begin(), expected.end()) - expected.begin());
    const FmllrStats& best_stats = stats[best];
    EXPECT_EQ(c.index, best);
    EXPECT_EQ(c.warp, candidates.warps()[best]);
    EXPECT_EQ(c.objective, c.objectives[best]);
    const double jac = jacobian ? 0.0 : candidates.transform(best).log_abs_det();
    EXPECT_NEAR(c.objective, fmllr_objective(best_stats, c.transform) / best_stats.beta - jac, 1e-6);
    // The candidates' warp 1 is the identity: its objective is the unwarped one.
    size_t one = 0;
    while (candidates.warps()[one] != 1.0) ++one;
    EXPECT_EQ(c.unwarped_objective, c.objectives[one]);
  }
}

// Exact maximum likelihood along the alignment finds the warp that made the
// features, as it does from the statistics.
TEST(VtlnChoice, OnAnAlignmentMaximumLikelihoodFindsTheWarpThatMadeTheFeatures) {
  VtlnChoiceOptions exact;
  exact.warp_jacobian = true;
  unsigned seed = 17;
  for (const double w0 : {0.86, 1.0, 1.16}) {
    const WarpedSpeech w = warped_speech(w0, ++seed);
    const LinearVtlnCandidates candidates(w.front_end, 39, exact);
    const VtlnChoice c = choose_vtln_warp_on_alignment({{w.x.data(), w.frames, w.senones.data()}}, w.model,
                                                       candidates, nullptr, exact);
    EXPECT_NEAR(c.warp, w0, 1e-9) << "seed " << seed;
    EXPECT_GE(c.objective, c.unwarped_objective);
  }
}

TEST(VtlnChoice, OnAnAlignmentRefusesWhatDoesNotFit) {
  const WarpedSpeech w = warped_speech(1.0, 3, 1, 200);
  const LinearVtlnCandidates candidates(w.front_end, 39);
  const std::vector<AlignedFrames> speech = {{w.x.data(), w.frames, w.senones.data()}};
  std::mt19937 rng(1);
  const GaussianMixtures small = testing::fmllr_test_model(13, 1, 4, 2, rng);
  EXPECT_THROW(choose_vtln_warp_on_alignment(speech, small, candidates), std::invalid_argument);
  const FmllrStats fitting = stats_under(w, FmllrTransform::identity(39), 0, 100);
  FmllrStats short_stats(13);
  short_stats.beta = 5.0;
  EXPECT_THROW(choose_vtln_warp_on_alignment(speech, w.model, candidates, &short_stats), std::invalid_argument);
  EXPECT_NO_THROW(choose_vtln_warp_on_alignment(speech, w.model, candidates, &fitting));
  EXPECT_THROW(choose_vtln_warp_on_alignment({{nullptr, 10, w.senones.data()}}, w.model, candidates),
               std::invalid_argument);
  std::vector<int32_t> none(static_cast<size_t>(w.frames), -1);
  EXPECT_THROW(choose_vtln_warp_on_alignment({{w.x.data(), w.frames, none.data()}}, w.model, candidates),
               std::invalid_argument);
  EXPECT_THROW(choose_vtln_warp_on_alignment({}, w.model, candidates), std::invalid_argument);
  std::vector<int32_t> bad = w.senones;
  bad[3] = 12;  // the model has 12 senones
  EXPECT_THROW(choose_vtln_warp_on_alignment({{w.x.data(), w.frames, bad.data()}}, w.model, candidates),
               std::invalid_argument);
}

TEST(VtlnChoice, RefusesStatisticsThatDoNotFit) {
  FeatureOptions fe = sphinx_mfcc();
  fe.delta.layout = DeltaOptions::Layout::kSphinx1sCDDd;
  const LinearVtlnCandidates candidates(fe, 39);
  EXPECT_EQ(candidates.warps().front(), 0.8);
  EXPECT_EQ(candidates.warps().back(), 1.2);
  EXPECT_EQ(candidates.warps().size(), 21u);
  EXPECT_THROW(choose_vtln_warp(FmllrStats(13), candidates), std::invalid_argument);
  EXPECT_THROW(choose_vtln_warp(FmllrStats(39), candidates), std::invalid_argument);  // no frames
}

}  // namespace
}  // namespace gpuspeech
