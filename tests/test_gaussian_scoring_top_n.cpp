// Gaussian selection in acoustic scoring (pocketsphinx's -topn;
// Backend::senone_scores_top_n, ScorerOptions::top_n) on the CPU backend:
//
//  - the operation on hand-checked numbers (ranking, ties, -inf, NaN, the
//    log-domain branch for tiny weights);
//  - the operation against an independent double-precision implementation
//    of its definition (a full stable sort instead of the insertion rule) on
//    fresh random inputs, with forced ties, zero and tiny weights;
//  - the whole GaussianScorer with top_n against textbook densities in
//    double, on random models of every layout and on the en-us model with
//    real speech, and top_n >= density against the exact mixtures.
//
// Device backends are compared with the CPU in
// test_gaussian_scoring_devices.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "common/backends/backend_compare.h"
#include "common/backends/backend_registry.h"
#include "common/features/feature_pipeline.h"
#include "common/scoring/gaussian_scoring.h"
#include "common/model/acoustic_model.h"
#include "common/model/gaussian_mixtures.h"
#include "tests/gaussian_reference.h"
#include "tests/test_backends.h"

namespace gpuspeech {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

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

// --- the definition, independently, in double -----------------------------

// Backend::senone_scores_top_n's result from the same float inputs: each
// codebook's Gaussians fully sorted by (density descending, index
// ascending), the first n kept, then the log of the weighted sum with the
// largest term factored out. The operation's two branches (linear sum, log
// domain) are one formula here; they agree to float rounding.
std::vector<double> reference_top_n(const std::vector<float>& dens, int codebooks, int density,
                                    int64_t frames, int top_n, const std::vector<float>& codebook,
                                    const std::vector<float>& weights, int senones, int streams) {
  const int n = std::min(top_n, density);
  std::vector<double> out(static_cast<size_t>(frames) * senones, 0.0);
  std::vector<int> order(static_cast<size_t>(density));
  for (int64_t f = 0; f < frames; ++f)
    for (int s = 0; s < senones; ++s) {
      double total = 0.0;
      for (int t = 0; t < streams; ++t) {
        const int64_t g = static_cast<int64_t>(t) * codebooks + static_cast<int>(codebook[s]);
        const auto d = [&](int k) { return double(dens[(g * density + k) * frames + f]); };
        bool nan = false;
        for (int k = 0; k < density; ++k) nan = nan || std::isnan(d(k));
        if (nan) {
          total += NAN;
          continue;
        }
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return d(a) > d(b); });
        double top = -INFINITY;
        for (int i = 0; i < n; ++i) {
          const double w = weights[(static_cast<size_t>(s) * streams + t) * density + order[i]];
          if (w > 0) top = std::max(top, std::log(w) + d(order[i]));
        }
        if (top == -INFINITY || d(order[0]) == -INFINITY) {
          total += -INFINITY;
          continue;
        }
        double sum = 0.0;
        for (int i = 0; i < n; ++i) {
          const double w = weights[(static_cast<size_t>(s) * streams + t) * density + order[i]];
          if (w > 0) sum += std::exp(std::log(w) + d(order[i]) - top);
        }
        total += top + std::log(sum);
      }
      out[f * senones + s] = total;
    }
  return out;
}

// max |got - want| / (1 + |want|), infinite where one side is not finite
// and they differ (NaN equals NaN).
double max_rel_error(const std::vector<float>& got, const std::vector<double>& want) {
  double worst = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want[i];
    if (std::isnan(g) && std::isnan(w)) continue;
    if (!std::isfinite(g) || !std::isfinite(w)) {
      if (g != w) return INFINITY;
      continue;
    }
    worst = std::max(worst, std::fabs(g - w) / (1.0 + std::fabs(w)));
  }
  return worst;
}

// --- the operation on hand-checked numbers ---------------------------------

TEST(SenoneScoresTopN, HandChecked) {
  BackendPtr cpu = make_cpu_backend();
  // 1 stream, 2 codebooks of 4 Gaussians, 2 frames (gaussian-major rows).
  //   codebook 0, frame 0: densities -1, -5, -2, -2  -> ranked 0, 2, 3, 1
  //   codebook 0, frame 1: -inf everywhere          -> -inf
  //   codebook 1, frame 0: -3, -3, -3, -3 (ties)     -> ranked 0, 1, 2, 3
  //   codebook 1, frame 1: -4, NaN, -1, -1           -> NaN
  const std::vector<float> dens = {-1.f, kNegInf, -5.f, kNegInf, -2.f, kNegInf, -2.f, kNegInf,
                                   -3.f, -4.f,    -3.f, NAN,     -3.f, -1.f,    -3.f, -1.f};
  // 3 senones: 0 and 1 in codebook 0, 2 in codebook 1.
  const std::vector<float> codebook = {0.f, 0.f, 1.f};
  const std::vector<float> weights = {0.1f, 0.2f, 0.3f, 0.4f,   // s0
                                      0.0f, 0.5f, 0.0f, 0.5f,   // s1: zero on the top two
                                      0.4f, 0.3f, 0.2f, 0.1f};  // s2
  BufferPtr d = upload(*cpu, dens), c = upload(*cpu, codebook), w = upload(*cpu, weights);
  BufferPtr out = upload(*cpu, std::vector<float>(1 + 2 * 3 + 1, 7.f));
  cpu->senone_scores_top_n(*d, 2, 4, 2, 2, *c, *w, 3, 1, *out, 1);
  std::vector<float> r = download(*cpu, *out);
  EXPECT_EQ(r[0], 7.f);
  EXPECT_EQ(r[7], 7.f);
  // top 2 of codebook 0 at frame 0: Gaussians 0 (-1) and 2 (-2).
  EXPECT_NEAR(r[1 + 0], std::log(0.1 * std::exp(-1.0) + 0.3 * std::exp(-2.0)), 1e-6);
  // s1 has zero weight on both: -inf (through the log-domain branch).
  EXPECT_EQ(r[1 + 1], kNegInf);
  // ties: the two lowest indices, 0 and 1.
  EXPECT_NEAR(r[1 + 2], -3.0 + std::log(0.4 + 0.3), 1e-6);
  EXPECT_EQ(r[1 + 3 + 0], kNegInf);
  EXPECT_EQ(r[1 + 3 + 1], kNegInf);
  EXPECT_TRUE(std::isnan(r[1 + 3 + 2]));

  // top 3: the tie at -2 is broken by index (2 before 3), so s1 (zero
  // weights on 0 and 2) gets Gaussian 3 only.
  cpu->senone_scores_top_n(*d, 2, 4, 2, 3, *c, *w, 3, 1, *out, 1);
  r = download(*cpu, *out);
  EXPECT_NEAR(r[1 + 1], std::log(0.5) - 2.0, 1e-6);
  // top_n above the density: all four.
  cpu->senone_scores_top_n(*d, 2, 4, 2, 16, *c, *w, 3, 1, *out, 1);
  r = download(*cpu, *out);
  EXPECT_NEAR(r[1 + 0],
              std::log(0.1 * std::exp(-1.0) + 0.2 * std::exp(-5.0) + 0.3 * std::exp(-2.0) +
                       0.4 * std::exp(-2.0)),
              1e-6);
}

TEST(SenoneScoresTopN, TinyWeightsTakeTheLogDomainBranch) {
  // Weights of 1e-30 on Gaussians 50 nats apart: S = 1e-30 * (1 + e^-50)
  // is far below 2^-60, so the log-domain branch computes it; the linear
  // sum would still be representable here, so both can be checked.
  BackendPtr cpu = make_cpu_backend();
  const std::vector<float> dens = {-10.f, -60.f, -200.f};  // 3 Gaussians, 1 frame
  BufferPtr d = upload(*cpu, dens), c = upload(*cpu, {0.f}),
            w = upload(*cpu, {1e-30f, 1e-30f, 1.0f}), out = cpu->alloc(1);
  cpu->senone_scores_top_n(*d, 1, 3, 1, 2, *c, *w, 1, 1, *out);
  EXPECT_NEAR(download(*cpu, *out)[0], std::log(1e-30) - 10.0 + std::log1p(std::exp(-50.0)),
              1e-5);
  // A weight of 1e-40 (denormal in float) on the best Gaussian and 1 on one
  // 100 nats lower: the linear sum would underflow to a denormal and lose
  // digits; the log-domain branch does not.
  const std::vector<float> dens2 = {-1.f, -101.f};
  BufferPtr d2 = upload(*cpu, dens2), w2 = upload(*cpu, {1e-40f, 1.0f});
  cpu->senone_scores_top_n(*d2, 1, 2, 1, 2, *c, *w2, 1, 1, *out);
  const double want = std::log(std::exp(std::log(double(1e-40f)) - 1.0) + std::exp(-101.0));
  EXPECT_NEAR(download(*cpu, *out)[0], want, 1e-4);
}

TEST(SenoneScoresTopN, RejectsMisuse) {
  BackendPtr cpu = make_cpu_backend();
  BufferPtr d = cpu->alloc(8), c = cpu->alloc(2), w = cpu->alloc(8), out = cpu->alloc(4);
  cpu->upload(*c, std::vector<float>{0.f, 1.f}.data(), 2);
  EXPECT_NO_THROW(cpu->senone_scores_top_n(*d, 2, 2, 2, 1, *c, *w, 2, 1, *out));
  EXPECT_THROW(cpu->senone_scores_top_n(*d, 2, 2, 2, 0, *c, *w, 2, 1, *out), BackendError);
  EXPECT_THROW(cpu->senone_scores_top_n(*d, 2, 2, 2, Backend::kMaxTopN + 1, *c, *w, 2, 1, *out),
               BackendError);
  EXPECT_THROW(cpu->senone_scores_top_n(*d, 2, 2, 3, 1, *c, *w, 2, 1, *out), BackendError);
  EXPECT_THROW(cpu->senone_scores_top_n(*d, 2, 2, 2, 1, *c, *w, 3, 1, *out), BackendError);
  EXPECT_THROW(cpu->senone_scores_top_n(*d, 2, 2, 2, 1, *c, *w, 2, 1, *out, 1), BackendError);
  EXPECT_THROW(cpu->senone_scores_top_n(*d, 0, 2, 2, 1, *c, *w, 2, 1, *out), BackendError);
  EXPECT_THROW(cpu->senone_scores_top_n(*d, 2, 2, 2, 1, *c, *w, 2, 0, *out), BackendError);
}

// --- the operation against the double reference -----------------------------

struct OpCase {
  int codebooks, density, streams, senones, top_n;
  int64_t frames;
};

TEST(SenoneScoresTopN, MatchesDoubleDefinitionOnRandomInputs) {
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::uniform_real_distribution<float> uni(0.f, 1.f);
  const OpCase cases[] = {{1, 256, 1, 40, 4, 3},   {42, 128, 1, 300, 4, 67},
                          {7, 8, 3, 50, 2, 131},   {5, 16, 4, 23, 16, 5},
                          {30, 4, 2, 30, 8, 1},    {3, 64, 1, 17, 1, 70}};
  for (const OpCase& k : cases) {
    SCOPED_TRACE("codebooks " + std::to_string(k.codebooks) + ", density " +
                 std::to_string(k.density) + ", streams " + std::to_string(k.streams) +
                 ", top_n " + std::to_string(k.top_n) + ", frames " + std::to_string(k.frames));
    const size_t rows = static_cast<size_t>(k.streams) * k.codebooks * k.density;
    std::vector<float> dens(rows * k.frames);
    for (float& v : dens) {
      // Scores of -150..-30 nats; a third rounded to whole nats so that
      // ranks tie; a few -inf.
      v = -150.f + 120.f * uni(rng);
      if (rng() % 3 == 0) v = std::round(v / 8.f) * 8.f;
      if (rng() % 200 == 0) v = kNegInf;
    }
    std::vector<float> codebook(static_cast<size_t>(k.senones));
    for (float& c : codebook) c = static_cast<float>(rng() % k.codebooks);
    std::vector<float> weights(static_cast<size_t>(k.senones) * k.streams * k.density);
    for (size_t s = 0; s < weights.size() / k.density; ++s) {
      float* w = weights.data() + s * k.density;
      double total = 0.0;
      for (int j = 0; j < k.density; ++j) {
        w[j] = rng() % 4 == 0 ? 0.0f : uni(rng);  // a quarter zero
        total += w[j];
      }
      for (int j = 0; j < k.density; ++j) w[j] = static_cast<float>(w[j] / (total + 1e-30));
      if (s % 7 == 3)  // tiny weights: the log-domain branch
        for (int j = 0; j < k.density; ++j) w[j] *= 1e-25f;
    }
    BackendPtr cpu = make_cpu_backend();
    BufferPtr d = upload(*cpu, dens), c = upload(*cpu, codebook), w = upload(*cpu, weights);
    BufferPtr out = cpu->alloc(static_cast<size_t>(k.frames) * k.senones);
    cpu->senone_scores_top_n(*d, k.codebooks, k.density, k.frames, k.top_n, *c, *w, k.senones,
                             k.streams, *out);
    const std::vector<float> got = download(*cpu, *out);
    const std::vector<double> want = reference_top_n(dens, k.codebooks, k.density, k.frames,
                                                     k.top_n, codebook, weights, k.senones,
                                                     k.streams);
    // Float rounding of sums of a few terms and of the result: ~1e-7
    // relative; 1e-6 is a tenth of what one wrong term (weight 1e-3 of the
    // sum) would move.
    const double err = max_rel_error(got, want);
    std::printf("[ top-n ] op vs double: max rel error %.2e\n", err);
    EXPECT_LT(err, 1e-6);
  }
}

// --- the whole scorer --------------------------------------------------------

// Textbook log densities in double: gaussian-major, frames fastest.
std::vector<double> reference_densities(const GaussianMixtures& gm, const float* x,
                                        int64_t frames) {
  const int per_stream = gm.num_codebooks * gm.gaussians_per_codebook;
  std::vector<double> out(static_cast<size_t>(per_stream) * gm.num_streams() * frames);
  for (int t = 0; t < gm.num_streams(); ++t) {
    const int dim = gm.stream_dim(t);
    for (int g = 0; g < per_stream; ++g)
      for (int64_t f = 0; f < frames; ++f) {
        double v = 0.0;
        for (int d = 0; d < dim; ++d) {
          const double mu = gm.means[t][static_cast<size_t>(g) * dim + d];
          const double var = gm.variances[t][static_cast<size_t>(g) * dim + d];
          const double diff = x[f * gm.feature_dim() + gm.stream_components[t][d]] - mu;
          v -= 0.5 * (diff * diff / var + std::log(2.0 * M_PI * var));
        }
        out[(static_cast<size_t>(t) * per_stream + g) * frames + f] = v;
      }
  }
  return out;
}

// The scorer's top_n result against the definition on double densities.
// Where the n-th and (n+1)-th densities of a codebook are within `margin`
// the float scorer may rank them the other way (a different but equally
// valid selection): those (frame, senone) pairs are not compared.
struct ScorerCheck {
  double max_error = 0.0;
  int64_t compared = 0, skipped = 0;
};

// ScorerOptions::density_floor's definition in double: per stream and
// frame, densities below (best - floor) move to within a thousandth of
// their excess below it.
void reference_floor(std::vector<double>& dens, int per_stream, int streams, int64_t frames,
                     double floor) {
  for (int t = 0; t < streams; ++t)
    for (int64_t f = 0; f < frames; ++f) {
      const auto at = [&](int g) -> double& {
        return dens[(static_cast<size_t>(t) * per_stream + g) * frames + f];
      };
      double best = -INFINITY;
      for (int g = 0; g < per_stream; ++g) best = std::max(best, at(g));
      const double lo = best - floor;
      for (int g = 0; g < per_stream; ++g)
        if (at(g) < lo) at(g) = lo + 1e-3 * (at(g) - lo);
    }
}

ScorerCheck check_scorer_top_n(const GaussianMixtures& gm, const std::vector<float>& x,
                               int64_t frames, int top_n, const std::vector<float>& got,
                               double margin, double floor = 0.0) {
  std::vector<double> dens = reference_densities(gm, x.data(), frames);
  const int D = gm.gaussians_per_codebook, C = gm.num_codebooks, T = gm.num_streams();
  if (floor > 0.0) reference_floor(dens, C * D, T, frames, floor);
  const int n = std::min(top_n, D);
  ScorerCheck r;
  std::vector<int> order(static_cast<size_t>(D));
  for (int64_t f = 0; f < frames; ++f)
    for (int s = 0; s < gm.num_senones; ++s) {
      double total = 0.0;
      bool ambiguous = false;
      for (int t = 0; t < T; ++t) {
        const size_t base = (static_cast<size_t>(t) * C + gm.senone_codebook[s]) * D;
        const auto d = [&](int k) { return dens[(base + k) * frames + f]; };
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return d(a) > d(b); });
        if (n < D && d(order[n - 1]) - d(order[n]) < margin) ambiguous = true;
        const float* lw = gm.log_weights.data() + (static_cast<size_t>(s) * T + t) * D;
        double top = -INFINITY, sum = 0.0;
        for (int i = 0; i < n; ++i) top = std::max(top, lw[order[i]] + d(order[i]));
        for (int i = 0; i < n; ++i)
          if (lw[order[i]] != -INFINITY) sum += std::exp(lw[order[i]] + d(order[i]) - top);
        total += top + std::log(sum);
      }
      if (ambiguous) {
        ++r.skipped;
        continue;
      }
      ++r.compared;
      r.max_error = std::max(r.max_error, std::fabs(got[f * gm.num_senones + s] - total));
    }
  return r;
}

TEST(GaussianScorerTopN, RandomModelsMatchDoubleDefinition) {
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  struct Layout {
    const char* name;
    testing::RandomModelSpec spec;
    int64_t frames;
    int top_n;
  };
  std::vector<Layout> layouts;
  testing::RandomModelSpec s;
  s.num_senones = 40, s.num_codebooks = 40, s.gaussians_per_codebook = 8;
  layouts.push_back({"continuous, top 4 of 8", s, 37, 4});
  s.num_senones = 60, s.num_codebooks = 1, s.gaussians_per_codebook = 256;
  layouts.push_back({"semi-continuous, top 4 of 256", s, 21, 4});
  s.num_senones = 120, s.num_codebooks = 6, s.gaussians_per_codebook = 128;
  s.zero_weight_fraction = 0.3;
  layouts.push_back({"PTM, sparse weights, top 2", s, 29, 2});
  s.stream_dims = {12, 24, 3}, s.num_codebooks = 3, s.gaussians_per_codebook = 64;
  s.zero_weight_fraction = 0.0;
  layouts.push_back({"3 streams, top 16", s, 13, 16});
  BackendPtr cpu = make_cpu_backend();
  for (const Layout& l : layouts) {
    SCOPED_TRACE(l.name);
    const GaussianMixtures gm = testing::random_mixtures(l.spec, rng);
    const std::vector<float> x = testing::random_features(gm, l.spec, l.frames, rng);
    ScorerOptions opts;
    opts.top_n = l.top_n;
    opts.block_frames = 8;  // several blocks, one partial
    GaussianScorer scorer(gm, *cpu, opts);
    EXPECT_EQ(scorer.top_n(), l.top_n);
    std::vector<float> got(static_cast<size_t>(l.frames) * gm.num_senones);
    scorer.score(x.data(), l.frames, got.data());
    const ScorerCheck c = check_scorer_top_n(gm, x, l.frames, l.top_n, got, 1e-3);
    std::printf("[ top-n ] %-30s vs double: max |error| %.2e nats (%lld compared, %lld skipped)\n",
                l.name, c.max_error, static_cast<long long>(c.compared),
                static_cast<long long>(c.skipped));
    EXPECT_GT(c.compared, c.skipped * 10);
    // The GEMM's float error, as for full mixtures (test_gaussian_scoring.cpp).
    EXPECT_LE(c.max_error, 1e-3);
  }
}

TEST(DensityFloor, HandChecked) {
  // Two streams of 3 rows, 2 frames (rows outer, frames inner).
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> d = {
      // stream 0: frame 0 best -1, frame 1 best -inf (all -inf)
      -1.0f, -inf,   //
      -5.0f, -inf,   //
      -1011.0f, -inf,
      // stream 1: a NaN never wins the maximum and stays NaN
      NAN, 2.0f,     //
      -100.0f, -7.999f,
      -20.0f, -1e30f};
  BackendPtr cpu = make_cpu_backend();
  BufferPtr buf = cpu->alloc(d.size());
  cpu->upload(*buf, d.data(), d.size());
  cpu->floor_densities(*buf, 2, 3, 2, 10.0f);
  cpu->download(*buf, d.data(), d.size());
  EXPECT_EQ(d[0], -1.0f);
  EXPECT_EQ(d[2], -5.0f);                    // within the floor: unchanged
  EXPECT_FLOAT_EQ(d[4], -11.0f - 1.0f);      // -11 + 1e-3 * (-1000)
  EXPECT_EQ(d[1], -inf);                     // no finite best: unchanged
  EXPECT_EQ(d[5], -inf);
  EXPECT_TRUE(std::isnan(d[6]));
  EXPECT_FLOAT_EQ(d[8], -30.07f);            // best -20 at frame 0: -30 + 1e-3 * (-70)
  EXPECT_EQ(d[10], -20.0f);
  EXPECT_EQ(d[7], 2.0f);
  EXPECT_EQ(d[9], -7.999f);                  // 9.999 below 2: unchanged
  EXPECT_FLOAT_EQ(d[11], -8.0f + 1e-3f * (-1e30f + 8.0f));
}

TEST(GaussianScorerTopN, DensityFloorMatchesDoubleDefinition) {
  // Features far from every Gaussian on some frames (as digital silence is
  // for a speech model), so that the floor engages; the scorer with
  // density_floor against the definition on double densities.
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  testing::RandomModelSpec s;
  s.num_senones = 120, s.num_codebooks = 6, s.gaussians_per_codebook = 32;
  s.stream_dims = {5, 4};
  const GaussianMixtures gm = testing::random_mixtures(s, rng);
  const int64_t frames = 23;
  std::vector<float> x = testing::random_features(gm, s, frames, rng);
  for (int64_t f = 0; f < frames; f += 3) x[f * gm.feature_dim()] -= 120.0f;
  BackendPtr cpu = make_cpu_backend();
  int64_t raised = 0;
  for (int top_n : {1, 4}) {
    SCOPED_TRACE("top " + std::to_string(top_n));
    ScorerOptions opts;
    opts.top_n = top_n;
    opts.block_frames = 8;
    opts.density_floor = 9.83f;
    GaussianScorer scorer(gm, *cpu, opts);
    std::vector<float> got(static_cast<size_t>(frames) * gm.num_senones);
    scorer.score(x.data(), frames, got.data());
    // The floored densities' gaps are a thousandth of the exact ones, so a
    // tie within 1e-3 there (1 nat before the floor) is skipped.
    const ScorerCheck c = check_scorer_top_n(gm, x, frames, top_n, got, 1e-3, 9.83);
    std::printf("[ floor ] top %d vs double: max |error| %.2e nats (%lld compared, %lld skipped)\n",
                top_n, c.max_error, static_cast<long long>(c.compared),
                static_cast<long long>(c.skipped));
    EXPECT_GT(c.compared, c.skipped * 2);
    EXPECT_LE(c.max_error, 1e-3);
    // Against the exact densities: the floor only raises densities and
    // keeps their order, so scores do not fall, except where two Gaussians
    // of a codebook were within float rounding of a tie once floored (the
    // gaps shrink a thousandfold) and top-N took the other one, with its
    // own weight: a few of the thousands of scores, never most.
    ScorerOptions exact = opts;
    exact.density_floor = 0.0f;
    GaussianScorer plain(gm, *cpu, exact);
    std::vector<float> unfloored(got.size());
    plain.score(x.data(), frames, unfloored.data());
    size_t dropped = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i] > unfloored[i] + 1.0f) ++raised;
      if (double(unfloored[i]) - got[i] > 1e-3) ++dropped;
    }
    EXPECT_LE(dropped, got.size() / 100);
  }
  // The far frames are far enough that the floor engages, with top 1 or 4.
  EXPECT_GT(raised, 0);
  ScorerOptions bad;
  for (float f : {-1.0f, std::numeric_limits<float>::infinity(), NAN}) {
    bad.density_floor = f;
    EXPECT_THROW(GaussianScorer(gm, *cpu, bad), std::invalid_argument) << f;
  }
}

TEST(GaussianScorerTopN, AllGaussiansEqualsFullMixtures) {
  // top_n >= density selects every Gaussian: the full mixture, summed in
  // another order and form, so equal to float rounding.
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  testing::RandomModelSpec s;
  s.num_senones = 30, s.num_codebooks = 3, s.gaussians_per_codebook = 16;
  s.zero_weight_fraction = 0.2;
  const GaussianMixtures gm = testing::random_mixtures(s, rng);
  const std::vector<float> x = testing::random_features(gm, s, 45, rng);
  BackendPtr cpu = make_cpu_backend();
  ScorerOptions full_opts, top_opts;
  top_opts.top_n = 16;
  GaussianScorer full(gm, *cpu, full_opts), top(gm, *cpu, top_opts);
  std::vector<float> a(45 * 30), b(45 * 30);
  full.score(x.data(), 45, a.data());
  top.score(x.data(), 45, b.data());
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, double(std::fabs(a[i] - b[i])) / (1.0 + std::fabs(a[i])));
  EXPECT_LT(worst, 1e-6);
}

TEST(GaussianScorerTopN, RejectsBadTopN) {
  std::mt19937 rng(1);
  testing::RandomModelSpec s;
  s.num_senones = 4, s.num_codebooks = 4, s.gaussians_per_codebook = 2;
  const GaussianMixtures gm = testing::random_mixtures(s, rng);
  BackendPtr cpu = make_cpu_backend();
  for (int bad : {-1, Backend::kMaxTopN + 1}) {
    ScorerOptions o;
    o.top_n = bad;
    try {
      GaussianScorer scorer(gm, *cpu, o);
      ADD_FAILURE() << "top_n " << bad << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("top_n"), std::string::npos) << e.what();
    }
  }
}

TEST(GaussianScorerTopN, EnUsModelOnRealSpeech) {
  // The installed en-us PTM model (42 codebooks of 128 Gaussians, 5126
  // senones) on goforward.raw through the model's own front end, top 4 as
  // pocketsphinx decodes with.
  const std::string model = testing::model_dir() + "/en-us/en-us";
  const std::string raw = testing::audio_dir() + "/goforward.raw";
  if (!std::ifstream(model + "/mdef") || !std::ifstream(raw))
    GTEST_SKIP() << "needs " << model << " and " << raw;
  const AcousticModel am = AcousticModel::load(model);
  std::ifstream in(raw, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<float> samples(bytes.size() / 2);
  for (size_t i = 0; i < samples.size(); ++i) {
    int16_t v;
    std::memcpy(&v, bytes.data() + 2 * i, 2);
    samples[i] = v;
  }
  BackendPtr cpu = make_cpu_backend();
  const FeatureMatrix fm = compute_features(am.feature_options(), *cpu, samples.data(),
                                            static_cast<int64_t>(samples.size()));
  const int64_t frames = std::min<int64_t>(fm.rows, 120);
  const std::vector<float> x(fm.data.begin(), fm.data.begin() + frames * fm.dim);
  ScorerOptions opts;
  opts.top_n = 4;
  GaussianScorer scorer(am.mixtures(), *cpu, opts);
  std::vector<float> got(static_cast<size_t>(frames) * scorer.num_senones());
  scorer.score(x.data(), frames, got.data());
  const ScorerCheck c = check_scorer_top_n(am.mixtures(), x, frames, 4, got, 1e-3);
  std::printf("[ top-n ] en-us, %lld frames vs double: max |error| %.2e nats (%lld compared, "
              "%lld skipped)\n",
              static_cast<long long>(frames), c.max_error, static_cast<long long>(c.compared),
              static_cast<long long>(c.skipped));
  EXPECT_GT(c.compared, c.skipped * 10);
  EXPECT_LE(c.max_error, 1e-3);

  // And what the selection costs in likelihood against the full mixtures
  // (never more: it drops terms of a sum of positive terms, up to float
  // rounding).
  GaussianScorer exact(am.mixtures(), *cpu);
  std::vector<float> full(got.size());
  exact.score(x.data(), frames, full.data());
  double mean = 0.0, worst = 0.0, above = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    mean += full[i] - got[i];
    worst = std::max(worst, double(full[i] - got[i]));
    above = std::max(above, double(got[i] - full[i]));
  }
  mean /= static_cast<double>(got.size());
  std::printf("[ top-n ] en-us top 4 below full mixtures: mean %.3f, max %.3f nats\n", mean, worst);
  EXPECT_LE(above, 1e-3);
  EXPECT_GT(worst, 0.0);
}

}  // namespace
}  // namespace gpuspeech
