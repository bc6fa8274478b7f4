// Unit tests for the DSP pieces: frequency warps (mel, Bark, VTLN),
// Levinson-Durbin, the LPC cepstrum, deltas, CMN/CVN and min/max.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <random>
#include <vector>

#include "common/backends/backend_registry.h"
#include "common/features/feature_pipeline.h"
#include "common/features/lpc.h"
#include "common/features/mel_filterbank.h"
#include "common/features/feature_options.h"
#include "common/features/plp.h"
#include "common/features/postprocess.h"

namespace gpuspeech {
namespace {

constexpr double kPi = 3.14159265358979323846;

std::mt19937 fresh_rng(uint32_t* seed) {
  *seed = std::random_device{}();
  return std::mt19937(*seed);
}

// ---------------------------------------------------------------------------
// Frequency warps.

TEST(MelScale, KnownValues) {
  // Both scales are built so that 1000 Hz is (about) 1000 mel, and 700 Hz
  // (the break frequency) is 2595 log10 2 = 1127 ln 2 = 781.17 mel.
  EXPECT_NEAR(mel_sphinx(1000.0), 1000.0, 0.05);
  EXPECT_NEAR(mel_htk(1000.0), 1000.0, 0.05);
  EXPECT_NEAR(mel_sphinx(700.0), 2595.0 * std::log10(2.0), 1e-9);
  EXPECT_NEAR(mel_htk(700.0), 1127.0 * std::log(2.0), 1e-9);
  EXPECT_NEAR(mel_htk(700.0), 781.17, 0.01);
  EXPECT_EQ(mel_sphinx(0.0), 0.0);
  EXPECT_EQ(mel_htk(0.0), 0.0);
  EXPECT_NEAR(mel_htk(8000.0), 2840.03, 0.01);
}

TEST(MelScale, InversesRoundTrip) {
  for (double f = 0.0; f <= 24000.0; f += 37.5) {
    EXPECT_NEAR(mel_sphinx_inverse(mel_sphinx(f)), f, 1e-9 * (1 + f));
    EXPECT_NEAR(mel_htk_inverse(mel_htk(f)), f, 1e-9 * (1 + f));
  }
  for (double m = 0.0; m <= 4000.0; m += 11.0) {
    EXPECT_NEAR(mel_sphinx(mel_sphinx_inverse(m)), m, 1e-9 * (1 + m));
    EXPECT_NEAR(mel_htk(mel_htk_inverse(m)), m, 1e-9 * (1 + m));
  }
}

TEST(BarkScale, KnownValuesAndRoundTrip) {
  // Bark = 6 asinh(f / 600) (Schroeder's form used by Hermansky).
  EXPECT_EQ(hz_to_bark(0.0), 0.0);
  EXPECT_NEAR(hz_to_bark(600.0 * std::sinh(1.0)), 6.0, 1e-12);
  EXPECT_NEAR(bark_to_hz(6.0), 705.1207, 1e-4);
  // 6 ln(f/600 + sqrt((f/600)^2 + 1)) at 1 kHz.
  EXPECT_NEAR(hz_to_bark(1000.0), 6.0 * std::log(5.0 / 3.0 + std::sqrt(25.0 / 9.0 + 1.0)), 1e-12);
  EXPECT_NEAR(hz_to_bark(1000.0), 7.7027, 1e-4);
  EXPECT_NEAR(hz_to_bark(4000.0), 15.5754, 1e-3);
  for (double f = 0.0; f <= 24000.0; f += 41.0)
    EXPECT_NEAR(bark_to_hz(hz_to_bark(f)), f, 1e-9 * (1 + f));
  for (double z = 0.0; z < 25.0; z += 0.37)
    EXPECT_GT(hz_to_bark(bark_to_hz(z) + 1.0), z);
}

struct WarpCase {
  const char* name;
  double low, high, nyquist;
  double low_cutoff, high_cutoff;  // VTLN knees as configured
};

// The filterbank bands of the three flavours' defaults, with their default
// knees; the 8 kHz Sphinx band needs knees of its own (check_vtln refuses
// the defaults there, see VtlnWarp.RefusesKneesOutsideTheBand).
const WarpCase kWarpCases[] = {
    {"kaldi 16k", 20.0, 8000.0, 8000.0, 100.0, -500.0},
    {"htk 16k", 0.0, 8000.0, 8000.0, 100.0, -500.0},
    {"sphinx 16k", 130.0, 6800.0, 8000.0, 200.0, 6300.0},
    {"sphinx 8k", 200.0, 3500.0, 4000.0, 250.0, 3200.0},
};

VtlnOptions knees(const WarpCase& c) {
  VtlnOptions v;
  v.low_cutoff = static_cast<float>(c.low_cutoff);
  v.high_cutoff = static_cast<float>(c.high_cutoff);
  return v;
}

TEST(VtlnWarp, RefusesKneesOutsideTheBand) {
  FeatureOptions o = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kMfcc);
  o.frame.sample_rate = 8000;
  o.frame.fft_size = 256;
  o.mel.low_freq = 200;
  o.mel.high_freq = 3500;
  EXPECT_NO_THROW(check_vtln(o.mel, 8000, 1.0));
  EXPECT_THROW(check_vtln(o.mel, 8000, 0.9), std::invalid_argument);
  EXPECT_THROW(check_vtln(o.mel, 8000, 2.5), std::invalid_argument);
  o.mel.vtln.low_cutoff = 250;
  o.mel.vtln.high_cutoff = 3200;
  EXPECT_NO_THROW(check_vtln(o.mel, 8000, 0.9));
  for (const WarpCase& c : kWarpCases) {
    MelOptions m;
    m.low_freq = static_cast<float>(c.low);
    m.high_freq = static_cast<float>(c.high);
    m.vtln = knees(c);
    for (double warp : {0.8, 1.2}) EXPECT_NO_THROW(check_vtln(m, 2 * c.nyquist, warp)) << c.name;
  }
}

TEST(VtlnWarp, IdentityAtOne) {
  VtlnOptions v;
  for (const WarpCase& c : kWarpCases)
    for (double f = 0.0; f <= c.nyquist; f += 13.7)
      EXPECT_EQ(vtln_warp_hz(f, 1.0, c.low, c.high, c.nyquist, v), f) << c.name;
}

TEST(VtlnWarp, ContinuousMonotonicAndFixesNyquist) {
  for (const WarpCase& c : kWarpCases) {
    const VtlnOptions v = knees(c);
    for (double warp : {0.8, 0.88, 0.95, 1.05, 1.12, 1.2}) {
      SCOPED_TRACE(std::string(c.name) + " warp " + std::to_string(warp));
      const auto W = [&](double f) { return vtln_warp_hz(f, warp, c.low, c.high, c.nyquist, v); };
      EXPECT_NEAR(W(c.nyquist), c.nyquist, 1e-9);
      EXPECT_NEAR(W(c.high), c.high, 1e-9);
      EXPECT_NEAR(W(c.low), c.low, 1e-9);
      // Dense scan: every step of 0.25 Hz moves the output forward, by at
      // most a bounded slope (a jump anywhere, the knees included, fails).
      const double h = 0.25;
      int bad_monotonic = 0, bad_jump = 0;
      double prev = W(0.0);
      for (double f = h; f <= c.nyquist; f += h) {
        const double cur = W(f);
        if (!(cur > prev)) ++bad_monotonic;
        if (std::fabs(cur - prev) > 4.0 * h) ++bad_jump;
        prev = cur;
      }
      EXPECT_EQ(bad_monotonic, 0);
      EXPECT_EQ(bad_jump, 0);
      // Continuity right at the two knees, wherever they are: probe both
      // sides of every point where the slope changes.
      double prev_slope = (W(h) - W(0.0)) / h;
      for (double f = h; f < c.nyquist - h; f += h) {
        const double slope = (W(f + h) - W(f)) / h;
        if (std::fabs(slope - prev_slope) > 1e-6) {
          const double e = 1e-7;
          EXPECT_NEAR(W(f + e), W(f - e), 1e-5) << "slope change near " << f << " Hz";
        }
        prev_slope = slope;
      }
      // In the middle of the band the warp is f / warp.
      const double mid = 0.5 * (c.low + c.high);
      EXPECT_NEAR(W(mid), mid / warp, 1e-9 * mid);
    }
  }
}

TEST(VtlnWarp, UnwarpInvertsIt) {
  VtlnOptions v;
  for (double warp : {0.85, 1.15})
    for (double f = 20.0; f <= 8000.0; f += 9.5) {
      const double u = vtln_unwarp_hz(f, warp, 20.0, 8000.0, 8000.0, v);
      EXPECT_NEAR(vtln_warp_hz(u, warp, 20.0, 8000.0, 8000.0, v), f, 1e-6) << warp;
    }
}

// ---------------------------------------------------------------------------
// Linear prediction.

// Autocorrelation (biased estimate, so positive definite) of a random
// coloured signal.
std::vector<double> random_autocorr(std::mt19937& gen, int order, int length) {
  std::normal_distribution<double> g(0.0, 1.0);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const double r = 0.5 + 0.45 * u(gen), th = kPi * u(gen);
  std::vector<double> x(length);
  double y1 = 0, y2 = 0;
  for (double& v : x) {
    v = g(gen) + 2 * r * std::cos(th) * y1 - r * r * y2;
    y2 = y1;
    y1 = v;
  }
  std::vector<double> ac(order + 1, 0.0);
  for (int k = 0; k <= order; ++k)
    for (int n = 0; n + k < length; ++n) ac[k] += x[n] * x[n + k];
  return ac;
}

// Solves the Toeplitz normal equations sum_j a_j r|i-j| = -r_i by Gaussian
// elimination with partial pivoting (no Toeplitz structure used).
std::vector<double> direct_lpc(const std::vector<double>& r, int p) {
  std::vector<std::vector<double>> m(p, std::vector<double>(p + 1));
  for (int i = 0; i < p; ++i) {
    for (int j = 0; j < p; ++j) m[i][j] = r[std::abs(i - j)];
    m[i][p] = -r[i + 1];
  }
  for (int c = 0; c < p; ++c) {
    int piv = c;
    for (int i = c + 1; i < p; ++i)
      if (std::fabs(m[i][c]) > std::fabs(m[piv][c])) piv = i;
    std::swap(m[c], m[piv]);
    for (int i = c + 1; i < p; ++i) {
      const double f = m[i][c] / m[c][c];
      for (int j = c; j <= p; ++j) m[i][j] -= f * m[c][j];
    }
  }
  std::vector<double> a(p + 1, 0.0);
  a[0] = 1.0;
  for (int i = p - 1; i >= 0; --i) {
    double s = m[i][p];
    for (int j = i + 1; j < p; ++j) s -= m[i][j] * a[j + 1];
    a[i + 1] = s / m[i][i];
  }
  return a;
}

TEST(LevinsonDurbin, MatchesADirectSolveOfTheNormalEquations) {
  uint32_t seed;
  std::mt19937 gen = fresh_rng(&seed);
  SCOPED_TRACE("random seed " + std::to_string(seed));
  for (int order : {1, 2, 3, 5, 8, 12, 16, 24, 40}) {
    for (int trial = 0; trial < 20; ++trial) {
      const std::vector<double> r = random_autocorr(gen, order, 3 * order + 50 + trial * 7);
      std::vector<double> a(order + 1);
      const double e = levinson_durbin(r.data(), order, a.data());
      const std::vector<double> want = direct_lpc(r, order);
      double amax = 0;
      for (double v : want) amax = std::max(amax, std::fabs(v));
      EXPECT_EQ(a[0], 1.0);
      for (int i = 1; i <= order; ++i)
        EXPECT_NEAR(a[i], want[i], 1e-9 * amax) << "order " << order << " i " << i;
      double e_want = r[0];
      for (int i = 1; i <= order; ++i) e_want += want[i] * r[i];
      EXPECT_NEAR(e, e_want, 1e-9 * r[0]) << "order " << order;
      EXPECT_GT(e, 0.0);
      EXPECT_LE(e, r[0]);
    }
  }
}

TEST(LevinsonDurbin, ReportsBreakdown) {
  std::vector<double> a(4);
  const double zero[4] = {0, 0, 0, 0};
  EXPECT_LE(levinson_durbin(zero, 3, a.data()), 0.0);
  const double negative[4] = {-1, 0.1, 0, 0};
  EXPECT_LE(levinson_durbin(negative, 3, a.data()), 0.0);
  // |r1| > r0 is no autocorrelation: the reflection coefficient exceeds 1.
  const double not_pd[4] = {1, 2, 0.5, 0.1};
  EXPECT_LE(levinson_durbin(not_pd, 3, a.data()), 0.0);
  const double nan[4] = {1, NAN, 0, 0};
  EXPECT_LE(levinson_durbin(nan, 3, a.data()), 0.0);
  // The cepstrum of a failed row is all zeros.
  const float bad[4] = {1, 2, 0.5f, 0.1f};
  float c[6] = {9, 9, 9, 9, 9, 9};
  lpc_to_cepstrum_row(bad, 3, 6, c);
  for (float v : c) EXPECT_EQ(v, 0.0f);
}

TEST(LpcCepstrum, MatchesTheNumericalCepstrumOfTheAllPoleSpectrum) {
  // c_n = (1/M) sum_m ln(E / |A(e^jw_m)|^2) cos(w_m n), w_m = 2 pi m / M:
  // the inverse FFT of the log model spectrum, computed directly with
  // M = 16384 points (the all-pole cepstrum decays geometrically, so
  // aliasing is far below float precision).
  uint32_t seed;
  std::mt19937 gen = fresh_rng(&seed);
  SCOPED_TRACE("random seed " + std::to_string(seed));
  const int M = 16384;
  for (int order : {2, 8, 12, 20}) {
    for (int trial = 0; trial < 3; ++trial) {
      const int num_ceps = order + 10;  // past the order, where a_j = 0
      const std::vector<double> rd = random_autocorr(gen, order, 400);
      std::vector<float> rf(rd.begin(), rd.end());
      std::vector<float> got(num_ceps);
      lpc_to_cepstrum_row(rf.data(), order, num_ceps, got.data());

      const std::vector<double> rr(rf.begin(), rf.end());
      const std::vector<double> a = direct_lpc(rr, order);
      double e = rr[0];
      for (int i = 1; i <= order; ++i) e += a[i] * rr[i];
      std::vector<double> logp(M);
      for (int m = 0; m < M; ++m) {
        std::complex<double> A = 0.0;
        for (int i = 0; i <= order; ++i) A += a[i] * std::polar(1.0, -2 * kPi * m * i / M);
        logp[m] = std::log(e / std::norm(A));
      }
      for (int n = 0; n < num_ceps; ++n) {
        double c = 0;
        for (int m = 0; m < M; ++m) c += logp[m] * std::cos(2 * kPi * (static_cast<int64_t>(m) * n % M) / M);
        c /= M;
        EXPECT_NEAR(got[n], c, 2e-6 * (1 + std::fabs(c))) << "order " << order << " n " << n;
      }
      EXPECT_NEAR(got[0], std::log(e), 1e-6 * std::fabs(std::log(e)));
    }
  }
}

// ---------------------------------------------------------------------------
// Deltas.

FeatureMatrix random_features(std::mt19937& gen, int64_t rows, int dim) {
  std::normal_distribution<float> g(0.0f, 2.0f);
  FeatureMatrix m;
  m.rows = rows;
  m.dim = dim;
  m.data.resize(rows * dim);
  for (float& v : m.data) v = g(gen);
  return m;
}

TEST(Deltas, Sphinx1sCDDdFollowsItsFormulas) {
  uint32_t seed;
  std::mt19937 gen = fresh_rng(&seed);
  SCOPED_TRACE("random seed " + std::to_string(seed));
  DeltaOptions o;
  o.layout = DeltaOptions::Layout::kSphinx1sCDDd;
  EXPECT_EQ(delta_context(o), 3);
  for (int64_t rows : {1, 2, 5, 40}) {
    const FeatureMatrix c = random_features(gen, rows, 13);
    const FeatureMatrix f = add_deltas(c, o);
    ASSERT_EQ(f.rows, rows);
    ASSERT_EQ(f.dim, 39);
    const auto C = [&](int64_t t, int d) {
      return c.row(std::clamp<int64_t>(t, 0, rows - 1))[d];
    };
    for (int64_t t = 0; t < rows; ++t)
      for (int d = 0; d < 13; ++d) {
        EXPECT_EQ(f.row(t)[d], c.row(t)[d]);
        EXPECT_NEAR(f.row(t)[13 + d], C(t + 2, d) - C(t - 2, d), 1e-5);
        EXPECT_NEAR(f.row(t)[26 + d], (C(t + 3, d) - C(t - 1, d)) - (C(t + 1, d) - C(t - 3, d)), 1e-5);
      }
  }
}

TEST(Deltas, RegressionFollowsTheHtkKaldiFormula) {
  uint32_t seed;
  std::mt19937 gen = fresh_rng(&seed);
  SCOPED_TRACE("random seed " + std::to_string(seed));
  for (int window : {1, 2, 3}) {
    for (int order : {1, 2}) {
      DeltaOptions o;
      o.layout = DeltaOptions::Layout::kRegression;
      o.window = window;
      o.order = order;
      EXPECT_EQ(delta_context(o), order * window);
      const int64_t rows = 30;
      const int dim = 7;
      const FeatureMatrix c = random_features(gen, rows, dim);
      const FeatureMatrix f = add_deltas(c, o);
      ASSERT_EQ(f.dim, dim * (1 + order));
      double denom = 0;
      for (int n = 1; n <= window; ++n) denom += 2.0 * n * n;
      const auto C = [&](int64_t t, int d) {
        return static_cast<double>(c.row(std::clamp<int64_t>(t, 0, rows - 1))[d]);
      };
      // The delta at any (even out-of-range) t, from edge-clamped c.
      const auto D = [&](int64_t t, int d) {
        double s = 0;
        for (int n = 1; n <= window; ++n) s += n * (C(t + n, d) - C(t - n, d));
        return s / denom;
      };
      for (int64_t t = 0; t < rows; ++t)
        for (int d = 0; d < dim; ++d) {
          EXPECT_NEAR(f.row(t)[dim + d], D(t, d), 1e-5);
          if (order == 2) {
            double s = 0;
            for (int n = 1; n <= window; ++n) s += n * (D(t + n, d) - D(t - n, d));
            EXPECT_NEAR(f.row(t)[2 * dim + d], s / denom, 1e-5);
          }
        }
    }
  }
}

TEST(Deltas, RowWindowsWithContextEqualTheWholeUtterance) {
  uint32_t seed;
  std::mt19937 gen = fresh_rng(&seed);
  SCOPED_TRACE("random seed " + std::to_string(seed));
  DeltaOptions sphinx;
  sphinx.layout = DeltaOptions::Layout::kSphinx1sCDDd;
  DeltaOptions reg;
  reg.layout = DeltaOptions::Layout::kRegression;
  reg.window = 2;
  reg.order = 2;
  for (const DeltaOptions& o : {sphinx, reg}) {
    const int64_t rows = 57;
    const FeatureMatrix c = random_features(gen, rows, 5);
    const FeatureMatrix whole = add_deltas(c, o);
    const int ctx = delta_context(o);
    // Stream it in blocks of every size from 1 to 9 frames: each block's
    // window holds ctx frames of history and look-ahead where they exist.
    for (int64_t block = 1; block <= 9; ++block) {
      for (int64_t first = 0; first < rows; first += block) {
        const int64_t count = std::min(block, rows - first);
        const int64_t w0 = std::max<int64_t>(0, first - ctx);
        const int64_t w1 = std::min<int64_t>(rows, first + count + ctx);
        FeatureMatrix win;
        win.rows = w1 - w0;
        win.dim = c.dim;
        win.data.assign(c.row(w0), c.row(w0) + win.rows * c.dim);
        std::vector<float> out(count * whole.dim);
        add_deltas_rows(win, first - w0, count, o, out.data());
        for (int64_t i = 0; i < count; ++i)
          for (int d = 0; d < whole.dim; ++d)
            ASSERT_EQ(out[i * whole.dim + d], whole.row(first + i)[d])
                << "block " << block << " frame " << first + i << " dim " << d;
      }
    }
  }
}

TEST(Deltas, RejectsBadOptions) {
  FeatureMatrix c;
  c.rows = 3;
  c.dim = 2;
  c.data.assign(6, 1.0f);
  DeltaOptions o;
  o.layout = DeltaOptions::Layout::kRegression;
  o.order = 3;
  EXPECT_THROW(add_deltas(c, o), std::invalid_argument);
  o.order = 1;
  o.window = 0;
  EXPECT_THROW(add_deltas(c, o), std::invalid_argument);
  o.window = 1;
  std::vector<float> out(100);
  EXPECT_THROW(add_deltas_rows(c, 2, 2, o, out.data()), std::invalid_argument);
}

// ---------------------------------------------------------------------------
// Normalisation.

TEST(Cmvn, BatchGivesZeroMeanAndUnitVariance) {
  uint32_t seed;
  std::mt19937 gen = fresh_rng(&seed);
  SCOPED_TRACE("random seed " + std::to_string(seed));
  FeatureMatrix m = random_features(gen, 500, 6);
  // Offsets and scales far from (0, 1); dimension 5 constant.
  for (int64_t t = 0; t < m.rows; ++t) {
    for (int d = 0; d < 5; ++d) m.row(t)[d] = 1000.0f * d + (d + 0.5f) * m.row(t)[d];
    m.row(t)[5] = 42.0f;
  }
  const FeatureMatrix orig = m;
  FeatureMatrix cmn_only = m;
  apply_batch_cmn(cmn_only, false);
  apply_batch_cmn(m, true);
  for (int d = 0; d < 6; ++d) {
    double s = 0, s2 = 0, s_cmn = 0, s2_cmn = 0, s_orig = 0, s2_orig = 0;
    for (int64_t t = 0; t < m.rows; ++t) {
      s += m.row(t)[d];
      s2 += m.row(t)[d] * m.row(t)[d];
      s_cmn += cmn_only.row(t)[d];
      s2_cmn += cmn_only.row(t)[d] * cmn_only.row(t)[d];
      s_orig += orig.row(t)[d];
      s2_orig += static_cast<double>(orig.row(t)[d]) * orig.row(t)[d];
    }
    EXPECT_NEAR(s / m.rows, 0.0, 1e-4) << d;
    EXPECT_NEAR(s_cmn / m.rows, 0.0, 1e-3) << d;
    if (d < 5) {
      EXPECT_NEAR(s2 / m.rows, 1.0, 1e-4) << d;
      // CMN alone keeps the spread: the same standard deviation as the
      // column had (the sample's, not the generator's, so no seed can fail
      // it), and that is not already 1.
      const double mean_orig = s_orig / m.rows;
      const double sd_orig = std::sqrt(s2_orig / m.rows - mean_orig * mean_orig);
      EXPECT_NEAR(std::sqrt(s2_cmn / m.rows), sd_orig, 1e-3 * sd_orig) << d;
      EXPECT_GT(sd_orig, 1.5 * (d + 0.5)) << d;
    } else {
      EXPECT_EQ(s2, 0.0);  // a constant dimension becomes 0, not NaN
    }
  }
}

TEST(MinMax, ScalesEachDimensionToTheUnitInterval) {
  uint32_t seed;
  std::mt19937 gen = fresh_rng(&seed);
  FeatureMatrix m = random_features(gen, 200, 4);
  for (int64_t t = 0; t < m.rows; ++t) m.row(t)[3] = -7.0f;
  const FeatureMatrix orig = m;
  apply_min_max(m);
  for (int d = 0; d < 3; ++d) {
    float lo = 1e9f, hi = -1e9f, olo = 1e9f, ohi = -1e9f;
    for (int64_t t = 0; t < m.rows; ++t) {
      lo = std::min(lo, m.row(t)[d]);
      hi = std::max(hi, m.row(t)[d]);
      olo = std::min(olo, orig.row(t)[d]);
      ohi = std::max(ohi, orig.row(t)[d]);
    }
    EXPECT_EQ(lo, 0.0f);
    EXPECT_EQ(hi, 1.0f);
    for (int64_t t = 0; t < m.rows; ++t)
      EXPECT_NEAR(m.row(t)[d], (orig.row(t)[d] - olo) / (ohi - olo), 1e-6);
  }
  for (int64_t t = 0; t < m.rows; ++t) EXPECT_EQ(m.row(t)[3], 0.0f);
}

TEST(LiveCmn, StartsFromInitThenTracksTheRunningMean) {
  // With init given and window W, after n frames the estimate is
  // (W * init + sum of the n frames) / (W + n) while W + n < 2W.
  const int W = 10;
  LiveCmn cmn(2, {5.0f, -5.0f}, W, W);
  double sum0 = 0, sum1 = 0;
  for (int n = 0; n < W - 1; ++n) {
    float f[2] = {static_cast<float>(n), static_cast<float>(2 * n)};
    const float m0 = cmn.mean()[0], m1 = cmn.mean()[1];
    cmn.process(f);
    EXPECT_FLOAT_EQ(f[0], n - m0);
    EXPECT_FLOAT_EQ(f[1], 2 * n - m1);
    sum0 += n;
    sum1 += 2 * n;
    EXPECT_NEAR(cmn.mean()[0], (W * 5.0 + sum0) / (W + n + 1), 1e-5);
    EXPECT_NEAR(cmn.mean()[1], (W * -5.0 + sum1) / (W + n + 1), 1e-5);
  }
  cmn.reset();
  EXPECT_EQ(cmn.mean()[0], 5.0f);
  // Without init the first frame is its own mean.
  LiveCmn first(1, {}, W, W);
  float f = 3.0f;
  first.process(&f);
  EXPECT_EQ(f, 0.0f);
  EXPECT_EQ(first.mean()[0], 3.0f);
  EXPECT_THROW(LiveCmn(3, {1.0f}, W, W), std::invalid_argument);
  EXPECT_THROW(LiveCmn(1, {1.0f}, W, 0), std::invalid_argument);
}

TEST(LiveCmn, InitWeighsInitFramesAndSilentFramesDoNotLearn) {
  // init weighted as 2 frames: after frames 10 and 40 the mean is
  // (2 * 4 + 10 + 40) / 4; a frame that does not learn is normalised by
  // the mean and leaves it alone.
  LiveCmn cmn(1, {4.0f}, 500, 2);
  float f = 10.0f;
  cmn.process(&f);
  EXPECT_FLOAT_EQ(f, 6.0f);
  EXPECT_FLOAT_EQ(cmn.mean()[0], 6.0f);  // (8 + 10) / 3
  float quiet = -50.0f;
  cmn.process(&quiet, /*learn=*/false);
  EXPECT_FLOAT_EQ(quiet, -56.0f);
  EXPECT_FLOAT_EQ(cmn.mean()[0], 6.0f);
  f = 40.0f;
  cmn.process(&f);
  EXPECT_FLOAT_EQ(f, 34.0f);
  EXPECT_FLOAT_EQ(cmn.mean()[0], 14.5f);  // (8 + 10 + 40) / 4
}

TEST(Cmvn, BatchMeanSkipsNegativeC0RowsAsSphinxDoes) {
  // Rows of speech (c0 in 30..60) and of digital silence (c0 = -46): with
  // skip_negative_c0 the mean is the speech rows' alone, yet every row is
  // normalised by it; without, the silent rows pull c0's mean down.
  uint32_t seed;
  std::mt19937 gen = fresh_rng(&seed);
  SCOPED_TRACE("random seed " + std::to_string(seed));
  std::uniform_real_distribution<float> u(-10.0f, 10.0f);
  FeatureMatrix m;
  m.dim = 3;
  m.rows = 300;
  m.data.resize(static_cast<size_t>(m.rows * m.dim));
  double speech[3] = {0, 0, 0};
  int n_speech = 0;
  for (int64_t t = 0; t < m.rows; ++t) {
    const bool silent = t % 7 == 3;
    m.row(t)[0] = silent ? -46.0f : 45.0f + 1.5f * u(gen);
    m.row(t)[1] = u(gen) + (silent ? -20.0f : 5.0f);
    m.row(t)[2] = u(gen);
    if (!silent) {
      for (int d = 0; d < 3; ++d) speech[d] += m.row(t)[d];
      ++n_speech;
    }
  }
  const FeatureMatrix orig = m;
  FeatureMatrix every = m;
  apply_batch_cmn(m, false, /*skip_negative_c0=*/true);
  apply_batch_cmn(every, false);
  for (int64_t t = 0; t < m.rows; ++t)
    for (int d = 0; d < 3; ++d)
      EXPECT_NEAR(m.row(t)[d], orig.row(t)[d] - speech[d] / n_speech, 1e-3) << t << " " << d;
  // The plain mean lies below the speech's in c0 by about (45 + 46) / 7.
  EXPECT_GT(every.row(0)[0] - m.row(0)[0], 10.0f);
  // Every row silent: the mean of all rows, not a division by zero.
  FeatureMatrix quiet = orig;
  for (int64_t t = 0; t < quiet.rows; ++t) quiet.row(t)[0] = -46.0f - (t % 3);
  FeatureMatrix quiet_every = quiet;
  apply_batch_cmn(quiet, false, true);
  apply_batch_cmn(quiet_every, false);
  for (int64_t t = 0; t < quiet.rows; ++t)
    for (int d = 0; d < 3; ++d) EXPECT_EQ(quiet.row(t)[d], quiet_every.row(t)[d]);
}

TEST(LiveCmn, NegativeC0FramesDoNotLearnWhenAsked) {
  LiveCmn cmn(2, {40.0f, 1.0f}, 500, 2, /*skip_negative_c0=*/true);
  float silent[2] = {-46.0f, 3.0f};
  cmn.process(silent);  // normalised, but the mean stays the start's
  EXPECT_FLOAT_EQ(silent[0], -86.0f);
  EXPECT_FLOAT_EQ(silent[1], 2.0f);
  EXPECT_FLOAT_EQ(cmn.mean()[0], 40.0f);
  float speech[2] = {43.0f, 4.0f};
  cmn.process(speech);
  EXPECT_FLOAT_EQ(cmn.mean()[0], 41.0f);  // (2 * 40 + 43) / 3
  EXPECT_FLOAT_EQ(cmn.mean()[1], 2.0f);   // (2 * 1 + 4) / 3
  LiveCmn plain(2, {40.0f, 1.0f}, 500, 2);
  float again[2] = {-46.0f, 3.0f};
  plain.process(again);
  EXPECT_NEAR(plain.mean()[0], (80.0 - 46.0) / 3.0, 1e-5);
}

TEST(Cmvn, SkippingNegativeC0IsForSphinxMfccOnly) {
  FeatureOptions sphinx = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kMfcc);
  sphinx.norm.cmn = NormOptions::Cmn::kBatch;
  EXPECT_FALSE(sphinx.cmn_skips_negative_c0());  // off by default
  sphinx.norm.skip_negative_c0 = true;
  EXPECT_TRUE(sphinx.cmn_skips_negative_c0());
  FeatureOptions fbank = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kFbank);
  fbank.norm.cmn = NormOptions::Cmn::kBatch;
  fbank.norm.skip_negative_c0 = true;
  EXPECT_FALSE(fbank.cmn_skips_negative_c0());
  FeatureOptions kaldi = FeatureOptions::for_flavour(Flavour::kKaldi, FeatureKind::kMfcc);
  kaldi.norm.cmn = NormOptions::Cmn::kBatch;
  kaldi.norm.skip_negative_c0 = true;
  EXPECT_FALSE(kaldi.cmn_skips_negative_c0());
  FeatureOptions none = sphinx;
  none.norm.cmn = NormOptions::Cmn::kNone;
  EXPECT_FALSE(none.cmn_skips_negative_c0());
  FeatureOptions off = sphinx;
  off.norm.skip_negative_c0 = false;
  EXPECT_FALSE(off.cmn_skips_negative_c0());
}

// A minute of speech-like audio: a pulse train through a resonance, with
// pitch, formant and loudness redrawn every 20 ms (15% of the segments
// near-silent). Stationary over a few seconds, but never frame to frame.
std::vector<float> speechlike_minute(std::mt19937& gen) {
  const int sr = 16000;
  const int64_t n = 60LL * sr;
  std::normal_distribution<double> g(0.0, 1.0);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<float> s(n);
  double phase = 0, f0 = 120, y1 = 0, y2 = 0, fm = 800, env = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (i % 320 == 0) {
      f0 = 80 + 170 * u(gen);
      fm = 300 + 2700 * u(gen);
      env = u(gen) < 0.15 ? 0.02 : 0.3 + 0.7 * u(gen);
    }
    phase += 2 * kPi * f0 / sr;
    const double src = (std::fmod(phase, 2 * kPi) < 0.3 ? 1.0 : 0.0) + 0.05 * g(gen);
    const double r = 0.97, th = 2 * kPi * fm / sr;
    const double y = src + 2 * r * std::cos(th) * y1 - r * r * y2;
    y2 = y1;
    y1 = y;
    s[i] = static_cast<float>(800.0 * env * y);
  }
  return s;
}

TEST(LiveCmn, ConvergesToBatchCmnOnALongUtterance) {
  uint32_t seed;
  std::mt19937 gen = fresh_rng(&seed);
  SCOPED_TRACE("random seed " + std::to_string(seed));
  const std::vector<float> audio = speechlike_minute(gen);
  BackendPtr cpu = make_cpu_backend();
  FeatureOptions o = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kMfcc);
  const FeatureMatrix raw = compute_features(o, *cpu, audio.data(), audio.size());
  ASSERT_GT(raw.rows, 5900);

  o.norm.cmn = NormOptions::Cmn::kBatch;
  const FeatureMatrix batch = compute_features(o, *cpu, audio.data(), audio.size());
  o.norm.cmn = NormOptions::Cmn::kLive;
  // A deliberately poor start: Sphinx's en-us cmninit (c0 = 40, rest 0)
  // is far from this signal's mean.
  o.norm.cmn_init.assign(13, 0.0f);
  o.norm.cmn_init[0] = 40.0f;
  // Weighted as Sphinx weighs it (the whole window), so that the start
  // stays far off for seconds; the default weight is checked below.
  const int default_init_frames = o.norm.live_init_frames;
  o.norm.live_init_frames = o.norm.live_window;
  const FeatureMatrix live = compute_features(o, *cpu, audio.data(), audio.size());
  ASSERT_EQ(live.rows, batch.rows);
  o.norm.live_init_frames = default_init_frames;
  const FeatureMatrix live_light = compute_features(o, *cpu, audio.data(), audio.size());
  ASSERT_EQ(live_light.rows, batch.rows);

  // Per dimension: the standard deviation, and the RMS difference between
  // live and batch normalisation over the first and the last 10 seconds.
  const int dim = 13;
  const int64_t ten_s = 1000;
  for (int d = 0; d < dim; ++d) {
    double var = 0, early = 0, late = 0;
    for (int64_t t = 0; t < batch.rows; ++t) var += batch.row(t)[d] * batch.row(t)[d];
    const double sd = std::sqrt(var / batch.rows);
    for (int64_t t = 0; t < ten_s; ++t) {
      const double e = live.row(t)[d] - batch.row(t)[d];
      early += e * e;
    }
    for (int64_t t = batch.rows - ten_s; t < batch.rows; ++t) {
      const double e = live.row(t)[d] - batch.row(t)[d];
      late += e * e;
    }
    early = std::sqrt(early / ten_s);
    late = std::sqrt(late / ten_s);
    // Converged: the live mean ends within a fifth of a standard deviation
    // of the utterance mean (what remains is the 5-10 s window's sampling
    // noise)...
    EXPECT_LT(late, 0.2 * sd) << "dim " << d << " sd " << sd << " early " << early;
    if (d == 0) {
      // ...having started far off (the test would pass vacuously otherwise).
      EXPECT_GT(early, 1.0 * sd) << "sd " << sd;
      EXPECT_LT(late, 0.1 * early);
      // A start weighed as live_init_frames (100) is left behind sooner:
      // c0's error over the first 10 s well below (measured: about half).
      double light = 0;
      for (int64_t t = 0; t < ten_s; ++t) {
        const double e = live_light.row(t)[d] - batch.row(t)[d];
        light += e * e;
      }
      light = std::sqrt(light / ten_s);
      EXPECT_LT(light, 0.7 * early) << "init weight " << default_init_frames;
      std::printf("c0 with the start weighed as %d frames: first 10 s %.4f\n",
                  default_init_frames, light);
    }
    std::printf("dim %2d: sd %.3f  live-batch rms first 10 s %.4f, last 10 s %.4f\n", d, sd,
                early, late);
  }
}

TEST(Postprocess, NormalisesBeforeDeltas) {
  uint32_t seed;
  std::mt19937 gen = fresh_rng(&seed);
  FeatureMatrix m = random_features(gen, 50, 13);
  for (float& v : m.data) v += 10.0f;
  FeatureOptions o;
  o.norm.cmn = NormOptions::Cmn::kBatch;
  o.norm.cvn = true;
  o.delta.layout = DeltaOptions::Layout::kSphinx1sCDDd;
  FeatureMatrix want = m;
  apply_batch_cmn(want, true);
  want = add_deltas(want, o.delta);
  postprocess_utterance(o, m);
  ASSERT_EQ(m.dim, 39);
  ASSERT_EQ(m.data, want.data);
  // Live CMN over an utterance equals LiveCmn fed frame by frame.
  FeatureMatrix a = random_features(gen, 700, 4), b = a;
  FeatureOptions l;
  l.norm.cmn = NormOptions::Cmn::kLive;
  l.norm.live_window = 100;
  postprocess_utterance(l, a);
  LiveCmn cmn(4, {}, 100, l.norm.live_init_frames);
  for (int64_t t = 0; t < b.rows; ++t) cmn.process(b.row(t));
  EXPECT_EQ(a.data, b.data);
}

}  // namespace
}  // namespace gpuspeech
