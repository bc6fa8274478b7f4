// fMLLR on every usable backend against the CPU references, on fresh random
// data each run: statistics, application and the unsupervised posteriors'
// GEMM agree within 1e-4 relative.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

#include "common/backends/backend_registry.h"
#include "common/fmllr/fmllr_estimate.h"
#include "common/fmllr/fmllr_stats.h"
#include "common/fmllr/fmllr_transform.h"
#include "tests/fmllr_test_util.h"
#include "tests/test_backends.h"

namespace gpuspeech {
namespace {

unsigned fresh_seed() {
  const unsigned seed = static_cast<unsigned>(
      std::chrono::steady_clock::now().time_since_epoch().count());
  std::printf("seed %u\n", seed);  // to reproduce a failure
  return seed;
}

double max_abs(const std::vector<double>& v) {
  double m = 0.0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

TEST(FmllrDevices, StatisticsMatchTheReference) {
  std::mt19937 rng(fresh_seed());
  // 39 dimensions in three streams as en-us, features at Sphinx scale
  // (shifted so that c0-like components sit far from zero).
  const GaussianMixtures gm = testing::fmllr_test_model(39, 3, 20, 4, rng);
  std::vector<int32_t> senones;
  std::vector<float> x = testing::draw_features(gm, 1300, senones, rng);
  const GaussianPosteriors post = supervised_posteriors(gm, x.data(), 1300, senones.data());
  const FmllrStats ref = accumulate_fmllr_reference(gm, x.data(), 1300, post);
  for (const std::string& name : testing::backends_under_test()) {
    SCOPED_TRACE(name);
    BackendPtr be = open_backend(name);
    FmllrAccumulator acc(gm, *be, 512);
    acc.accumulate(x.data(), 1300, post);
    const FmllrStats& st = acc.stats();
    EXPECT_NEAR(st.beta, ref.beta, 1e-4 * ref.beta);
    // Per G_i, relative to its largest entry; per k_i likewise.
    const int n = 40;
    for (int i = 0; i < 39; ++i) {
      const std::vector<double> gr(ref.g_matrix(i), ref.g_matrix(i) + n * n);
      const std::vector<double> kr(ref.k_row(i), ref.k_row(i) + n);
      const double gm_ = max_abs(gr), km = max_abs(kr);
      for (int j = 0; j < n * n; ++j)
        ASSERT_NEAR(st.g_matrix(i)[j], gr[static_cast<size_t>(j)], 1e-4 * gm_) << "G_" << i << "[" << j << "]";
      for (int j = 0; j < n; ++j)
        ASSERT_NEAR(st.k_row(i)[j], kr[static_cast<size_t>(j)], 1e-4 * km) << "k_" << i << "[" << j << "]";
    }
    // The same transform from either set of statistics.
    FmllrOptions opt;
    opt.min_frames = 100;
    const FmllrEstimate a = estimate_fmllr(ref, opt), b = estimate_fmllr(st, opt);
    ASSERT_EQ(a.outcome, FmllrOutcome::kUpdated) << a.message;
    ASSERT_EQ(b.outcome, FmllrOutcome::kUpdated) << b.message;
    for (size_t j = 0; j < a.transform.w.size(); ++j)
      EXPECT_NEAR(b.transform.w[j], a.transform.w[j], 1e-3 * (1 + std::fabs(a.transform.w[j])));
  }
}

TEST(FmllrDevices, ApplicationMatchesTheReference) {
  std::mt19937 rng(fresh_seed());
  const FmllrTransform t = testing::random_affine(39, 0.2, rng);
  std::normal_distribution<float> z(0.0f, 10.0f);
  std::vector<float> x(3000 * 39);
  for (float& v : x) v = z(rng);
  std::vector<float> ref(x.size()), got(x.size());
  apply_fmllr_reference(t, x.data(), 3000, ref.data());
  for (const std::string& name : testing::backends_under_test()) {
    SCOPED_TRACE(name);
    BackendPtr be = open_backend(name);
    FmllrApplier app(*be, 39, 1024);
    app.set_transform(t);
    app.apply(x.data(), 3000, got.data());
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_NEAR(got[i], ref[i], 1e-4 * (1.0 + std::fabs(ref[i]))) << "value " << i;
    // Result left on the device, at an offset.
    BufferPtr out = be->alloc(5 + x.size());
    app.apply(x.data(), 3000, *out, 5);
    be->download(*out, got.data(), x.size(), 5);
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_NEAR(got[i], ref[i], 1e-4 * (1.0 + std::fabs(ref[i]))) << "value " << i;
  }
}

TEST(FmllrDevices, UnsupervisedPosteriorsAgree) {
  std::mt19937 rng(fresh_seed());
  const GaussianMixtures gm = testing::fmllr_test_model(12, 2, 16, 8, rng);
  std::vector<int32_t> senones;
  const std::vector<float> x = testing::draw_features(gm, 700, senones, rng);
  BackendPtr cpu = make_cpu_backend();
  UnsupervisedPosteriors ref_post(gm, *cpu, 4, 300);
  std::vector<double> ref_ll;
  ref_post.set_log_likelihood_output(&ref_ll);
  const GaussianPosteriors ref = ref_post.compute(x.data(), 700);
  // Each frame's posteriors sum to 1 per stream; beta counts frames.
  for (int64_t r = 0; r < 700 * 2; ++r) {
    double sum = 0.0;
    for (int64_t j = ref.offsets[static_cast<size_t>(r)]; j < ref.offsets[static_cast<size_t>(r + 1)]; ++j)
      sum += ref.posterior[static_cast<size_t>(j)];
    ASSERT_NEAR(sum, 1.0, 1e-5);
  }
  const FmllrStats ref_stats = accumulate_fmllr_reference(gm, x.data(), 700, ref);
  EXPECT_NEAR(ref_stats.beta, 700.0, 1e-3);
  for (const std::string& name : testing::backends_under_test()) {
    SCOPED_TRACE(name);
    BackendPtr be = open_backend(name);
    UnsupervisedPosteriors up(gm, *be, 4, 256);
    std::vector<double> ll;
    up.set_log_likelihood_output(&ll);
    const GaussianPosteriors got = up.compute(x.data(), 700);
    ASSERT_EQ(got.offsets, ref.offsets);
    // Selections may differ only where two densities tie within rounding;
    // the statistics they give must agree.
    FmllrAccumulator acc(gm, *be);
    acc.accumulate(x.data(), 700, got);
    const FmllrStats& st = acc.stats();
    EXPECT_NEAR(st.beta, ref_stats.beta, 1e-4 * ref_stats.beta);
    const double gmax = max_abs(ref_stats.g), kmax = max_abs(ref_stats.k);
    for (size_t j = 0; j < st.g.size(); ++j) ASSERT_NEAR(st.g[j], ref_stats.g[j], 1e-4 * gmax);
    for (size_t j = 0; j < st.k.size(); ++j) ASSERT_NEAR(st.k[j], ref_stats.k[j], 1e-4 * kmax);
    for (size_t f = 0; f < ll.size(); ++f) ASSERT_NEAR(ll[f], ref_ll[f], 1e-4 * (1 + std::fabs(ref_ll[f])));
  }
}

}  // namespace
}  // namespace gpuspeech
