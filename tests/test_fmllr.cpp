// Feature-space MLLR on the CPU: statistics against their definitions,
// estimation recovering a known distortion, the guards, and the text format.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <unistd.h>

#include "common/backends/backend_registry.h"
#include "common/fmllr/fmllr_estimate.h"
#include "common/fmllr/fmllr_io.h"
#include "common/fmllr/fmllr_stats.h"
#include "common/fmllr/fmllr_stats_io.h"
#include "common/fmllr/fmllr_transform.h"
#include "common/fmllr/symmetric_eigen_range.h"
#include "tests/fmllr_test_util.h"

namespace gpuspeech {
namespace {

using testing::draw_features;
using testing::fmllr_test_model;
using testing::random_affine;

// Supervised statistics of `x` with posteriors evaluated at W x (the EM
// E-step for the current transform), accumulated on the CPU backend.
FmllrStats supervised_stats(const GaussianMixtures& gm, const std::vector<float>& x,
                            const std::vector<int32_t>& senones, const FmllrTransform& w) {
  const int64_t frames = static_cast<int64_t>(senones.size());
  std::vector<float> xt(x.size());
  apply_fmllr_reference(w, x.data(), frames, xt.data());
  const GaussianPosteriors post = supervised_posteriors(gm, xt.data(), frames, senones.data());
  BackendPtr cpu = make_cpu_backend();
  FmllrAccumulator acc(gm, *cpu, 700);  // not a divisor of the frames: a partial block
  acc.accumulate(x.data(), frames, post);
  return acc.stats();
}

void expect_stats_near(const FmllrStats& a, const FmllrStats& b, double rel) {
  ASSERT_EQ(a.dim, b.dim);
  EXPECT_NEAR(a.beta, b.beta, rel * std::fabs(b.beta));
  double kmax = 0.0, gmax = 0.0;
  for (double v : b.k) kmax = std::max(kmax, std::fabs(v));
  for (double v : b.g) gmax = std::max(gmax, std::fabs(v));
  for (size_t i = 0; i < a.k.size(); ++i) ASSERT_NEAR(a.k[i], b.k[i], rel * kmax) << "k " << i;
  for (size_t i = 0; i < a.g.size(); ++i) ASSERT_NEAR(a.g[i], b.g[i], rel * gmax) << "G " << i;
}

TEST(FmllrStats, GemmFormMatchesTheDefinitions) {
  std::mt19937 rng(11);
  const GaussianMixtures gm = fmllr_test_model(7, 2, 5, 3, rng);
  std::vector<int32_t> senones;
  std::vector<float> x = draw_features(gm, 1500, senones, rng);
  senones[3] = -1;  // an unaligned frame contributes nothing
  const GaussianPosteriors post = supervised_posteriors(gm, x.data(), 1500, senones.data());
  const FmllrStats ref = accumulate_fmllr_reference(gm, x.data(), 1500, post);
  EXPECT_NEAR(ref.beta, 1499.0, 1e-3);
  BackendPtr cpu = make_cpu_backend();
  FmllrAccumulator acc(gm, *cpu, 400);
  // Two calls (the second with its own posteriors) sum like one.
  const GaussianPosteriors first = supervised_posteriors(gm, x.data(), 600, senones.data());
  const GaussianPosteriors second =
      supervised_posteriors(gm, x.data() + 600 * 7, 900, senones.data() + 600);
  acc.accumulate(x.data(), 600, first);
  acc.accumulate(x.data() + 600 * 7, 900, second);
  expect_stats_near(acc.stats(), ref, 1e-5);
  // G_i symmetric, and its last diagonal entry sum_t v_ti > 0.
  const FmllrStats& st = acc.stats();
  for (int i = 0; i < 7; ++i)
    for (int p = 0; p < 8; ++p) {
      EXPECT_GT(st.g_matrix(i)[7 * 8 + 7], 0.0);
      for (int q = 0; q < 8; ++q) EXPECT_EQ(st.g_matrix(i)[p * 8 + q], st.g_matrix(i)[q * 8 + p]);
    }
  acc.reset();
  EXPECT_EQ(acc.stats().beta, 0.0);
}

// supervised_posteriors against the textbook: w_k N(x; mu_k, var_k) over
// the aligned senone's mixture, normalised, per stream (two streams of
// different sizes, six Gaussians a codebook: four evaluated together and
// two alone), nothing dropped.
TEST(FmllrStats, SupervisedPosteriorsMatchTheTextbook) {
  std::mt19937 rng(17);
  const int d = 7, streams = 2, density = 6;
  const GaussianMixtures gm = fmllr_test_model(d, streams, 4, density, rng);
  std::vector<int32_t> senones;
  std::vector<float> x = draw_features(gm, 200, senones, rng);
  senones[5] = -1;
  const GaussianPosteriors post = supervised_posteriors(gm, x.data(), 200, senones.data(), 0.0);
  ASSERT_EQ(post.offsets.size(), static_cast<size_t>(200 * streams + 1));
  for (int64_t f = 0; f < 200; ++f)
    for (int s = 0; s < streams; ++s) {
      const int64_t b = post.offsets[static_cast<size_t>(f * streams + s)];
      const int64_t e = post.offsets[static_cast<size_t>(f * streams + s + 1)];
      const int32_t sen = senones[static_cast<size_t>(f)];
      if (sen < 0) {
        EXPECT_EQ(b, e);
        continue;
      }
      ASSERT_EQ(e - b, density);
      const int cb = gm.senone_codebook[static_cast<size_t>(sen)];
      const int sd = gm.stream_dim(s);
      std::vector<double> lp(static_cast<size_t>(density));
      double best = -1e300;
      for (int k = 0; k < density; ++k) {
        const size_t row = (static_cast<size_t>(cb) * density + k) * sd;
        double v = gm.log_weights[(static_cast<size_t>(sen) * streams + s) * density + k];
        for (int j = 0; j < sd; ++j) {
          const double var = gm.variances[static_cast<size_t>(s)][row + j];
          const double diff = x[static_cast<size_t>(f * d + gm.stream_components[static_cast<size_t>(s)][static_cast<size_t>(j)])] -
                              gm.means[static_cast<size_t>(s)][row + j];
          v -= 0.5 * (std::log(6.283185307179586 * var) + diff * diff / var);
        }
        lp[static_cast<size_t>(k)] = v;
        best = std::max(best, v);
      }
      double total = 0.0;
      for (double v : lp) total += std::exp(v - best);
      for (int64_t j = b; j < e; ++j) {
        const int k = post.gaussian[static_cast<size_t>(j)] - cb * density;
        ASSERT_GE(k, 0);
        ASSERT_LT(k, density);
        const double want = std::exp(lp[static_cast<size_t>(k)] - best) / total;
        EXPECT_NEAR(post.posterior[static_cast<size_t>(j)], want, 1e-6 + 1e-6 * want)
            << "frame " << f << " stream " << s << " Gaussian " << k;
      }
    }
}

TEST(FmllrStats, PosteriorsAreChecked) {
  std::mt19937 rng(3);
  const GaussianMixtures gm = fmllr_test_model(4, 1, 3, 2, rng);
  std::vector<int32_t> senones;
  std::vector<float> x = draw_features(gm, 10, senones, rng);
  senones[2] = 3;  // out of range
  EXPECT_THROW(supervised_posteriors(gm, x.data(), 10, senones.data()), std::invalid_argument);
  senones[2] = 0;
  GaussianPosteriors post = supervised_posteriors(gm, x.data(), 10, senones.data());
  BackendPtr cpu = make_cpu_backend();
  FmllrAccumulator acc(gm, *cpu);
  EXPECT_THROW(acc.accumulate(x.data(), 9, post), std::invalid_argument);
  post.gaussian[0] = 6;  // 3 codebooks x 2 Gaussians: 0..5
  EXPECT_THROW(acc.accumulate(x.data(), 10, post), std::invalid_argument);
  x[5] = std::nanf("");
  EXPECT_THROW(supervised_posteriors(gm, x.data(), 10, senones.data()), std::invalid_argument);
}

TEST(FmllrEstimate, RecoversAKnownDistortion) {
  std::mt19937 rng(5);
  const int d = 6;
  const GaussianMixtures gm = fmllr_test_model(d, 2, 12, 2, rng);
  std::vector<int32_t> senones;
  const std::vector<float> clean = draw_features(gm, 6000, senones, rng);
  const FmllrTransform distortion = random_affine(d, 0.2, rng);
  std::vector<float> x(clean.size());
  apply_fmllr_reference(distortion, clean.data(), 6000, x.data());

  FmllrTransform w = FmllrTransform::identity(d);
  FmllrOptions opt;
  opt.iterations = 8;
  // EM: posteriors at the current transform, then the row-by-row update.
  for (int pass = 0; pass < 4; ++pass) {
    const FmllrStats st = supervised_stats(gm, x, senones, w);
    EXPECT_NEAR(st.beta, 6000.0, 1e-2);
    const FmllrEstimate est = estimate_fmllr(st, opt, &w);
    ASSERT_EQ(est.outcome, FmllrOutcome::kUpdated) << est.message;
    EXPECT_EQ(est.regularised_dims, 0);
    ASSERT_EQ(est.objective.size(), 9u);
    for (size_t i = 1; i < est.objective.size(); ++i)
      EXPECT_GE(est.objective[i], est.objective[i - 1] - 1e-9 * std::fabs(est.objective[i - 1]))
          << "pass " << pass << " iteration " << i;
    if (pass == 0) {
      EXPECT_GT(est.objective.back(), est.objective.front() + 0.1);
    }
    w = est.transform;
  }
  // W composed with the distortion is the identity: A M = I, A c + b = 0.
  double worst = 0.0;
  for (int i = 0; i < d; ++i)
    for (int j = 0; j <= d; ++j) {
      double v = j == d ? w.at(i, d) : 0.0;
      for (int k = 0; k < d; ++k) v += w.at(i, k) * distortion.at(k, j);
      const double want = i == j ? 1.0 : 0.0;
      worst = std::max(worst, std::fabs(v - want) / (j == d ? 3.0 : 1.0));
    }
  std::printf("largest deviation of W o distortion from the identity: %.4f\n", worst);
  EXPECT_LT(worst, 0.05) << "largest deviation of W o distortion from the identity";
}

TEST(FmllrEstimate, ObjectiveNeverDecreasesFromARandomStart) {
  std::mt19937 rng(8);
  const GaussianMixtures gm = fmllr_test_model(5, 1, 6, 3, rng);
  std::vector<int32_t> senones;
  const std::vector<float> x = draw_features(gm, 2000, senones, rng);
  const FmllrStats st = supervised_stats(gm, x, senones, FmllrTransform::identity(5));
  const FmllrTransform start = random_affine(5, 0.4, rng);
  FmllrOptions opt;
  opt.iterations = 15;
  const FmllrEstimate est = estimate_fmllr(st, opt, &start);
  ASSERT_EQ(est.outcome, FmllrOutcome::kUpdated);
  EXPECT_NEAR(est.objective.front(), fmllr_objective(st, start) / st.beta, 1e-9);
  for (size_t i = 1; i < est.objective.size(); ++i)
    EXPECT_GE(est.objective[i], est.objective[i - 1] - 1e-12 * std::fabs(est.objective[i - 1]));
  // Converged: the last iterations change the objective by almost nothing.
  EXPECT_LT(est.objective.back() - est.objective[est.objective.size() - 2], 1e-6);
}

TEST(FmllrEstimate, TooFewFramesKeepsTheStart) {
  std::mt19937 rng(9);
  const GaussianMixtures gm = fmllr_test_model(4, 1, 3, 2, rng);
  FmllrStats empty(4);
  FmllrEstimate est = estimate_fmllr(empty);
  EXPECT_EQ(est.outcome, FmllrOutcome::kTooFewFrames);
  EXPECT_TRUE(est.transform.is_identity());
  EXPECT_NE(est.message.find("fewer than"), std::string::npos) << est.message;

  std::vector<int32_t> senones;
  const std::vector<float> x = draw_features(gm, 100, senones, rng);
  const FmllrStats st = supervised_stats(gm, x, senones, FmllrTransform::identity(4));
  const FmllrTransform previous = random_affine(4, 0.1, rng);
  est = estimate_fmllr(st, {}, &previous);  // 100 < 300 frames
  EXPECT_EQ(est.outcome, FmllrOutcome::kTooFewFrames);
  EXPECT_EQ(est.transform.w, previous.w);
  EXPECT_NE(est.message.find("previous"), std::string::npos);
  FmllrOptions few;
  few.min_frames = 50;
  est = estimate_fmllr(st, few, &previous);
  EXPECT_EQ(est.outcome, FmllrOutcome::kUpdated);
  const FmllrTransform wrong = FmllrTransform::identity(3);
  EXPECT_THROW(estimate_fmllr(st, {}, &wrong), std::invalid_argument);
}

// Q diag(lambda) Qᵀ for a random orthogonal Q (Gram-Schmidt on Gaussian
// columns), row-major.
std::vector<double> with_eigenvalues(const std::vector<double>& lambda, std::mt19937& rng) {
  const size_t n = lambda.size();
  std::normal_distribution<double> g(0.0, 1.0);
  std::vector<double> q(n * n);  // column j at q[i * n + j]
  for (size_t j = 0; j < n; ++j) {
    for (;;) {
      for (size_t i = 0; i < n; ++i) q[i * n + j] = g(rng);
      for (size_t c = 0; c < j; ++c) {
        double dot = 0.0;
        for (size_t i = 0; i < n; ++i) dot += q[i * n + c] * q[i * n + j];
        for (size_t i = 0; i < n; ++i) q[i * n + j] -= dot * q[i * n + c];
      }
      double norm = 0.0;
      for (size_t i = 0; i < n; ++i) norm += q[i * n + j] * q[i * n + j];
      if (norm < 1e-6) continue;
      for (size_t i = 0; i < n; ++i) q[i * n + j] /= std::sqrt(norm);
      break;
    }
  }
  std::vector<double> a(n * n, 0.0);
  for (size_t r = 0; r < n; ++r)
    for (size_t c = 0; c < n; ++c)
      for (size_t k = 0; k < n; ++k) a[r * n + c] += q[r * n + k] * lambda[k] * q[c * n + k];
  return a;
}

// The extreme eigenvalues of matrices built with known ones: the sizes of
// fMLLR's G_i (40) and others, spread from 1 to a condition of 1e9,
// negative and repeated eigenvalues, diagonal and 1 x 1 matrices.
TEST(SymmetricEigenRange, FindsTheExtremesOfKnownSpectra) {
  std::mt19937 rng(31);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int n : {1, 2, 3, 5, 17, 40}) {
    for (double cond : {1.0, 1e3, 1e6, 1e9}) {
      std::vector<double> lambda(static_cast<size_t>(n));
      for (double& l : lambda) l = std::pow(cond, u(rng));  // in [1, cond]
      lambda[0] = 1.0;
      if (n > 1) lambda[static_cast<size_t>(n - 1)] = cond;
      for (double scale : {2.5, -0.01}) {  // a positive and a negative definite one
        std::vector<double> sl = lambda;
        for (double& l : sl) l *= scale;
        const double want_lo = *std::min_element(sl.begin(), sl.end());
        const double want_hi = *std::max_element(sl.begin(), sl.end());
        const std::vector<double> a = with_eigenvalues(sl, rng);
        double lo = 0.0, hi = 0.0;
        symmetric_eigen_range(a, n, lo, hi);
        // Rounding in building A: a few ulps of its norm.
        const double tol = 1e-12 * std::fabs(scale) * cond * n;
        EXPECT_NEAR(lo, want_lo, tol) << "n " << n << " cond " << cond << " scale " << scale;
        EXPECT_NEAR(hi, want_hi, tol) << "n " << n << " cond " << cond << " scale " << scale;
      }
    }
  }
  // Indefinite, with a repeated extreme; and a diagonal matrix.
  const std::vector<double> a = with_eigenvalues({-3.0, -3.0, 0.5, 7.0, 7.0, 2.0}, rng);
  double lo = 0.0, hi = 0.0;
  symmetric_eigen_range(a, 6, lo, hi);
  EXPECT_NEAR(lo, -3.0, 1e-12);
  EXPECT_NEAR(hi, 7.0, 1e-12);
  std::vector<double> diag(16, 0.0);
  const double values[4] = {4.0, -1.0, 9.0, 0.0};
  for (int i = 0; i < 4; ++i) diag[static_cast<size_t>(i * 5)] = values[i];
  symmetric_eigen_range(diag, 4, lo, hi);
  EXPECT_DOUBLE_EQ(lo, -1.0);
  EXPECT_DOUBLE_EQ(hi, 9.0);
  // Only the lower triangle is read; a non-finite entry gives NaN.
  std::vector<double> lower = {2.0, 99.0, 1.0, 2.0};  // [[2 1] [1 2]]: 1 and 3
  symmetric_eigen_range(lower, 2, lo, hi);
  EXPECT_NEAR(lo, 1.0, 1e-14);
  EXPECT_NEAR(hi, 3.0, 1e-14);
  lower[2] = std::nan("");
  symmetric_eigen_range(lower, 2, lo, hi);
  EXPECT_TRUE(std::isnan(lo) && std::isnan(hi));
  EXPECT_THROW(symmetric_eigen_range(lower, 0, lo, hi), std::invalid_argument);
  EXPECT_THROW(symmetric_eigen_range(lower, 3, lo, hi), std::invalid_argument);
}

TEST(FmllrEstimate, SingularStatisticsNeverGiveNaN) {
  std::mt19937 rng(10);
  const int d = 5;
  const GaussianMixtures gm = fmllr_test_model(d, 1, 6, 2, rng);
  std::vector<int32_t> senones;
  std::vector<float> x = draw_features(gm, 1000, senones, rng);
  // Component 2 constant: every G_i is singular (column 2 = const * column d).
  for (int64_t f = 0; f < 1000; ++f) x[static_cast<size_t>(f * d + 2)] = 1.5f;
  const FmllrStats st = supervised_stats(gm, x, senones, FmllrTransform::identity(d));
  const FmllrEstimate est = estimate_fmllr(st);
  std::printf("singular statistics: %s: %s\n", to_string(est.outcome), est.message.c_str());
  EXPECT_TRUE(est.transform.all_finite());
  for (double q : est.objective) EXPECT_TRUE(std::isfinite(q));
  if (est.outcome == FmllrOutcome::kUpdated) {
    EXPECT_EQ(est.regularised_dims, d) << est.message;
    EXPECT_NE(est.message.find("regularised"), std::string::npos);
  } else {
    EXPECT_EQ(est.outcome, FmllrOutcome::kRefused);
    EXPECT_TRUE(est.transform.is_identity());
  }
  // Non-finite and zero statistics are refused.
  FmllrStats bad = st;
  bad.g[3] = std::nan("");
  EXPECT_EQ(estimate_fmllr(bad).outcome, FmllrOutcome::kRefused);
  FmllrStats zero(d);
  zero.beta = 1000.0;
  const FmllrEstimate z = estimate_fmllr(zero);
  EXPECT_EQ(z.outcome, FmllrOutcome::kRefused);
  EXPECT_TRUE(z.transform.is_identity());
  EXPECT_NE(z.message.find("zero or not finite"), std::string::npos) << z.message;
}

TEST(FmllrTransform, ApplierMatchesTheReference) {
  std::mt19937 rng(12);
  const FmllrTransform t = random_affine(9, 0.3, rng);
  std::normal_distribution<float> z(0.0f, 20.0f);
  std::vector<float> x(2500 * 9);
  for (float& v : x) v = z(rng);
  std::vector<float> ref(x.size()), got(x.size());
  apply_fmllr_reference(t, x.data(), 2500, ref.data());
  BackendPtr cpu = make_cpu_backend();
  FmllrApplier app(*cpu, 9, 1000);
  app.apply(x.data(), 2500, got.data());  // identity until set
  EXPECT_EQ(got, x);
  app.set_transform(t);
  app.apply(x.data(), 2500, got.data());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(got[i], ref[i], 1e-4 * (1 + std::fabs(ref[i])));
  EXPECT_THROW(app.set_transform(FmllrTransform::identity(8)), std::invalid_argument);
  FmllrTransform nan = t;
  nan.at(1, 1) = std::nan("");
  EXPECT_THROW(app.set_transform(nan), std::invalid_argument);
}

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/fmllr_" + std::to_string(getpid()) + "_" + name;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

TEST(FmllrIo, RoundTripsExactly) {
  std::mt19937 rng(13);
  const FmllrTransform t = random_affine(39, 0.3, rng);
  const std::string path = temp_path("rt.mat");
  write_fmllr_transform(path, t);
  const FmllrTransform back = read_fmllr_transform(path, 39);
  EXPECT_EQ(back.dim, 39);
  EXPECT_EQ(back.w, t.w);
  std::remove(path.c_str());
}

TEST(FmllrIo, ReadsKaldiLayouts) {
  // ']' on the last row's line (copy-matrix) or on its own; tabs; CRLF.
  FmllrTransform t = parse_fmllr_transform(" [\n  1 0 0.5 \n  0 2 -1 ]\n", "a.mat");
  EXPECT_EQ(t.dim, 2);
  EXPECT_EQ(t.w, (std::vector<double>{1, 0, 0.5, 0, 2, -1}));
  t = parse_fmllr_transform("[\r\n1\t0\t0.5\r\n0 2 -1e0\r\n]", "b.mat", 2);
  EXPECT_EQ(t.w, (std::vector<double>{1, 0, 0.5, 0, 2, -1}));
}

void expect_format_error(const std::string& text, const std::string& want, int expected_dim = -1) {
  try {
    parse_fmllr_transform(text, "x.mat", expected_dim);
    ADD_FAILURE() << "no error for: " << text;
  } catch (const FmllrFormatError& e) {
    EXPECT_NE(std::string(e.what()).find(want), std::string::npos)
        << "message: " << e.what() << "\nexpected to contain: " << want;
  }
}

TEST(FmllrIo, MalformedFilesNameTheFileAndLine) {
  expect_format_error("", "x.mat:1: no '['");
  expect_format_error("1 2 3", "x.mat:1: expected '['");
  expect_format_error("[\n 1 0 0\n 0 1 0\n", "x.mat:4: the matrix is not closed");
  expect_format_error("[\n 1 0 0\n 0 1 ]", "x.mat:3: row 2 has 2 numbers, the first row 3");
  expect_format_error("[\n 1 0 0\n 0 x1 0 ]", "x.mat:3: 'x1' is not a number");
  expect_format_error("[\n 1 0 nan\n 0 1 0 ]", "x.mat:2: 'nan' is not a finite number");
  expect_format_error("[\n 1 0 1e999\n 0 1 0 ]", "x.mat:2: '1e999' is not a finite number");
  expect_format_error("[\n 1 0 0\n 0 1 0 ] junk", "x.mat:3: unexpected 'j' after the closing ']'");
  expect_format_error("[ 1 [ 2 ]", "x.mat:1: a second '['");
  expect_format_error("[ ]", "x.mat: the transform matrix is empty");
  expect_format_error("[ 1 0 \n 0 1 ]", "x.mat: a 2 x 2 matrix is not an fMLLR transform");
  expect_format_error("[ 1 0 0\n 0 1 0 ]", "x.mat: a 2 x 3 transform, the features have dimension 39", 39);
  EXPECT_THROW(read_fmllr_transform(temp_path("does-not-exist")), FmllrFormatError);
  const std::string path = temp_path("bad.mat");
  write_text(path, "[\n 1 0 0\n 0 1 ]\n");
  try {
    read_fmllr_transform(path);
    ADD_FAILURE();
  } catch (const FmllrFormatError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ":3:"), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
}

// Statistics saved and read again (fmllr_stats_io.h): the same doubles,
// estimates from them the same transform; scaled statistics give the same
// estimate; every malformed file names itself and the reason.
TEST(FmllrStatsIo, RoundTripsExactlyAndScalingKeepsTheEstimate) {
  std::mt19937 rng(21);
  const int d = 5;
  const GaussianMixtures gm = fmllr_test_model(d, 2, 6, 2, rng);
  std::vector<int32_t> senones;
  const std::vector<float> x = draw_features(gm, 800, senones, rng);
  const FmllrStats st = supervised_stats(gm, x, senones, FmllrTransform::identity(d));
  const std::string path = temp_path("rt.stats");
  write_fmllr_stats(path, st);
  const FmllrStats back = read_fmllr_stats(path, d);
  EXPECT_EQ(back.dim, d);
  EXPECT_EQ(back.beta, st.beta);
  EXPECT_EQ(back.k, st.k);
  EXPECT_EQ(back.g, st.g);
  std::remove(path.c_str());

  FmllrOptions opt;
  opt.min_frames = 10.0;
  const FmllrEstimate a = estimate_fmllr(st, opt);
  FmllrStats scaled = st;
  scaled.scale(0.25);
  EXPECT_DOUBLE_EQ(scaled.beta, 0.25 * st.beta);
  const FmllrEstimate b = estimate_fmllr(scaled, opt);
  ASSERT_EQ(a.outcome, FmllrOutcome::kUpdated) << a.message;
  ASSERT_EQ(b.outcome, FmllrOutcome::kUpdated) << b.message;
  for (size_t i = 0; i < a.transform.w.size(); ++i) EXPECT_NEAR(a.transform.w[i], b.transform.w[i], 1e-6);
  // add_scaled is add of a scaled copy.
  FmllrStats sum1 = st, sum2 = st, part = st;
  part.scale(0.5);
  sum1.add(part);
  sum2.add_scaled(st, 0.5);
  EXPECT_EQ(sum1.beta, sum2.beta);
  EXPECT_EQ(sum1.k, sum2.k);
  EXPECT_EQ(sum1.g, sum2.g);
}

void expect_stats_error(const std::string& text, const std::string& want, int expected_dim = -1) {
  try {
    parse_fmllr_stats(text, "x.stats", expected_dim);
    ADD_FAILURE() << "no error for: " << text;
  } catch (const FmllrFormatError& e) {
    EXPECT_NE(std::string(e.what()).find(want), std::string::npos)
        << "message: " << e.what() << "\nexpected to contain: " << want;
  }
}

// Statistics of dimension 1 as text: beta, k (1 x 2), G_0 (2 x 2).
std::string stats_text(double beta, double pad, double k0, double k1, double g00, double g01, double g10,
                       double g11) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "[\n %.17g %.17g\n %.17g %.17g\n %.17g %.17g\n %.17g %.17g ]\n", beta, pad,
                k0, k1, g00, g01, g10, g11);
  return buf;
}

TEST(FmllrStatsIo, MalformedFilesNameTheFileAndTheReason) {
  const FmllrStats ok = parse_fmllr_stats(stats_text(10, 0, 1, 2, 3, 0.5, 0.5, 10), "x.stats", 1);
  EXPECT_EQ(ok.beta, 10.0);
  EXPECT_EQ(ok.k, (std::vector<double>{1, 2}));
  EXPECT_EQ(ok.g, (std::vector<double>{3, 0.5, 0.5, 10}));
  expect_stats_error("[ ]", "x.stats: the statistics matrix is empty");
  expect_stats_error("[ 1 0 0\n 0 1 0 ]", "x.stats: a 2 x 3 matrix is not fMLLR statistics");
  expect_stats_error("[ 1\n 2 ]", "x.stats: a 2 x 1 matrix is not fMLLR statistics");
  expect_stats_error(stats_text(10, 0, 1, 2, 3, 0.5, 0.5, 10), "statistics of dimension 1, the features have dimension 39", 39);
  expect_stats_error(stats_text(-1, 0, 1, 2, 3, 0.5, 0.5, 10), "x.stats: beta (the frame count, row 0) is negative");
  expect_stats_error(stats_text(10, 7, 1, 2, 3, 0.5, 0.5, 10), "x.stats: row 0 holds beta and then zeros");
  expect_stats_error(stats_text(10, 0, 1, 2, 3, 0.5, 0.6, 10), "x.stats: G_0 is not symmetric");
  expect_stats_error(stats_text(10, 0, 1, 2, -3, 0.5, 0.5, 10), "x.stats: G_0 has a negative diagonal entry");
  expect_stats_error(stats_text(0, 0, 1, 2, 3, 0.5, 0.5, 10), "x.stats: statistics with no frames (beta 0) but non-zero sums");
  expect_stats_error(stats_text(5, 0, 0, 0, 0, 0, 0, 0), "x.stats: frames (beta > 0) but all sums zero");
  expect_stats_error("[\n 1 0\n 0 x ]", "x.stats:3: 'x' is not a number");
  EXPECT_THROW(read_fmllr_stats(temp_path("does-not-exist")), FmllrFormatError);
  FmllrStats inf(1);
  inf.beta = 1.0;
  inf.k[0] = INFINITY;
  EXPECT_THROW(write_fmllr_stats(temp_path("inf.stats"), inf), FmllrFormatError);
}

}  // namespace
}  // namespace gpuspeech
