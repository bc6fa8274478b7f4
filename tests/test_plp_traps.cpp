// PLP and TRAPS: the constant matrices piece by piece, the whole float
// pipeline (FeatureExtractor on the CPU backend) against the double
// reference in reference_features.cpp, and K VTLN warps from one FFT
// against K single-warp extractors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "common/backends/backend_registry.h"
#include "tests/test_backends.h"
#include "common/features/cepstral_transform.h"
#include "common/features/feature_pipeline.h"
#include "common/features/mel_filterbank.h"
#include "common/features/plp.h"
#include "common/features/traps.h"
#include "tests/reference_check.h"
#include "tests/reference_features.h"

namespace gpuspeech {
namespace {

constexpr double kPi = 3.14159265358979323846;
using reference::read_raw_s16;

std::string test_data(const std::string& rel) {
  const char* dir = std::getenv("GPUSPEECH_TEST_DATA");
  return std::string(dir ? dir : "tests/data") + "/" + rel;
}

const std::vector<float>& goforward16k() {
  static const std::vector<float> s =
      read_raw_s16(testing::audio_dir() + "/goforward.raw");
  return s;
}

// Fresh random audio every run (the seed is printed so that a failure can
// be replayed): coloured noise with a syllable-rate envelope, a stretch of
// digital silence and a very quiet stretch, so that PLP and TRAPS see
// spectral slopes, dynamics, r[0] = 0 and near-zero bands.
std::vector<float> random_audio(int64_t n, uint32_t* seed_out) {
  const uint32_t seed = std::random_device{}();
  *seed_out = seed;
  std::mt19937 gen(seed);
  std::normal_distribution<double> g(0.0, 1.0);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const double r = 0.9 + 0.08 * u(gen), theta = 0.1 + 0.5 * u(gen);
  double y1 = 0.0, y2 = 0.0;
  std::vector<float> s(n);
  for (int64_t i = 0; i < n; ++i) {
    const double y = g(gen) + 2 * r * std::cos(theta) * y1 - r * r * y2;
    y2 = y1;
    y1 = y;
    const double env = 0.55 + 0.45 * std::sin(2 * kPi * 4.0 * i / 16000.0);
    s[i] = static_cast<float>(300.0 * env * y);
  }
  const int64_t a = n / 3, b = a + n / 10, c = b + n / 10;
  for (int64_t i = a; i < b && i < n; ++i) s[i] = 0.0f;
  for (int64_t i = b; i < c && i < n; ++i) s[i] *= 1e-3f;
  return s;
}

// ---------------------------------------------------------------------------
// PLP pieces.

TEST(PlpFilterbank, CurvesPeakAtTheirCentresWithTheEqualLoudnessWeight) {
  PlpOptions plp;  // 21 bands
  const int fft = 512, bins = fft / 2 + 1;
  const float sr = 16000.0f, low = 130.0f, high = 6800.0f;
  const std::vector<float> fb = plp_filterbank(plp, fft, sr, low, high, VtlnOptions(), 1.0f);
  ASSERT_EQ(fb.size(), static_cast<size_t>(plp.num_filters) * bins);
  const double zl = hz_to_bark(low), step = (hz_to_bark(high) - zl) / (plp.num_filters + 1);
  for (int j = 0; j < plp.num_filters; ++j) {
    const double zc = zl + (j + 1) * step;
    const double eql = plp_equal_loudness(bark_to_hz(zc));
    int flat_bins = 0;
    for (int k = 0; k < bins; ++k) {
      const double f = k * sr / fft;
      const float w = fb[j * bins + k];
      ASSERT_GE(w, 0.0f);
      if (f < low || f > high) {
        EXPECT_EQ(w, 0.0f) << "band " << j << " reaches outside the band at " << f << " Hz";
        continue;
      }
      const double dz = hz_to_bark(f) - zc;
      // The curve is discontinuous at -1.3 and 2.5 Bark (it drops from
      // -20 dB to nothing); a bin within rounding of an edge may go either way.
      if (std::fabs(dz + 1.3) < 1e-9 || std::fabs(dz - 2.5) < 1e-9) continue;
      // Flat top one Bark wide, skirts of 25 dB per Bark below and 10 dB
      // per Bark above, nothing beyond -1.3 and 2.5 Bark.
      double want;
      if (dz < -1.3 || dz > 2.5) want = 0.0;
      else if (dz < -0.5) want = std::pow(10.0, 2.5 * (dz + 0.5));
      else if (dz <= 0.5) want = 1.0;
      else want = std::pow(10.0, -(dz - 0.5));
      EXPECT_NEAR(w / eql, want, 1e-5) << "band " << j << " bin " << k << " dz " << dz;
      if (want == 1.0) ++flat_bins;
    }
    EXPECT_GE(flat_bins, 2) << "band " << j;
  }
}

TEST(PlpFilterbank, EqualLoudnessMatchesTheHertzFormOfHermanskysCurve) {
  // The same curve written in Hz (HTK's constants): with F = f^2,
  // E ~ (F / (F + 1.6e5))^2 (F + 1.44e6) / (F + 9.61e6). The constants are
  // those of the w-form divided by (2 pi)^2 and rounded, so ratios between
  // frequencies agree to ~0.5%.
  const auto htk = [](double f) {
    const double F = f * f, r = F / (F + 1.6e5);
    return r * r * (F + 1.44e6) / (F + 9.61e6);
  };
  for (double f : {50.0, 100.0, 300.0, 700.0, 1500.0, 3000.0, 5000.0, 7000.0}) {
    const double ratio = plp_equal_loudness(f) / plp_equal_loudness(1000.0);
    const double want = htk(f) / htk(1000.0);
    EXPECT_NEAR(ratio / want, 1.0, 5e-3) << f << " Hz";
  }
  // Monotonic rise towards its high-frequency asymptote of 1 (slowly:
  // 0.855 at 7 kHz); about -33 dB at 100 Hz.
  EXPECT_NEAR(plp_equal_loudness(7000.0), 0.8548, 1e-3);
  EXPECT_NEAR(plp_equal_loudness(1e6), 1.0, 1e-3);
  EXPECT_NEAR(10 * std::log10(plp_equal_loudness(100.0)), -32.8, 0.2);
  for (double f = 10.0; f < 8000.0; f += 10.0)
    EXPECT_GT(plp_equal_loudness(f + 10.0), plp_equal_loudness(f)) << f;
}

TEST(PlpFilterbank, VtlnMovesTheCurvesLikeTheMelFilters) {
  // Warp w moves band j's flat top to vtln_warp_hz(its centre): the same
  // direction mel_filterbank moves the mel filters' edges.
  PlpOptions plp;
  const int fft = 1024, bins = fft / 2 + 1;
  const float sr = 16000.0f, low = 20.0f, high = 8000.0f;
  VtlnOptions vtln;
  for (float warp : {0.88f, 1.12f}) {
    const std::vector<float> fb = plp_filterbank(plp, fft, sr, low, high, vtln, warp);
    const double zl = hz_to_bark(low), step = (hz_to_bark(high) - zl) / (plp.num_filters + 1);
    for (int j = 2; j < plp.num_filters - 2; ++j) {
      const double zc = zl + (j + 1) * step;
      // Bins whose warped-back Bark lies in the flat top.
      for (int k = 0; k < bins; ++k) {
        const double f = k * sr / fft;
        const double fu = vtln_unwarp_hz(f, warp, low, high, sr / 2, vtln);
        EXPECT_NEAR(vtln_warp_hz(fu, warp, low, high, sr / 2, vtln), f, 1e-6);
        if (std::fabs(hz_to_bark(fu) - zc) < 0.49) {
          EXPECT_NEAR(fb[j * bins + k], plp_equal_loudness(bark_to_hz(zc)), 1e-6)
              << "warp " << warp << " band " << j << " bin " << k;
        }
      }
    }
    // And the filters really moved: centre of mass of band 10 shifts in
    // the direction of the warp of its centre frequency.
    const std::vector<float> fb1 = plp_filterbank(plp, fft, sr, low, high, vtln, 1.0f);
    const auto centroid = [&](const std::vector<float>& m, int j) {
      double s = 0, sw = 0;
      for (int k = 0; k < bins; ++k) { s += m[j * bins + k] * k; sw += m[j * bins + k]; }
      return s / sw * sr / fft;
    };
    const double c1 = centroid(fb1, 10), cw = centroid(fb, 10);
    const double moved = vtln_warp_hz(c1, warp, low, high, sr / 2, vtln);
    EXPECT_NEAR(cw, moved, 0.03 * c1) << "warp " << warp;
    EXPECT_GT(std::fabs(cw - c1), 0.05 * c1) << "warp " << warp;
  }
}

TEST(PlpFilterbank, RejectsBadBands) {
  PlpOptions plp;
  EXPECT_THROW(plp_filterbank(plp, 512, 16000, 4000, 3000, VtlnOptions(), 1.0f),
               std::invalid_argument);
  EXPECT_THROW(plp_filterbank(plp, 512, 16000, 0, 9000, VtlnOptions(), 1.0f),
               std::invalid_argument);
  plp.num_filters = 0;
  EXPECT_THROW(plp_filterbank(plp, 512, 16000, 0, 8000, VtlnOptions(), 1.0f),
               std::invalid_argument);
}

TEST(PlpAutocorr, IsTheInverseDftOfTheMirroredAuditorySpectrum) {
  std::mt19937 gen(std::random_device{}());
  std::uniform_real_distribution<double> u(0.1, 2.0);
  for (int nb : {3, 17, 21, 23}) {
    PlpOptions plp;
    plp.num_filters = nb;
    plp.order = nb - 1;
    const std::vector<float> m = plp_autocorr_matrix(plp);
    ASSERT_EQ(m.size(), static_cast<size_t>(plp.order + 1) * nb);
    // A flat spectrum is white: r = (1, 0, 0, ...).
    for (int k = 0; k <= plp.order; ++k) {
      double r = 0;
      for (int j = 0; j < nb; ++j) r += m[k * nb + j];
      EXPECT_NEAR(r, k == 0 ? 1.0 : 0.0, 1e-6) << "nb " << nb << " k " << k;
    }
    // Any spectrum: the explicit full-circle cosine sum over 2(nb+1)
    // points with the edge points copied from bands 0 and nb-1.
    std::vector<double> band(nb);
    for (double& b : band) b = u(gen);
    const int L = 2 * (nb + 1);
    std::vector<double> circle(L);
    circle[0] = band[0];
    for (int i = 1; i <= nb; ++i) circle[i] = band[i - 1];
    circle[nb + 1] = band[nb - 1];
    for (int i = nb + 2; i < L; ++i) circle[i] = circle[L - i];
    for (int k = 0; k <= plp.order; ++k) {
      double want = 0, got = 0;
      for (int i = 0; i < L; ++i) {
        // Complex inverse DFT; the imaginary part must vanish.
        want += circle[i] * std::cos(2 * kPi * k * i / L) / L;
      }
      for (int j = 0; j < nb; ++j) got += m[k * nb + j] * band[j];
      EXPECT_NEAR(got, want, 1e-6) << "nb " << nb << " k " << k;
    }
  }
}

TEST(PlpLifter, IsDiagonalLifterWeights) {
  PlpOptions plp;
  plp.num_ceps = 13;
  plp.lifter = 22;
  std::vector<float> m = plp_lifter_matrix(plp);
  ASSERT_EQ(m.size(), 13u * 13u);
  for (int i = 0; i < 13; ++i)
    for (int j = 0; j < 13; ++j)
      EXPECT_FLOAT_EQ(m[i * 13 + j], i == j ? 1.0 + 11.0 * std::sin(kPi * i / 22) : 0.0);
  plp.lifter = 0;
  m = plp_lifter_matrix(plp);
  for (int i = 0; i < 13; ++i)
    for (int j = 0; j < 13; ++j) EXPECT_EQ(m[i * 13 + j], i == j ? 1.0f : 0.0f);
}

// ---------------------------------------------------------------------------
// TRAPS matrix.

TEST(TrapsMatrix, IsHalfHammingWeightedOrthonormalDctsOfEachHalf) {
  std::mt19937 gen(std::random_device{}());
  std::normal_distribution<double> g(0.0, 3.0);
  for (auto [ctx, nc, nb] : {std::tuple{25, 8, 25}, std::tuple{5, 6, 3}, std::tuple{1, 1, 2}}) {
    TrapsOptions t;
    t.context = ctx;
    t.num_coeffs = nc;
    const std::vector<float> m = traps_matrix(t, nb);
    const int span = 2 * ctx + 1, in = span * nb, out = nb * 2 * nc;
    ASSERT_EQ(m.size(), static_cast<size_t>(in) * out);
    // Random spliced input x[k * nb + b].
    std::vector<double> x(in);
    for (double& v : x) v = g(gen);
    const int M = ctx + 1;
    for (int b = 0; b < nb; ++b)
      for (int h = 0; h < 2; ++h)
        for (int c = 0; c < nc; ++c) {
          double want = 0;
          for (int i = 0; i < M; ++i) {
            const int k = h * ctx + i;
            const double ham = 0.54 - 0.46 * std::cos(2 * kPi * k / (span - 1));
            const double basis = std::cos(kPi * c * (2 * i + 1) / (2.0 * M)) *
                                 (c == 0 ? std::sqrt(1.0 / M) : std::sqrt(2.0 / M));
            want += basis * ham * x[k * nb + b];
          }
          double got = 0;
          const int row = b * 2 * nc + h * nc + c;
          for (int i = 0; i < in; ++i) got += m[static_cast<size_t>(row) * in + i] * x[i];
          EXPECT_NEAR(got, want, 1e-5 * (1 + std::fabs(want)))
              << "ctx " << ctx << " band " << b << " half " << h << " coeff " << c;
        }
  }
}

TEST(TrapsMatrix, RejectsImpossibleShapes) {
  TrapsOptions t;
  t.context = 3;
  t.num_coeffs = 5;  // a half has only 4 frames
  EXPECT_THROW(traps_matrix(t, 10), std::invalid_argument);
  t.num_coeffs = 4;
  EXPECT_NO_THROW(traps_matrix(t, 10));
  t.context = 0;
  t.num_coeffs = 1;
  EXPECT_THROW(traps_matrix(t, 10), std::invalid_argument);
  t.context = 3;
  EXPECT_THROW(traps_matrix(t, 0), std::invalid_argument);
}

// ---------------------------------------------------------------------------
// The float pipeline against the double reference.

void expect_agrees(const FeatureOptions& opts, const std::vector<float>& audio,
                   const std::vector<float>& warps, const std::string& what) {
  BackendPtr cpu = make_cpu_backend();
  reference::expect_agrees(*cpu, opts, audio, warps, what);
}

TEST(PlpReference, SphinxDefaultsOnSpeech) {
  FeatureOptions o = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kPlp);
  expect_agrees(o, goforward16k(), {}, "plp sphinx goforward");
}

TEST(PlpReference, KaldiFlavourWithEnergyOnRandomAudio) {
  FeatureOptions o = FeatureOptions::for_flavour(Flavour::kKaldi, FeatureKind::kPlp);
  o.plp.use_energy = true;
  uint32_t seed;
  const std::vector<float> audio = random_audio(16000 * 2 + 123, &seed);
  SCOPED_TRACE("random seed " + std::to_string(seed));
  expect_agrees(o, audio, {}, "plp kaldi+energy random");
}

TEST(PlpReference, EightKilohertzOrderEightNoLifter) {
  FeatureOptions o = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kPlp);
  o.frame.sample_rate = 8000;
  o.frame.fft_size = 256;
  o.mel.low_freq = 200;
  o.mel.high_freq = 3500;
  o.plp.num_filters = 15;
  o.plp.order = 8;
  o.plp.num_ceps = 10;
  o.plp.lifter = 0;
  o.plp.compress = 0.25f;
  expect_agrees(o, read_raw_s16(test_data("sphinx_fe/goforward-8k.raw")), {}, "plp 8k");
}

TEST(PlpReference, SeveralWarpsOnSpeech) {
  FeatureOptions o = FeatureOptions::for_flavour(Flavour::kHtk, FeatureKind::kPlp);
  expect_agrees(o, goforward16k(), {0.9f, 1.0f, 1.1f}, "plp htk warps");
}

TEST(TrapsReference, SphinxDefaultsOnSpeech) {
  FeatureOptions o = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kTraps);
  expect_agrees(o, goforward16k(), {}, "traps sphinx goforward");
}

TEST(TrapsReference, KaldiAndHtkFlavoursOnRandomAudio) {
  uint32_t seed;
  const std::vector<float> audio = random_audio(16000 * 2 + 77, &seed);
  SCOPED_TRACE("random seed " + std::to_string(seed));
  FeatureOptions k = FeatureOptions::for_flavour(Flavour::kKaldi, FeatureKind::kTraps);
  k.traps.context = 10;
  k.traps.num_coeffs = 11;
  expect_agrees(k, audio, {}, "traps kaldi random");
  FeatureOptions h = FeatureOptions::for_flavour(Flavour::kHtk, FeatureKind::kTraps);
  h.traps.context = 15;
  h.traps.num_coeffs = 5;
  expect_agrees(h, audio, {0.92f, 1.06f}, "traps htk warps random");
}

// ---------------------------------------------------------------------------
// K warps from one FFT equal K single-warp extractions.

void expect_multi_warp_equals_single(FeatureOptions opts, const std::vector<float>& audio,
                                     const std::string& what) {
  const std::vector<float> warps = {0.9f, 1.0f, 1.1f};
  BackendPtr cpu = make_cpu_backend();
  FeatureExtractor multi(opts, *cpu, warps);
  const FeatureMatrix all = multi.compute(audio.data(), static_cast<int64_t>(audio.size()));
  const int base = multi.base_dim();
  ASSERT_EQ(all.dim, 3 * base);
  std::vector<FeatureMatrix> singles;
  for (size_t k = 0; k < warps.size(); ++k) {
    opts.mel.vtln.warp = warps[k];
    FeatureExtractor one(opts, *cpu);
    const FeatureMatrix m = one.compute(audio.data(), static_cast<int64_t>(audio.size()));
    ASSERT_EQ(m.rows, all.rows);
    ASSERT_EQ(m.dim, base);
    double worst = 0, scale = 0;
    int64_t exact = 0;
    for (int64_t t = 0; t < m.rows; ++t)
      for (int d = 0; d < base; ++d) {
        const float a = all.row(t)[k * base + d], b = m.row(t)[d];
        worst = std::max(worst, static_cast<double>(std::fabs(a - b)));
        scale = std::max(scale, static_cast<double>(std::fabs(b)));
        exact += a == b;
      }
    // The same arithmetic on the same numbers; TRAPS's single GEMM over all
    // warps' bands may sum in another order, hence a float-rounding margin.
    EXPECT_LE(worst, 1e-6 * scale) << what << " warp " << warps[k];
    std::printf("[ %s warp %.1f ] max |diff| %.3g (scale %.3g), %lld of %lld bitwise equal\n",
                what.c_str(), warps[k], worst, scale, static_cast<long long>(exact),
                static_cast<long long>(m.rows) * base);
    singles.push_back(m);
  }
  // The warps must actually differ, or the test proves nothing.
  double diff = 0;
  for (int64_t t = 0; t < singles[0].rows; ++t)
    for (int d = 0; d < base; ++d)
      diff = std::max(diff, static_cast<double>(std::fabs(singles[0].row(t)[d] - singles[2].row(t)[d])));
  EXPECT_GT(diff, 1e-2) << what;
}

TEST(MultiWarp, EqualsSingleWarpRunsForEveryKindAndFlavour) {
  const std::vector<float>& audio = goforward16k();
  for (Flavour fl : {Flavour::kSphinx, Flavour::kKaldi, Flavour::kHtk})
    for (FeatureKind kind : {FeatureKind::kMfcc, FeatureKind::kFbank, FeatureKind::kPlp,
                             FeatureKind::kTraps}) {
      const std::string what = std::string(to_string(fl)) + " " + to_string(kind);
      try {
        expect_multi_warp_equals_single(FeatureOptions::for_flavour(fl, kind), audio, what);
      } catch (const std::exception& e) {
        ADD_FAILURE() << what << ": " << e.what();
      }
    }
}

}  // namespace
}  // namespace gpuspeech
