// Acoustic scoring on the CPU reference backend against a direct
// double-precision evaluation (tests/gaussian_reference.h), the senone
// log-sum-exp operation on hand-checked numbers, the model's validation,
// and what centring the features buys in float32.
//
// Tolerance: 1e-3 nats absolute on senone log-likelihoods of magnitude
// ~100. The float32 pipeline's own error is about 1e-5 to 1e-4 here (printed
// per case); 1e-3 is what a decoder can afford: pocketsphinx scores in
// integer steps of ln(1.0001) = 1e-4 nats and quantises mixture weights to
// 8 bits (sendump), and beams are tens of nats wide. A systematic error
// would show up far above it (a wrong constant, variance or weight moves
// scores by whole nats).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/backends/backend_compare.h"
#include "common/backends/backend_registry.h"
#include "common/features/feature_pipeline.h"
#include "common/scoring/gaussian_scoring.h"
#include "common/model/acoustic_model.h"
#include "common/model/gaussian_mixtures.h"
#include "common/features/wav_reader.h"
#include "tests/gaussian_reference.h"
#include "tests/test_backends.h"

namespace gpuspeech {
namespace {

using testing::RandomModelSpec;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr double kTolerance = 1e-3;

// --- GaussianMixtures::validate --------------------------------------------

GaussianMixtures tiny_model() {
  GaussianMixtures gm;
  gm.stream_components = {{0, 1}, {2}};
  gm.num_codebooks = 2;
  gm.gaussians_per_codebook = 2;
  gm.num_senones = 3;
  gm.means = {std::vector<float>(8, 0.5f), std::vector<float>(4, -0.5f)};
  gm.variances = {std::vector<float>(8, 2.0f), std::vector<float>(4, 0.25f)};
  gm.senone_codebook = {0, 1, 1};
  gm.log_weights = std::vector<float>(3 * 2 * 2, std::log(0.5f));
  return gm;
}

void expect_invalid(const GaussianMixtures& gm, const std::string& fragment) {
  try {
    gm.validate();
    ADD_FAILURE() << "validate() accepted a model that should fail with '" << fragment << "'";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(GaussianMixtures, FeatureDimAndValidModel) {
  const GaussianMixtures gm = tiny_model();
  EXPECT_EQ(gm.feature_dim(), 3);
  EXPECT_EQ(gm.num_streams(), 2);
  EXPECT_EQ(gm.stream_dim(0), 2);
  EXPECT_NO_THROW(gm.validate());
}

TEST(GaussianMixtures, RejectsInconsistencies) {
  GaussianMixtures gm = tiny_model();
  gm.stream_components = {};
  expect_invalid(gm, "no feature streams");

  gm = tiny_model();
  gm.stream_components[1] = {};
  expect_invalid(gm, "stream 1 has no feature components");

  gm = tiny_model();
  gm.stream_components[1] = {1};
  expect_invalid(gm, "feature component 1 is in stream 0 and stream 1");

  gm = tiny_model();
  gm.stream_components[1] = {3};
  expect_invalid(gm, "names feature component 3, outside 0..2");

  gm = tiny_model();
  gm.num_codebooks = 0;
  expect_invalid(gm, "num_codebooks is 0");

  gm = tiny_model();
  gm.means[0].pop_back();
  expect_invalid(gm, "stream 0: means hold 7 values, expected 2 codebooks x 2 Gaussians");

  gm = tiny_model();
  gm.variances.pop_back();
  expect_invalid(gm, "one entry per stream");

  gm = tiny_model();
  gm.variances[1][3] = 0.0f;  // codebook 1, Gaussian 1, component 0
  expect_invalid(gm, "stream 1, codebook 1, Gaussian 1, component 0: variance");

  gm = tiny_model();
  gm.variances[0][5] = -1.0f;
  expect_invalid(gm, "stream 0, codebook 1, Gaussian 0, component 1: variance");

  gm = tiny_model();
  gm.means[0][2] = std::numeric_limits<float>::quiet_NaN();
  expect_invalid(gm, "mean is not finite");

  gm = tiny_model();
  gm.senone_codebook[2] = 2;
  expect_invalid(gm, "senone 2 uses codebook 2, outside 0..1");

  gm = tiny_model();
  gm.senone_codebook.pop_back();
  expect_invalid(gm, "senone_codebook holds 2 entries for 3 senones");

  gm = tiny_model();
  gm.log_weights.push_back(0.0f);
  expect_invalid(gm, "log_weights hold 13 values");

  gm = tiny_model();
  gm.log_weights[5] = std::numeric_limits<float>::quiet_NaN();
  expect_invalid(gm, "senone 1, stream 0, component 1: log weight is");

  gm = tiny_model();
  gm.log_weights[0] = std::numeric_limits<float>::infinity();
  expect_invalid(gm, "senone 0, stream 0, component 0: log weight is");

  gm = tiny_model();
  gm.log_weights[10] = gm.log_weights[11] = kNegInf;
  expect_invalid(gm, "senone 2, stream 1: every mixture weight is zero");
  gm.log_weights[11] = 0.0f;  // one component left: fine
  EXPECT_NO_THROW(gm.validate());
}

// --- Backend::senone_scores on the CPU --------------------------------------

BufferPtr upload(Backend& b, const std::vector<float>& v) {
  BufferPtr buf = b.alloc(v.size());
  b.upload(*buf, v.data(), v.size());
  return buf;
}

std::vector<float> download(Backend& b, const DeviceBuffer& buf) {
  std::vector<float> v(buf.size());
  b.download(buf, v.data(), v.size());
  return v;
}

double lse(std::initializer_list<double> v) {
  double s = 0.0;
  for (double x : v) s += std::exp(x);
  return std::log(s);
}

TEST(SenoneScores, HandCheckedOnCpu) {
  BackendPtr cpu = make_cpu_backend();
  // 3 Gaussians x 2 frames, gaussian-major.
  const std::vector<float> dens = {-10.f, -20.f,   // g0
                                   -12.f, kNegInf,  // g1
                                   -300.f, -1.f};   // g2
  // 2 senones x 2 streams:
  //   s0 t0: {g0 w=ln .3, g1 w=ln .7}; s0 t1: {g2 w=0}
  //   s1 t0: {g1 w=-inf, g2 w=ln .5, g0 w=ln .5}; s1 t1: {} (empty: -inf)
  const std::vector<float> offsets = {0, 2, 3, 6, 6};
  const std::vector<float> gauss = {0, 1, 2, 1, 2, 0};
  const std::vector<float> logw = {std::log(.3f), std::log(.7f), 0.f, kNegInf,
                                   std::log(.5f), std::log(.5f)};
  BufferPtr d = upload(*cpu, dens), o = upload(*cpu, offsets), g = upload(*cpu, gauss),
            w = upload(*cpu, logw);
  BufferPtr out = upload(*cpu, std::vector<float>(1 + 2 * 2 + 1, 7.f));
  cpu->senone_scores(*d, 3, 2, *o, *g, *w, 2, 2, *out, 1);
  const std::vector<float> r = download(*cpu, *out);
  EXPECT_EQ(r[0], 7.f);  // before out_offset: untouched
  EXPECT_EQ(r[5], 7.f);  // after the result: untouched
  // frame 0
  EXPECT_NEAR(r[1], lse({std::log(.3) - 10, std::log(.7) - 12}) + -300.0, 1e-4);
  EXPECT_EQ(r[2], kNegInf);
  // frame 1: g1 is -inf, so s0 t0 is ln .3 - 20
  EXPECT_NEAR(r[3], (std::log(.3) - 20) + -1.0, 1e-4);
  EXPECT_EQ(r[4], kNegInf);

  // Same CSR, one stream per senone row pair read as 4 senones x 1 stream.
  BufferPtr out4 = cpu->alloc(2 * 4);
  cpu->senone_scores(*d, 3, 2, *o, *g, *w, 4, 1, *out4);
  const std::vector<float> r4 = download(*cpu, *out4);
  EXPECT_NEAR(r4[2], lse({std::log(.5) - 300, std::log(.5) - 10}), 1e-4);  // s2, frame 0
  EXPECT_NEAR(r4[4 + 2], lse({std::log(.5) - 1, std::log(.5) - 20}), 1e-4);  // s2, frame 1
  EXPECT_EQ(r4[3], kNegInf);
}

TEST(SenoneScores, NaNPropagatesOnCpu) {
  BackendPtr cpu = make_cpu_backend();
  // 3 Gaussians x 5 frames (past the four-wide loop): frame 1 of g1 is NaN.
  std::vector<float> dens(15, -2.f);
  dens[5 + 1] = NAN;
  dens[0 + 1] = dens[10 + 1] = kNegInf;
  BufferPtr d = upload(*cpu, dens), o = upload(*cpu, {0, 3, 5}), g = upload(*cpu, {0, 1, 2, 0, 2}),
            w = upload(*cpu, {0, 0, 0, 0, 0}), out = cpu->alloc(10);
  cpu->senone_scores(*d, 3, 5, *o, *g, *w, 2, 1, *out);
  const std::vector<float> r = download(*cpu, *out);
  EXPECT_TRUE(std::isnan(r[1 * 2 + 0]));  // senone 0 reads g1 at frame 1
  EXPECT_EQ(r[1 * 2 + 1], kNegInf);       // senone 1 does not: all -inf
  EXPECT_NEAR(r[0], -2.0 + std::log(3.0), 1e-5);
  EXPECT_NEAR(r[4 * 2 + 1], -2.0 + std::log(2.0), 1e-5);
}

TEST(SenoneScores, LargeRangeIsStable) {
  // Terms far apart in either order: no overflow, no loss of the maximum.
  BackendPtr cpu = make_cpu_backend();
  const std::vector<float> dens = {-1000.f, -5.f, -5.f, -1000.f};  // 4 Gaussians, 1 frame
  const std::vector<float> offsets = {0, 4};
  const std::vector<float> gauss = {0, 1, 2, 3};
  const std::vector<float> logw = {0.f, 0.f, 0.f, 0.f};
  BufferPtr d = upload(*cpu, dens), o = upload(*cpu, offsets), g = upload(*cpu, gauss),
            w = upload(*cpu, logw), out = cpu->alloc(1);
  cpu->senone_scores(*d, 4, 1, *o, *g, *w, 1, 1, *out);
  EXPECT_NEAR(download(*cpu, *out)[0], -5.0 + std::log(2.0), 1e-5);
}

// The CPU's senone_scores against a double log-sum-exp of the same float
// inputs; returns max |error| / (abs_scale + |want|).
double cpu_lse_error(std::mt19937& rng, int64_t frames, float dens_lo, float dens_hi,
                     float weight_lo, double abs_scale) {
  BackendPtr cpu = make_cpu_backend();
  std::uniform_real_distribution<float> uni(0.f, 1.f);
  const int gaussians = 50, senones = 40, streams = 2;
  std::vector<float> dens(static_cast<size_t>(gaussians) * frames);
  for (float& d : dens) d = dens_lo + (dens_hi - dens_lo) * uni(rng);
  std::vector<float> offsets{0.f}, gauss, logw;
  for (int r = 0; r < senones * streams; ++r) {
    const int n = 1 + static_cast<int>(rng() % 40);
    for (int j = 0; j < n; ++j) {
      gauss.push_back(static_cast<float>(rng() % gaussians));
      logw.push_back(weight_lo * uni(rng));
    }
    offsets.push_back(static_cast<float>(gauss.size()));
  }
  BufferPtr d = upload(*cpu, dens), o = upload(*cpu, offsets), g = upload(*cpu, gauss),
            w = upload(*cpu, logw), out = cpu->alloc(static_cast<size_t>(frames) * senones);
  cpu->senone_scores(*d, gaussians, frames, *o, *g, *w, senones, streams, *out);
  const std::vector<float> got = download(*cpu, *out);
  double worst = 0.0;
  for (int64_t f = 0; f < frames; ++f)
    for (int s = 0; s < senones; ++s) {
      double want = 0.0;
      for (int t = 0; t < streams; ++t) {
        const int r = s * streams + t;
        const auto term = [&](int j) {
          return double(logw[j]) + dens[static_cast<size_t>(gauss[j]) * frames + f];
        };
        double top = -INFINITY, sum = 0.0;
        for (int j = static_cast<int>(offsets[r]); j < static_cast<int>(offsets[r + 1]); ++j)
          top = std::max(top, term(j));
        for (int j = static_cast<int>(offsets[r]); j < static_cast<int>(offsets[r + 1]); ++j)
          sum += std::exp(term(j) - top);
        want += top + std::log(sum);
      }
      worst = std::max(worst, std::fabs(got[f * senones + s] - want) / (abs_scale + std::fabs(want)));
    }
  return worst;
}

TEST(SenoneScores, CpuMatchesDoubleLogSumExp) {
  // Frame counts that exercise the four-wide loops and their scalar tails.
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (int64_t frames : {1, 3, 4, 67, 131}) {
    // Terms within 20 nats of each other and results near zero: the sum's
    // share of the result is large, so an exp off by 1e-6 relative would
    // show; float rounding leaves ~1e-7 nats.
    EXPECT_LT(cpu_lse_error(rng, frames, -18.f, 0.f, -2.f, 1.0), 1e-6) << frames << " frames";
    // Terms spread over 120 nats (past the exp's floor) on realistic scores:
    // float rounding of the result, a few 1e-8 relative.
    EXPECT_LT(cpu_lse_error(rng, frames, -150.f, -30.f, -5.f, 0.0), 3e-7) << frames << " frames";
  }
}

TEST(SenoneScores, CpuRejectsBadCsrAndSizes) {
  BackendPtr cpu = make_cpu_backend();
  BufferPtr d = upload(*cpu, std::vector<float>(6, -1.f));
  BufferPtr g = upload(*cpu, {0, 1, 2});
  BufferPtr w = upload(*cpu, {0, 0, 0});
  BufferPtr out = cpu->alloc(4);
  const auto run = [&](const std::vector<float>& offsets, const std::vector<float>& gauss) {
    BufferPtr o = upload(*cpu, offsets), gg = upload(*cpu, gauss);
    cpu->senone_scores(*d, 3, 2, *o, *gg, *w, 2, 1, *out);
  };
  EXPECT_NO_THROW(run({0, 1, 3}, {0, 1, 2}));
  EXPECT_THROW(run({0, 2, 1}, {0, 1, 2}), BackendError);    // decreasing
  EXPECT_THROW(run({1, 2, 3}, {0, 1, 2}), BackendError);    // offsets[0] != 0
  EXPECT_THROW(run({0, 1, 4}, {0, 1, 2, 0}), BackendError); // more entries than logw holds
  // A Gaussian index out of range is clamped, as on the devices.
  run({0, 1, 3}, {0, 1, 2});
  const std::vector<float> in_range = download(*cpu, *out);
  run({0, 1, 3}, {0, 1, 7});
  EXPECT_EQ(download(*cpu, *out), in_range);
  EXPECT_THROW(run({0, 1.5f, 3}, {0, 1, 2}), BackendError); // not whole
  BufferPtr o = upload(*cpu, {0, 1, 3});
  BufferPtr small = cpu->alloc(3);
  EXPECT_THROW(cpu->senone_scores(*d, 3, 2, *o, *g, *w, 2, 1, *small), BackendError);
  EXPECT_THROW(cpu->senone_scores(*d, 4, 2, *o, *g, *w, 2, 1, *out), BackendError);
  EXPECT_THROW(cpu->senone_scores(*d, 3, 2, *o, *g, *w, 2, 0, *out), BackendError);
}

TEST(MixtureCsr, RowsListNonZeroWeightsWithStreamOffsets) {
  GaussianMixtures gm = tiny_model();  // 2 streams, 2 codebooks x 2 Gaussians
  gm.log_weights = {-1.f, -2.f,     -3.f, kNegInf,   // senone 0 (codebook 0)
                    kNegInf, -4.f,  -5.f, -6.f,      // senone 1 (codebook 1)
                    -7.f, -8.f,     kNegInf, -9.f};  // senone 2 (codebook 1)
  const MixtureCsr csr = build_mixture_csr(gm);
  // Stream t's Gaussians start at row t * 4; codebook c at + c * 2.
  EXPECT_EQ(csr.offsets, (std::vector<float>{0, 2, 3, 4, 6, 8, 9}));
  EXPECT_EQ(csr.gaussian, (std::vector<float>{0, 1, 4, 3, 6, 7, 2, 3, 7}));
  EXPECT_EQ(csr.logw, (std::vector<float>{-1, -2, -3, -4, -5, -6, -7, -8, -9}));
  gm.num_senones = 0;
  EXPECT_THROW(build_mixture_csr(gm), std::invalid_argument);
}

// --- GaussianScorer against the double-precision reference -----------------

struct Layout {
  const char* name;
  RandomModelSpec spec;
  int64_t frames;
};

std::vector<Layout> layouts() {
  std::vector<Layout> v;
  RandomModelSpec s;
  // Continuous: one codebook per senone, 1s_c_d_dd in one stream.
  s.num_senones = s.num_codebooks = 80;
  s.gaussians_per_codebook = 8;
  s.stream_dims = {39};
  v.push_back({"continuous", s, 61});
  // Semi-continuous: one shared codebook of 256, three streams.
  s = RandomModelSpec();
  s.num_senones = 120;
  s.num_codebooks = 1;
  s.gaussians_per_codebook = 256;
  s.stream_dims = {13, 13, 13};
  v.push_back({"semi-continuous", s, 37});
  // PTM: a codebook per base phone, senones assigned at random, streams
  // taking components round-robin, a third of the weights zero.
  s = RandomModelSpec();
  s.num_senones = 150;
  s.num_codebooks = 7;
  s.gaussians_per_codebook = 32;
  s.stream_dims = {13, 13, 13};
  s.interleave_components = true;
  s.zero_weight_fraction = 0.33;
  v.push_back({"ptm", s, 45});
  // Four unequal streams (Sphinx s2_4x: 12, 24, 3, 12), most weights zero.
  s = RandomModelSpec();
  s.num_senones = 40;
  s.num_codebooks = 40;
  s.gaussians_per_codebook = 16;
  s.stream_dims = {12, 24, 3, 12};
  s.zero_weight_fraction = 0.8;
  v.push_back({"four streams, sparse weights", s, 29});
  return v;
}

TEST(GaussianScorer, CpuMatchesDoubleReference) {
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  BackendPtr cpu = make_cpu_backend();
  for (const Layout& l : layouts()) {
    SCOPED_TRACE(std::string(l.name) + ", seed " + std::to_string(seed));
    const GaussianMixtures gm = testing::random_mixtures(l.spec, rng);
    const std::vector<float> x = testing::random_features(gm, l.spec, l.frames, rng);
    const std::vector<double> want = testing::reference_scores(gm, x.data(), l.frames);
    GaussianScorer scorer(gm, *cpu);
    EXPECT_EQ(scorer.num_senones(), gm.num_senones);
    EXPECT_EQ(scorer.feature_dim(), gm.feature_dim());
    std::vector<float> got(want.size());
    scorer.score(x.data(), l.frames, got.data());
    const double err = testing::max_abs_error(got, want);
    double scale = 0.0;
    for (double v : want) scale = std::max(scale, std::fabs(v));
    std::printf("[ scoring ] %-30s cpu vs double: max |error| %.2e nats (scores up to %.0f)\n",
                l.name, err, scale);
    EXPECT_LE(err, kTolerance);
    // The scale the tolerance was argued for.
    EXPECT_GT(scale, 30.0);
  }
}

TEST(GaussianScorer, EntryPointsAndBlockSizesAgreeExactly) {
  // On one backend, block boundaries and the three entry points change
  // nothing: every density and score is computed by the same arithmetic.
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  BackendPtr cpu = make_cpu_backend();
  const Layout l = layouts()[2];
  const GaussianMixtures gm = testing::random_mixtures(l.spec, rng);
  const int64_t frames = 53;
  const std::vector<float> x = testing::random_features(gm, l.spec, frames, rng);
  GaussianScorer whole(gm, *cpu);
  std::vector<float> a(static_cast<size_t>(frames) * gm.num_senones);
  whole.score(x.data(), frames, a.data());

  ScorerOptions small;
  small.block_frames = 7;
  GaussianScorer blocked(gm, *cpu, small);
  std::vector<float> b(a.size());
  blocked.score(x.data(), frames, b.data());
  EXPECT_EQ(a, b);

  const size_t out_offset = 11, feats_offset = 5;
  BufferPtr out = cpu->alloc(out_offset + a.size());
  blocked.score(x.data(), frames, *out, out_offset);
  std::vector<float> c(a.size());
  cpu->download(*out, c.data(), c.size(), out_offset);
  EXPECT_EQ(a, c);

  std::vector<float> padded(feats_offset, 1e30f);
  padded.insert(padded.end(), x.begin(), x.end());
  BufferPtr feats = upload(*cpu, padded);
  BufferPtr out2 = cpu->alloc(a.size());
  blocked.score_device(*feats, frames, *out2, feats_offset, 0);
  EXPECT_EQ(a, download(*cpu, *out2));
}

TEST(GaussianScorer, CoefficientRowsAreLogDensities) {
  // A coefficient row dotted with [x'^2, x', 1] (x' = x - centre) is
  // log N(x): check one Gaussian by hand, centred and not.
  GaussianMixtures gm = tiny_model();
  gm.means[0] = {1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f};
  gm.variances[0] = {1.f, 2.f, 0.5f, 4.f, 3.f, 2.f, 1.f, 0.25f};
  BackendPtr cpu = make_cpu_backend();
  for (bool centre : {false, true}) {
    ScorerOptions o;
    o.centre_features = centre;
    GaussianScorer scorer(gm, *cpu, o);
    const std::vector<double>& c = scorer.centre(0);
    ASSERT_EQ(c.size(), 2u);
    EXPECT_DOUBLE_EQ(c[0], centre ? (1 + 3 + 5 + 7) / 4.0 : 0.0);
    EXPECT_DOUBLE_EQ(c[1], centre ? (2 + 4 + 6 + 8) / 4.0 : 0.0);
    const std::vector<float>& rows = scorer.coefficients(0);
    ASSERT_EQ(rows.size(), 4u * 5u);
    const double x0 = 2.5, x1 = 4.25;
    for (int g = 0; g < 4; ++g) {
      const float* r = rows.data() + g * 5;
      const double a = x0 - c[0], b = x1 - c[1];
      const double dot = r[0] * a * a + r[1] * b * b + r[2] * a + r[3] * b + r[4];
      const double m0 = gm.means[0][2 * g], m1 = gm.means[0][2 * g + 1];
      const double v0 = gm.variances[0][2 * g], v1 = gm.variances[0][2 * g + 1];
      const double want = -0.5 * ((x0 - m0) * (x0 - m0) / v0 + (x1 - m1) * (x1 - m1) / v1 +
                                  std::log(2 * M_PI * v0) + std::log(2 * M_PI * v1));
      EXPECT_NEAR(dot, want, 1e-5) << "Gaussian " << g << (centre ? ", centred" : "");
    }
  }
}

// --- what centring buys ------------------------------------------------------

double scorer_error(const GaussianMixtures& gm, const RandomModelSpec& spec, bool centre,
                    std::mt19937& rng) {
  BackendPtr cpu = make_cpu_backend();
  const int64_t frames = 40;
  const std::vector<float> x = testing::random_features(gm, spec, frames, rng);
  const std::vector<double> want = testing::reference_scores(gm, x.data(), frames);
  ScorerOptions o;
  o.centre_features = centre;
  GaussianScorer scorer(gm, *cpu, o);
  std::vector<float> got(want.size());
  scorer.score(x.data(), frames, got.data());
  return testing::max_abs_error(got, want);
}

TEST(GaussianScorer, CentringKeepsFloatErrorSmall) {
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  RandomModelSpec s;
  s.num_senones = s.num_codebooks = 60;
  s.gaussians_per_codebook = 8;
  s.stream_dims = {39};
  // Sphinx scale without CMN (c0 around 60), then a much larger offset
  // with tight Gaussians, where uncentred float32 breaks down.
  struct Case {
    double c0, spread, min_ratio, max_ratio;
  };
  for (const Case& c : {Case{60, 10, 0.03, 0.5}, Case{80, 10, 0.01, 0.1},
                        Case{2000, 10, 0.01, 0.1}}) {
    s.c0_centre = c.c0;
    s.cepstral_spread = c.spread;
    s.min_variance_ratio = c.min_ratio;
    s.max_variance_ratio = c.max_ratio;
    const GaussianMixtures gm = testing::random_mixtures(s, rng);
    const double centred = scorer_error(gm, s, true, rng);
    const double raw = scorer_error(gm, s, false, rng);
    std::printf("[ scoring ] c0 ~ %4.0f, variance ratio %.2f..%.2f: max |error| centred %.2e, "
                "uncentred %.2e nats\n",
                c.c0, c.min_ratio, c.max_ratio, centred, raw);
    EXPECT_LE(centred, kTolerance);
    // Far from the origin, uncentred float32 loses most of a nat: centring
    // must be what saves it (this fails if the centre stops being applied).
    if (c.c0 > 1000) {
      EXPECT_GT(raw, 30 * centred);
    }
  }
}

// --- the installed en-us model on real speech ----------------------------

TEST(GaussianScorer, EnUsModelOnRealSpeech) {
  // pocketsphinx's en-us PTM model (variances floored at 1e-4, 8-bit
  // sendump weights) on goforward.raw through the model's own front end
  // (batch CMN, deltas): the scales the decoder will see.
  const std::string dir = testing::model_dir() + "/en-us/en-us";
  const std::string wav = testing::audio_dir() + "/goforward.raw";
  std::ifstream probe_model(dir + "/mdef"), probe_audio(wav);
  if (!probe_model || !probe_audio)
    GTEST_SKIP() << "needs pocketsphinx-en-us and pocketsphinx-testdata (" << dir << ", "
                 << wav << ")";
  const AcousticModel am = AcousticModel::load(dir);
  const GaussianMixtures& gm = am.mixtures();
  BackendPtr cpu = make_cpu_backend();
  const AudioData audio = read_raw_s16le_file(wav, 16000);
  const FeatureMatrix feats = compute_features(am.feature_options(), *cpu,
                                               audio.samples.data(),
                                               static_cast<int64_t>(audio.samples.size()));
  ASSERT_EQ(feats.dim, gm.feature_dim());
  // 16 frames spread over the utterance (the double reference costs 2 M
  // exps a frame).
  const int64_t frames = 16;
  ASSERT_GT(feats.rows, frames);
  std::vector<float> x;
  for (int64_t i = 0; i < frames; ++i) {
    const float* row = feats.row(i * (feats.rows - 1) / (frames - 1));
    x.insert(x.end(), row, row + feats.dim);
  }
  const std::vector<double> want = testing::reference_scores(gm, x.data(), frames);
  for (bool centre : {true, false}) {
    ScorerOptions o;
    o.centre_features = centre;
    GaussianScorer scorer(gm, *cpu, o);
    std::vector<float> got(want.size());
    scorer.score(x.data(), frames, got.data());
    const double err = testing::max_abs_error(got, want);
    double scale = 0.0;
    for (double v : want) scale = std::max(scale, std::fabs(v));
    std::printf("[ scoring ] en-us PTM on goforward.raw (%s): max |error| %.2e nats "
                "(scores up to %.0f)\n",
                centre ? "centred" : "not centred", err, scale);
    if (centre) {
      EXPECT_LE(err, kTolerance);
    }
  }
}

}  // namespace
}  // namespace gpuspeech
