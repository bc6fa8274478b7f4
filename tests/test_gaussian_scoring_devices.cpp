// Acoustic scoring on every usable device backend (opencl, cuda) against
// the CPU reference, on fresh random inputs: the senone_scores operation
// alone (random CSR mixtures with -inf weights, empty rows, offsets), then
// the whole GaussianScorer (GEMMs + senone_scores) on random models of
// several layouts, through all three entry points, and against the double
// reference too.
//
// A backend with no usable device is skipped, unless GPUSPEECH_REQUIRE_BACKENDS
// names it (tests/test_backends.h).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/backends/backend_compare.h"
#include "common/backends/backend_registry.h"
#include "common/scoring/gaussian_scoring.h"
#include "tests/gaussian_reference.h"
#include "tests/test_backends.h"

namespace gpuspeech {
namespace {

// senone_scores alone: the same entries in the same order on both sides,
// so only exp/log rounding differs (a few ulp of each term): 2e-6 relative
// on scores of -20 to -750.
const Tolerance kSenoneTol = Tolerance::relative(2e-6);
// The whole scorer: the GEMMs sum in different orders (cuBLAS, OpenCL tiles,
// the CPU's eight partial sums), which moves a density by ~1e-5 of the
// terms summed; 1e-4 absolute plus 1e-6 relative is ten times what was
// measured (printed per case).
const Tolerance kScorerTol{1e-6, 1e-4, 0.0};
// Both against the double reference: see test_gaussian_scoring.cpp.
constexpr double kReferenceTol = 1e-3;

class ScoringVsCpu : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const testing::BackendForTest b = testing::backend_for_test(GetParam());
    if (!b.backend) {
      if (b.required) FAIL() << b.problem;
      GTEST_SKIP() << b.problem;
    }
    device_ = b.backend;
    cpu_ = make_cpu_backend();
    cmp_.reset(new BackendComparison(*device_, *cpu_));
  }

  Backend* device_ = nullptr;
  BackendPtr cpu_;
  std::unique_ptr<BackendComparison> cmp_;
};

#define EXPECT_AGREES(comparison)                                         \
  do {                                                                    \
    const Comparison c_ = (comparison);                                   \
    EXPECT_TRUE(c_.ok()) << c_.report();                                  \
    std::printf("[ scoring ] %s: max |diff| %.2e, max rel %.2e\n", c_.what.c_str(), \
                c_.max_abs, c_.max_rel);                                  \
  } while (0)

TEST_P(ScoringVsCpu, SenoneScoresOperation) {
  BackendComparison& cmp = *cmp_;
  // frames, Gaussians, senones, streams, longest row, out_offset
  EXPECT_AGREES(cmp.senone_scores(1, 7, 5, 1, 3, 0, kSenoneTol));
  EXPECT_AGREES(cmp.senone_scores(37, 300, 101, 3, 40, 13, kSenoneTol));
  EXPECT_AGREES(cmp.senone_scores(129, 1000, 257, 1, 130, 0, kSenoneTol));
  EXPECT_AGREES(cmp.senone_scores(5, 64, 33, 4, 300, 7, kSenoneTol));  // rows longer than G
}

TEST_P(ScoringVsCpu, SenoneScoresRejectsMisuse) {
  Backend& dev = *device_;
  BufferPtr d = dev.alloc(6), o = dev.alloc(3), g = dev.alloc(3), w = dev.alloc(3);
  BufferPtr out = dev.alloc(4), small = dev.alloc(3);
  BufferPtr foreign = cpu_->alloc(6);
  EXPECT_THROW(dev.senone_scores(*foreign, 3, 2, *o, *g, *w, 2, 1, *out), BackendError);
  EXPECT_THROW(dev.senone_scores(*d, 3, 2, *o, *g, *w, 2, 1, *small), BackendError);
  EXPECT_THROW(dev.senone_scores(*d, 3, 2, *o, *g, *w, 2, 1, *out, 1), BackendError);
  EXPECT_THROW(dev.senone_scores(*d, 4, 2, *o, *g, *w, 2, 1, *out), BackendError);  // densities
  EXPECT_THROW(dev.senone_scores(*d, 3, 2, *o, *g, *w, 3, 1, *out), BackendError);  // offsets
  EXPECT_THROW(dev.senone_scores(*d, 3, 2, *o, *g, *w, 2, 0, *out), BackendError);  // streams
  EXPECT_THROW(dev.senone_scores(*d, 0, 2, *o, *g, *w, 2, 1, *out), BackendError);  // no Gaussians
}

TEST_P(ScoringVsCpu, CorruptCsrStaysInBounds) {
  // Out-of-range indices are the caller's bug, but must not make the device
  // read outside its buffers (the kernels clamp): the call completes, and a
  // correct call afterwards still gives the CPU's numbers.
  Backend& dev = *device_;
  const std::vector<float> dens = {-1.f, -2.f, -3.f, -4.f};  // 2 Gaussians x 2 frames
  const std::vector<float> bad_offsets = {0.f, 1e7f, -5.f};
  const std::vector<float> bad_gauss = {1e9f, -3.f, NAN};
  const std::vector<float> logw = {0.f, 0.f, 0.f};
  BufferPtr d = dev.alloc(4), o = dev.alloc(3), g = dev.alloc(3), w = dev.alloc(3),
            out = dev.alloc(4);
  dev.upload(*d, dens.data(), 4);
  dev.upload(*o, bad_offsets.data(), 3);
  dev.upload(*g, bad_gauss.data(), 3);
  dev.upload(*w, logw.data(), 3);
  dev.senone_scores(*d, 2, 2, *o, *g, *w, 2, 1, *out);
  dev.synchronize();
  EXPECT_AGREES(cmp_->senone_scores(9, 20, 11, 2, 6, 0, kSenoneTol));
}

TEST_P(ScoringVsCpu, NonFiniteTermsMatchCpu) {
  // -inf terms add nothing, an all -inf row gives -inf, NaN anywhere in a
  // row gives NaN (even next to -inf terms only): the same on every backend.
  const float inf = INFINITY, nan = NAN;
  // 4 Gaussians x 3 frames.
  const std::vector<float> dens = {-5.f, nan,  -inf,   // g0
                                   -inf, -7.f, -inf,   // g1
                                   -3.f, -inf, -inf,   // g2
                                   -9.f, -1.f, nan};   // g3
  // 4 senones x 1 stream: {g0, g1}, {g1, g2, g3}, {g1}, {g3, g0}.
  const std::vector<float> offsets = {0, 2, 5, 6, 8};
  const std::vector<float> gauss = {0, 1, 1, 2, 3, 1, 3, 0};
  const std::vector<float> logw = {-1.f, -2.f, -inf, -0.5f, -0.5f, 0.f, -1.f, -1.f};
  const Comparison c = cmp_->run("senone_scores with NaN and -inf terms",
                                 Tolerance::relative(2e-6), [&](Backend& b) {
    BufferPtr d = b.alloc(dens.size()), o = b.alloc(offsets.size()), g = b.alloc(gauss.size()),
              w = b.alloc(logw.size()), out = b.alloc(3 * 4);
    b.upload(*d, dens.data(), dens.size());
    b.upload(*o, offsets.data(), offsets.size());
    b.upload(*g, gauss.data(), gauss.size());
    b.upload(*w, logw.data(), logw.size());
    b.senone_scores(*d, 4, 3, *o, *g, *w, 4, 1, *out);
    std::vector<float> r(12);
    b.download(*out, r.data(), r.size());
    return r;
  });
  EXPECT_AGREES(c);
}

TEST_P(ScoringVsCpu, FloorDensitiesIsExact) {
  // Random densities over a wide range (so that many fall below the floor),
  // with -inf and NaN sprinkled in and whole frames of -inf; the floor is a
  // maximum and three rounded operations, so the bits must be the CPU's.
  struct Case {
    int64_t frames;
    int rows, streams;
    float floor;
  };
  const Case cases[] = {{1, 1, 1, 9.83f},   {37, 300, 2, 9.83f}, {256, 4096, 1, 9.83f},
                        {33, 17, 3, 0.5f},  {500, 64, 4, 40.0f}, {31, 1000, 1, 1e-3f}};
  for (const Case& k : cases) {
    const size_t n = static_cast<size_t>(k.frames) * k.rows * k.streams;
    std::vector<float> d = cmp_->uniform(n, -200.0f, 5.0f);
    std::mt19937& rng = cmp_->rng();
    std::uniform_int_distribution<size_t> pick(0, n - 1);
    for (size_t i = 0; i < n / 50 + 1; ++i) d[pick(rng)] = -INFINITY;
    for (size_t i = 0; i < n / 200 + 1; ++i) d[pick(rng)] = NAN;
    if (k.frames > 1)  // a frame of stream 0 where every density is -inf
      for (int r = 0; r < k.rows; ++r) d[static_cast<size_t>(r) * k.frames + 1] = -INFINITY;
    const std::string what = "floor_densities " + std::to_string(k.frames) + " frames x " +
                             std::to_string(k.rows) + " rows x " + std::to_string(k.streams) +
                             " streams, floor " + std::to_string(k.floor);
    EXPECT_AGREES(cmp_->run(what, Tolerance::absolute(0.0), [&](Backend& b) {
      BufferPtr buf = b.alloc(n);
      b.upload(*buf, d.data(), n);
      b.floor_densities(*buf, k.frames, k.rows, k.streams, k.floor);
      std::vector<float> r(n);
      b.download(*buf, r.data(), n);
      return r;
    }));
  }
}

TEST_P(ScoringVsCpu, FloorDensitiesRejectsMisuse) {
  Backend& dev = *device_;
  BufferPtr d = dev.alloc(12);
  BufferPtr foreign = cpu_->alloc(12);
  EXPECT_THROW(dev.floor_densities(*foreign, 2, 3, 2, 1.0f), BackendError);
  EXPECT_THROW(dev.floor_densities(*d, 3, 3, 2, 1.0f), BackendError);  // 18 floats
  EXPECT_THROW(dev.floor_densities(*d, 2, 0, 2, 1.0f), BackendError);
  EXPECT_THROW(dev.floor_densities(*d, 2, 3, 0, 1.0f), BackendError);
  EXPECT_THROW(dev.floor_densities(*d, -1, 3, 2, 1.0f), BackendError);
  EXPECT_THROW(dev.floor_densities(*d, 2, 3, 2, 0.0f), BackendError);
  EXPECT_THROW(dev.floor_densities(*d, 2, 3, 2, NAN), BackendError);
  EXPECT_THROW(dev.floor_densities(*d, 2, 3, 2, INFINITY), BackendError);
  dev.floor_densities(*d, 0, 3, 2, 1.0f);  // nothing to do
}

struct Layout {
  const char* name;
  testing::RandomModelSpec spec;
  int64_t frames;
};

std::vector<Layout> layouts() {
  std::vector<Layout> v;
  testing::RandomModelSpec s;
  s.num_senones = s.num_codebooks = 100;
  s.gaussians_per_codebook = 8;
  s.stream_dims = {39};
  v.push_back({"continuous", s, 130});
  s = testing::RandomModelSpec();
  s.num_senones = 200;
  s.num_codebooks = 1;
  s.gaussians_per_codebook = 256;
  s.stream_dims = {13, 13, 13};
  v.push_back({"semi-continuous", s, 41});
  s = testing::RandomModelSpec();
  s.num_senones = 300;
  s.num_codebooks = 9;
  s.gaussians_per_codebook = 64;
  s.stream_dims = {13, 13, 13};
  s.interleave_components = true;
  s.zero_weight_fraction = 0.3;
  v.push_back({"ptm", s, 77});
  s = testing::RandomModelSpec();
  s.num_senones = s.num_codebooks = 50;
  s.gaussians_per_codebook = 16;
  s.stream_dims = {12, 24, 3, 12};
  s.zero_weight_fraction = 0.8;
  v.push_back({"four streams, sparse weights", s, 19});
  return v;
}

TEST_P(ScoringVsCpu, ScorerMatchesCpuAndReference) {
  Backend& dev = *device_;
  std::mt19937& rng = cmp_->rng();
  for (const Layout& l : layouts()) {
    SCOPED_TRACE(std::string(l.name) + ", seed " + std::to_string(cmp_->seed()));
    const GaussianMixtures gm = testing::random_mixtures(l.spec, rng);
    const std::vector<float> x = testing::random_features(gm, l.spec, l.frames, rng);
    const size_t n = static_cast<size_t>(l.frames) * gm.num_senones;
    // Blocks that do not divide the frame count, on both sides.
    ScorerOptions opts;
    opts.block_frames = 32;

    GaussianScorer on_cpu(gm, *cpu_, opts);
    std::vector<float> want(n);
    on_cpu.score(x.data(), l.frames, want.data());

    GaussianScorer on_dev(gm, dev, opts);
    std::vector<float> host_out(n);
    on_dev.score(x.data(), l.frames, host_out.data());
    Comparison c = compare_values(host_out.data(), want.data(), n, kScorerTol);
    c.what = std::string("GaussianScorer::score, ") + l.name;
    c.test_backend = dev.name();
    c.ref_backend = "cpu";
    c.seed = cmp_->seed();
    EXPECT_AGREES(c);

    // Host features, scores left on the device at an offset.
    const size_t off = 17;
    BufferPtr out = dev.alloc(off + n);
    on_dev.score(x.data(), l.frames, *out, off);
    std::vector<float> dev_out(n);
    dev.download(*out, dev_out.data(), n, off);
    EXPECT_EQ(dev_out, host_out) << "score to a device buffer differs from score to the host";

    // Device features at an offset.
    const size_t feats_off = 3;
    BufferPtr feats = dev.alloc(feats_off + x.size());
    dev.upload(*feats, x.data(), x.size(), feats_off);
    BufferPtr out2 = dev.alloc(n);
    on_dev.score_device(*feats, l.frames, *out2, feats_off, 0);
    std::vector<float> dev_out2(n);
    dev.download(*out2, dev_out2.data(), n);
    EXPECT_EQ(dev_out2, host_out) << "score_device differs from score";

    const std::vector<double> exact = testing::reference_scores(gm, x.data(), l.frames);
    const double err = testing::max_abs_error(host_out, exact);
    std::printf("[ scoring ] %-30s %s vs double: max |error| %.2e nats\n", l.name, dev.name(),
                err);
    EXPECT_LE(err, kReferenceTol);
  }
}

// Gaussian selection (Backend::senone_scores_top_n): the same ranking rule
// on both sides, so the same Gaussians in the same order; only exp/log
// rounding differs. Densities with forced ties, -inf and NaN; zero and tiny
// weights (the log-domain branch).
TEST_P(ScoringVsCpu, SenoneScoresTopNOperation) {
  Backend& dev = *device_;
  std::mt19937& rng = cmp_->rng();
  std::uniform_real_distribution<float> uni(0.f, 1.f);
  struct Case {
    int codebooks, density, streams, senones, top_n;
    int64_t frames;
    size_t out_offset;
  };
  // The CUDA backend ranks shared codebooks once (senones >= 2 codebooks,
  // in chunks of frames that fill 512 Ki floats of scratch: the 126-codebook
  // case at top 16 takes 126 frames a chunk, so 300 frames are three chunks)
  // and otherwise ranks per senone (the 50-codebook case): both are here.
  for (const Case& k : {Case{1, 256, 1, 40, 4, 3, 0}, Case{42, 128, 1, 300, 4, 67, 5},
                        Case{7, 8, 3, 50, 2, 131, 0}, Case{5, 16, 4, 23, 16, 5, 1},
                        Case{3, 64, 1, 17, 1, 70, 0}, Case{126, 128, 1, 1000, 16, 300, 3},
                        Case{50, 8, 1, 60, 4, 40, 0}}) {
    const size_t rows = static_cast<size_t>(k.streams) * k.codebooks * k.density;
    std::vector<float> dens(rows * k.frames);
    for (float& v : dens) {
      v = -150.f + 120.f * uni(rng);
      if (rng() % 3 == 0) v = std::round(v / 8.f) * 8.f;
      if (rng() % 200 == 0) v = -INFINITY;
      if (rng() % 5000 == 0) v = NAN;
    }
    std::vector<float> codebook(static_cast<size_t>(k.senones));
    for (float& c : codebook) c = static_cast<float>(rng() % k.codebooks);
    std::vector<float> weights(static_cast<size_t>(k.senones) * k.streams * k.density);
    for (size_t i = 0; i < weights.size(); ++i) {
      weights[i] = rng() % 4 == 0 ? 0.0f : uni(rng) / k.density;
      if ((i / k.density) % 7 == 3) weights[i] *= 1e-25f;
    }
    const size_t n = static_cast<size_t>(k.frames) * k.senones;
    std::vector<float> got(n), want(n);
    for (Backend* b : {&dev, cpu_.get()}) {
      BufferPtr d = b->alloc(dens.size()), c = b->alloc(codebook.size()),
                w = b->alloc(weights.size()), out = b->alloc(k.out_offset + n);
      b->upload(*d, dens.data(), dens.size());
      b->upload(*c, codebook.data(), codebook.size());
      b->upload(*w, weights.data(), weights.size());
      b->senone_scores_top_n(*d, k.codebooks, k.density, k.frames, k.top_n, *c, *w, k.senones,
                             k.streams, *out, k.out_offset);
      b->download(*out, (b == &dev ? got : want).data(), n, k.out_offset);
    }
    Comparison c = compare_values(got.data(), want.data(), n, kSenoneTol);
    c.what = "senone_scores_top_n, " + std::to_string(k.codebooks) + " codebooks of " +
             std::to_string(k.density) + ", top " + std::to_string(k.top_n);
    c.test_backend = dev.name();
    c.ref_backend = "cpu";
    c.seed = cmp_->seed();
    EXPECT_AGREES(c);
  }
  BufferPtr d = dev.alloc(8), cb = dev.alloc(2), w = dev.alloc(8), out = dev.alloc(4);
  EXPECT_THROW(dev.senone_scores_top_n(*d, 2, 2, 2, 0, *cb, *w, 2, 1, *out), BackendError);
  EXPECT_THROW(dev.senone_scores_top_n(*d, 2, 2, 2, Backend::kMaxTopN + 1, *cb, *w, 2, 1, *out),
               BackendError);
  EXPECT_THROW(dev.senone_scores_top_n(*d, 2, 2, 3, 1, *cb, *w, 2, 1, *out), BackendError);
  EXPECT_THROW(dev.senone_scores_top_n(*d, 2, 2, 2, 1, *cb, *w, 2, 1, *out, 1), BackendError);
}

// The device backends' two paths of Gaussian selection (ranked lists per
// codebook, and a ranking per senone, GPUSPEECH_CUDA_TOPN_RANKED=0 /
// GPUSPEECH_OPENCL_TOPN_RANKED=0) compute each value by the same
// operations, so they agree to the bit: 126 codebooks of 128 (en-us's
// three streams of 42, as one), ~40 senones a codebook, several chunks,
// NaN and -inf.
// `make` opens the backend twice: as it is, and with `path_env` set to 0,
// which selects the per-senone kernel when the backend is made.
void expect_ranked_lists_equal_per_senone_ranking(const std::function<BackendPtr()>& make,
                                                  const char* path_env, int64_t frames) {
  BackendPtr ranked_backend = make();
  setenv(path_env, "0", 1);
  BackendPtr per_senone_backend = make();
  unsetenv(path_env);
  Backend& ranked = *ranked_backend;
  Backend& per_senone = *per_senone_backend;
  std::mt19937 rng(20261127);
  std::uniform_real_distribution<float> uni(0.f, 1.f);
  const int codebooks = 126, density = 128, senones = 5000;
  std::vector<float> dens(static_cast<size_t>(codebooks) * density * frames);
  for (float& v : dens) {
    v = -150.f + 120.f * uni(rng);
    if (rng() % 3 == 0) v = std::round(v / 8.f) * 8.f;
    if (rng() % 200 == 0) v = -INFINITY;
    if (rng() % 100000 == 0) v = NAN;
  }
  std::vector<float> codebook(senones), weights(static_cast<size_t>(senones) * density);
  for (float& c : codebook) c = static_cast<float>(rng() % codebooks);
  for (size_t i = 0; i < weights.size(); ++i) {
    weights[i] = rng() % 4 == 0 ? 0.0f : uni(rng) / density;
    if ((i / density) % 7 == 3) weights[i] *= 1e-25f;
  }
  for (int top_n : {4, 16}) {
    std::vector<float> got[2];
    int which = 0;
    for (Backend* b : {&ranked, &per_senone}) {
      BufferPtr d = b->alloc(dens.size()), c = b->alloc(codebook.size()),
                w = b->alloc(weights.size()), out = b->alloc(static_cast<size_t>(frames) * senones);
      b->upload(*d, dens.data(), dens.size());
      b->upload(*c, codebook.data(), codebook.size());
      b->upload(*w, weights.data(), weights.size());
      b->senone_scores_top_n(*d, codebooks, density, frames, top_n, *c, *w, senones, 1, *out);
      got[which].resize(static_cast<size_t>(frames) * senones);
      b->download(*out, got[which].data(), got[which].size());
      ++which;
    }
    size_t differ = 0, nans = 0;
    for (size_t i = 0; i < got[0].size(); ++i) {
      if (std::isnan(got[0][i])) ++nans;
      if (std::memcmp(&got[0][i], &got[1][i], sizeof(float)) != 0) ++differ;
    }
    EXPECT_EQ(differ, 0u) << ranked.name() << ", top " << top_n;
    EXPECT_GT(nans, 0u) << "the case should hold a NaN codebook";
  }
}

#ifdef GPUSPEECH_HAVE_CUDA
TEST(TopNPaths, CudaRankedListsEqualPerSenoneRanking) {
  if (cuda_device_count() == 0) {
    if (testing::backend_for_test("cuda").required) FAIL() << "cuda required, no device";
    GTEST_SKIP() << "no CUDA device";
  }
  expect_ranked_lists_equal_per_senone_ranking([] { return make_cuda_backend(0); },
                                               "GPUSPEECH_CUDA_TOPN_RANKED", 700);
}
#endif

#ifdef GPUSPEECH_HAVE_OPENCL
TEST(TopNPaths, OpenclRankedListsEqualPerSenoneRanking) {
  const testing::BackendForTest b = testing::backend_for_test("opencl");
  if (!b.backend) {
    if (b.required) FAIL() << b.problem;
    GTEST_SKIP() << b.problem;
  }
  expect_ranked_lists_equal_per_senone_ranking([] { return make_opencl_backend(0); },
                                               "GPUSPEECH_OPENCL_TOPN_RANKED", 200);
}
#endif

// The whole scorer with top_n 4: the GEMMs' summation orders move
// densities by ~1e-5, which can swap two Gaussians of nearly equal density
// at the selection's boundary (a different, equally valid pick with other
// weights). Such elements are counted, not compared, and must be rare.
TEST_P(ScoringVsCpu, ScorerTopNMatchesCpu) {
  Backend& dev = *device_;
  std::mt19937& rng = cmp_->rng();
  for (const Layout& l : layouts()) {
    SCOPED_TRACE(std::string(l.name) + ", seed " + std::to_string(cmp_->seed()));
    const GaussianMixtures gm = testing::random_mixtures(l.spec, rng);
    const std::vector<float> x = testing::random_features(gm, l.spec, l.frames, rng);
    const size_t n = static_cast<size_t>(l.frames) * gm.num_senones;
    ScorerOptions opts;
    opts.block_frames = 32;
    opts.top_n = 4;
    GaussianScorer on_cpu(gm, *cpu_, opts), on_dev(gm, dev, opts);
    std::vector<float> want(n), got(n);
    on_cpu.score(x.data(), l.frames, want.data());
    on_dev.score(x.data(), l.frames, got.data());
    size_t off = 0;
    for (size_t i = 0; i < n; ++i)
      if (got[i] != want[i] && !(std::fabs(got[i] - want[i]) <= 1e-4 + 1e-6 * std::fabs(want[i])))
        ++off;
    std::printf("[ scoring ] top 4, %-30s %s vs cpu: %zu of %zu outside 1e-4 (boundary swaps)\n",
                l.name, dev.name(), off, n);
    EXPECT_LE(off * 1000, n) << off << " of " << n << " differ";
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, ScoringVsCpu, ::testing::Values("opencl", "cuda"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST(ScoringCompare, CpuAgainstItselfIsExact) {
  // The comparison machinery sees a difference only where there is one.
  BackendPtr a = make_cpu_backend(), b = make_cpu_backend();
  BackendComparison cmp(*a, *b);
  const Comparison c = cmp.senone_scores(17, 50, 23, 2, 20, 3, Tolerance::absolute(0.0));
  EXPECT_TRUE(c.ok()) << c.report();
}

}  // namespace
}  // namespace gpuspeech
