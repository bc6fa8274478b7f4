// Every usable DTW engine (dtw_engine.h) against the host reference
// dtw_distance() on random sequences: one utterance against a set of
// templates of assorted lengths in one call, for each step pattern, band,
// distance and normalisation. Distances agree within 1e-4 relative and the
// unreachable templates (+inf) are the same. Engines without a device skip
// unless named in GPUSPEECH_REQUIRE_BACKENDS (tests/test_backends.h).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "common/backends/backend.h"
#include "common/dtw/dtw.h"
#include "common/dtw/dtw_engine.h"
#include "tests/test_backends.h"

namespace gpuspeech {
namespace {

FeatureMatrix random_matrix(std::mt19937& gen, int64_t rows, int dim) {
  std::normal_distribution<float> nd(0.0f, 3.0f);
  FeatureMatrix m;
  m.rows = rows;
  m.dim = dim;
  m.data.resize(static_cast<size_t>(rows * dim));
  for (float& v : m.data) v = nd(gen);
  return m;
}

std::vector<DtwOptions> option_sets() {
  std::vector<DtwOptions> out;
  for (StepPattern p : {StepPattern::kItakura, StepPattern::kSymmetric})
    for (int band : {-1, 6})
      for (LocalDistance d : {LocalDistance::kEuclidean, LocalDistance::kCepstral})
        for (bool norm : {true, false}) {
          DtwOptions o;
          o.pattern = p;
          o.band = band;
          o.distance = d;
          o.normalize = norm;
          out.push_back(o);
        }
  return out;
}

std::unique_ptr<DtwEngine> open_or_skip(const std::string& name, const DtwOptions& o) {
  try {
    return make_dtw_engine(name, o);
  } catch (const BackendError& e) {
    if (testing::is_required_backend(name))
      ADD_FAILURE() << "required engine " << name << " failed: " << e.what();
    return nullptr;
  }
}

class DtwEngines : public ::testing::TestWithParam<std::string> {};

TEST_P(DtwEngines, MatchTheHostReference) {
  const std::string name = GetParam();
  std::mt19937 gen(5);
  std::uniform_int_distribution<int> len(1, 140);
  const int dim = 13;
  PackedTemplates templates;
  std::vector<FeatureMatrix> kept;
  for (int t = 0; t < 61; ++t) {
    kept.push_back(random_matrix(gen, t < 3 ? t + 1 : len(gen), dim));
    templates.add(kept.back());
  }
  int compared = 0, unreachable = 0;
  for (const DtwOptions& o : option_sets()) {
    std::unique_ptr<DtwEngine> engine = open_or_skip(name, o);
    if (!engine) GTEST_SKIP() << name << ": no usable device";
    engine->set_templates(templates);
    for (int64_t frames : {1, 7, 60, 133}) {
      const FeatureMatrix utt = random_matrix(gen, frames, dim);
      const std::vector<float> got = engine->match(utt.data.data(), utt.rows);
      ASSERT_EQ(got.size(), kept.size());
      for (size_t t = 0; t < kept.size(); ++t) {
        const float want = dtw_distance(utt.data.data(), utt.rows, kept[t].data.data(),
                                        kept[t].rows, dim, o);
        SCOPED_TRACE(o.fingerprint() + " n=" + std::to_string(frames) + " template " +
                     std::to_string(t) + " m=" + std::to_string(kept[t].rows));
        if (std::isinf(want)) {
          EXPECT_TRUE(std::isinf(got[t])) << "got " << got[t];
          ++unreachable;
        } else {
          EXPECT_NEAR(got[t], want, 1e-4 * std::fabs(want)) << engine->device_name();
          ++compared;
        }
      }
    }
  }
  EXPECT_GT(compared, 1000);
  EXPECT_GT(unreachable, 100);
}

TEST_P(DtwEngines, RejectsAnEmptySetAndMatchBeforeTemplates) {
  std::unique_ptr<DtwEngine> engine = open_or_skip(GetParam(), DtwOptions());
  if (!engine) GTEST_SKIP() << GetParam() << ": no usable device";
  float x[4] = {};
  EXPECT_THROW(engine->match(x, 1), std::logic_error);
  EXPECT_THROW(engine->set_templates(PackedTemplates()), std::invalid_argument);
}

TEST_P(DtwEngines, RefusesTemplatesLongerThanItHolds) {
  std::unique_ptr<DtwEngine> engine = open_or_skip(GetParam(), DtwOptions());
  if (!engine) GTEST_SKIP() << GetParam() << ": no usable device";
  const int64_t limit = engine->max_template_frames();
  if (limit == 0) GTEST_SKIP() << "no limit on " << GetParam();
  FeatureMatrix m;
  m.rows = limit + 1;
  m.dim = 2;
  m.data.assign(static_cast<size_t>(m.rows * 2), 0.0f);
  PackedTemplates t;
  t.add(m);
  EXPECT_THROW(engine->set_templates(t), BackendError);
}

INSTANTIATE_TEST_SUITE_P(All, DtwEngines, ::testing::Values("cpu", "opencl", "cuda"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
}  // namespace gpuspeech
