// The second decision pass (common/dtw/path_rescoring.h): the power mean of
// the local distances along a DTW path, and the re-ranking of the best
// words by it. The sequences are one value per frame, so every local
// distance is |x - y| and the expected numbers can be worked out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/dtw/dtw.h"
#include "common/dtw/path_rescoring.h"

namespace gpuspeech {
namespace {

DtwOptions symmetric() {
  DtwOptions o;
  o.pattern = StepPattern::kSymmetric;
  return o;
}

FeatureMatrix matrix(const std::vector<float>& v) {
  FeatureMatrix m;
  m.rows = static_cast<int64_t>(v.size());
  m.dim = 1;
  m.data = v;
  return m;
}

DtwTemplate tmpl(const std::string& label, const std::vector<float>& v) {
  DtwTemplate t;
  t.label = label;
  t.path = label + ".wav";
  t.features = matrix(v);
  return t;
}

TEST(PathRescoring, PowerOneIsTheMeanLocalDistanceAlongThePath) {
  const std::vector<float> x = {0, 1, 2, 3, 2, 1, 0, 0}, y = {0, 2, 3, 3, 1, 0};
  const DtwOptions o = symmetric();
  std::vector<std::pair<int64_t, int64_t>> path;
  dtw_distance(x.data(), 8, y.data(), 6, 1, o, &path);
  ASSERT_FALSE(path.empty());
  double sum = 0.0, cubes = 0.0;
  for (const auto& [i, j] : path) {
    const double d = std::fabs(x[static_cast<size_t>(i)] - y[static_cast<size_t>(j)]);
    sum += d;
    cubes += d * d * d;
  }
  const double n = static_cast<double>(path.size());
  EXPECT_NEAR(path_power_mean(x.data(), 8, y.data(), 6, 1, o, 1.0f), sum / n, 1e-6);
  EXPECT_NEAR(path_power_mean(x.data(), 8, y.data(), 6, 1, o, 3.0f), std::cbrt(cubes / n), 1e-5);
  // A power mean never falls as the power grows.
  EXPECT_GE(path_power_mean(x.data(), 8, y.data(), 6, 1, o, 3.0f),
            path_power_mean(x.data(), 8, y.data(), 6, 1, o, 1.0f));
  EXPECT_EQ(path_power_mean(x.data(), 8, x.data(), 8, 1, o, 3.0f), 0.0f);
  EXPECT_THROW(path_power_mean(x.data(), 8, y.data(), 6, 1, o, 0.5f), std::invalid_argument);
}

TEST(PathRescoring, UnreachableTemplateHasNoPowerMean) {
  DtwOptions o;  // Itakura: a template more than twice as long cannot be reached
  const std::vector<float> x(4, 0.0f), y(20, 0.0f);
  EXPECT_TRUE(std::isinf(path_power_mean(x.data(), 4, y.data(), 20, 1, o, 3.0f)));
}

// "near" matches the test exactly except for two frames far off, "even"
// is a little off everywhere: "near" has the smaller DTW distance, "even"
// the smaller cubic mean along its path.
struct Case {
  std::vector<FeatureMatrix> warped = {matrix(std::vector<float>(20, 0.0f))};
  std::vector<DtwTemplate> templates;
  std::vector<std::string> labels = {"near", "even"};
  std::vector<std::vector<float>> per_warp;
  Case() {
    std::vector<float> spike(20, 0.0f);
    spike[9] = spike[10] = 3.0f;
    templates = {tmpl("near", spike), tmpl("even", std::vector<float>(20, 0.3f))};
    const DtwOptions o = symmetric();
    std::vector<float> d;
    for (const DtwTemplate& t : templates)
      d.push_back(dtw_distance(warped[0].data.data(), 20, t.features.data.data(), 20, 1, o));
    per_warp = {d};
  }
};

TEST(PathRescoring, RescoringOffIsTheFirstPass) {
  Case c;
  DtwDecisionOptions dec;
  dec.rescore_words = 0;
  const MatchDecision a = decide_rescored(c.warped, c.per_warp, c.templates, c.labels, symmetric(), dec, 0.0f);
  const MatchDecision b = decide_match(c.per_warp[0], c.labels, 0.0f, dec.k_nearest);
  EXPECT_EQ(a.label, "near");
  EXPECT_EQ(a.label, b.label);
  EXPECT_EQ(a.distance, b.distance);
  EXPECT_EQ(a.runner_up, b.runner_up);
}

TEST(PathRescoring, ABadlyMatchedPartOutweighsASmallEvenOffset) {
  Case c;
  ASSERT_LT(c.per_warp[0][0], c.per_warp[0][1]);  // the first pass prefers "near"
  DtwDecisionOptions dec;  // the defaults: 3 words, power 3, weight 0.5
  const MatchDecision m = decide_rescored(c.warped, c.per_warp, c.templates, c.labels, symmetric(), dec, 0.0f);
  EXPECT_EQ(m.label, "even");
  EXPECT_EQ(m.template_index, 1);
  EXPECT_EQ(m.runner_up, "near");
  // The distances stay the first pass's, so a threshold keeps its meaning.
  EXPECT_EQ(m.distance, c.per_warp[0][1]);
  EXPECT_EQ(m.runner_up_distance, c.per_warp[0][0]);
  EXPECT_FALSE(m.rejected);
  EXPECT_TRUE(decide_rescored(c.warped, c.per_warp, c.templates, c.labels, symmetric(), dec,
                              c.per_warp[0][1] * 0.5f).rejected);
  // With no weight the order is the first pass's.
  dec.rescore_weight = 0.0f;
  EXPECT_EQ(decide_rescored(c.warped, c.per_warp, c.templates, c.labels, symmetric(), dec, 0.0f).label, "near");
}

TEST(PathRescoring, ScoresEachTemplateAtItsBestWarp) {
  Case c;
  // A second test warp at which "even" matches exactly: its score is its
  // distance there (0), not at the first warp.
  c.warped.push_back(matrix(std::vector<float>(20, 0.3f)));
  c.per_warp.push_back({1e3f, 0.0f});
  DtwDecisionOptions dec;
  const MatchDecision m = decide_rescored(c.warped, c.per_warp, c.templates, c.labels, symmetric(), dec, 0.0f);
  EXPECT_EQ(m.label, "even");
  EXPECT_EQ(m.distance, 0.0f);
}

TEST(PathRescoring, RejectsMismatchedInputs) {
  Case c;
  DtwDecisionOptions dec;
  std::vector<std::string> one_label = {"near"};
  EXPECT_THROW(decide_rescored(c.warped, c.per_warp, c.templates, one_label, symmetric(), dec, 0.0f),
               std::invalid_argument);
  std::vector<std::vector<float>> two_lists = {c.per_warp[0], c.per_warp[0]};
  EXPECT_THROW(decide_rescored(c.warped, two_lists, c.templates, c.labels, symmetric(), dec, 0.0f),
               std::invalid_argument);
  dec.rescore_power = 0.5f;
  EXPECT_THROW(decide_rescored(c.warped, c.per_warp, c.templates, c.labels, symmetric(), dec, 0.0f),
               std::invalid_argument);
}

}  // namespace
}  // namespace gpuspeech
