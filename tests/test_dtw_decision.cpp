// The decision side of template matching: the k-nearest label score
// (template_matcher.h), the best VTLN warp per template, the warp list
// parser and option checks, features at several test warps
// (dtw_features.h), the rejection threshold the templates give themselves
// (template_calibration.h), template averaging (template_averaging.h), and
// WordRecognizer (word_recognizer.h) giving
// the same decision on every usable engine.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/backends/backend_registry.h"
#include "common/dtw/dtw.h"
#include "common/dtw/dtw_engine.h"
#include "common/dtw/template_averaging.h"
#include "common/dtw/template_calibration.h"
#include "common/dtw/template_matcher.h"
#include "common/dtw/word_recognizer.h"
#include "tests/test_backends.h"
#include "tests/wav_test_util.h"

namespace gpuspeech {
namespace {

constexpr float kInf = INFINITY;

TEST(KNearest, MeanOfEachLabelsNearestTemplates) {
  // "a" has the single nearest template, but two of "b"'s are both close.
  const std::vector<std::string> labels = {"a", "b", "a", "b", "c", "a", "b"};
  const std::vector<float> d = {1.0f, 3.0f, 10.0f, 4.0f, 6.0f, 12.0f, 20.0f};
  MatchDecision k1 = decide_match(d, labels, 0.0f, 1);
  EXPECT_EQ(k1.label, "a");
  EXPECT_EQ(k1.distance, 1.0f);
  EXPECT_EQ(k1.runner_up, "b");
  EXPECT_EQ(k1.runner_up_distance, 3.0f);
  MatchDecision k2 = decide_match(d, labels, 0.0f, 2);
  EXPECT_EQ(k2.label, "b");
  EXPECT_FLOAT_EQ(k2.distance, 3.5f);
  EXPECT_EQ(k2.template_index, 1);  // b's nearest template
  EXPECT_EQ(k2.runner_up, "a");
  EXPECT_FLOAT_EQ(k2.runner_up_distance, 5.5f);
  // Never all of a word's templates: with k = 5, "a" and "b" (three each)
  // score their two nearest, "c" (one) its only one.
  MatchDecision k5 = decide_match(d, labels, 0.0f, 5);
  EXPECT_EQ(k5.label, "b");
  EXPECT_FLOAT_EQ(k5.distance, 3.5f);
  EXPECT_FLOAT_EQ(k5.runner_up_distance, 5.5f);
  // A word with two templates scores its nearest one whatever k.
  MatchDecision two = decide_match({1.0f, 3.0f, 2.0f, 2.5f}, {"a", "b", "a", "b"}, 0.0f, 2);
  EXPECT_EQ(two.label, "a");
  EXPECT_FLOAT_EQ(two.distance, 1.0f);
  EXPECT_FLOAT_EQ(two.runner_up_distance, 2.5f);
  // Unreachable templates do not count; a label with none cannot win.
  MatchDecision k2inf = decide_match({kInf, 3.0f, 2.0f, kInf, 4.0f, 5.0f}, {"a", "b", "a", "b", "a", "c"}, 0.0f, 2);
  EXPECT_EQ(k2inf.label, "a");
  EXPECT_FLOAT_EQ(k2inf.distance, 2.0f);  // two reachable: its nearest
  EXPECT_FLOAT_EQ(k2inf.runner_up_distance, 3.0f);
  EXPECT_EQ(decide_match({kInf, kInf}, {"a", "b"}, 0.0f, 2).label, "");
  // The threshold applies to the score.
  EXPECT_TRUE(decide_match(d, labels, 3.4f, 2).rejected);
  EXPECT_FALSE(decide_match(d, labels, 3.5f, 2).rejected);
  EXPECT_THROW(decide_match(d, labels, 0.0f, 0), std::invalid_argument);
}

TEST(KNearest, TiesGoToTheEarlierTemplate) {
  const MatchDecision m = decide_match({2.0f, 2.0f}, {"z", "a"}, 0.0f, 1);
  EXPECT_EQ(m.label, "z");
  EXPECT_EQ(m.template_index, 0);
}

TEST(Warps, BestOverWarpsIsThePerTemplateMinimum) {
  EXPECT_EQ(best_over_warps({{3.0f, kInf, 5.0f}, {4.0f, 2.0f, kInf}, {1.0f, 9.0f, 6.0f}}),
            (std::vector<float>{1.0f, 2.0f, 5.0f}));
  EXPECT_THROW(best_over_warps({}), std::invalid_argument);
  EXPECT_THROW(best_over_warps({{1.0f}, {1.0f, 2.0f}}), std::invalid_argument);
}

TEST(Warps, ParseAndValidate) {
  EXPECT_EQ(parse_warp_list("0.9,1,1.1"), (std::vector<float>{0.9f, 1.0f, 1.1f}));
  EXPECT_EQ(parse_warp_list("1"), (std::vector<float>{1.0f}));
  for (const char* bad : {"", "1,", ",1", "0.9,,1", "0.5", "2", "x", "1.1x"})
    EXPECT_THROW(parse_warp_list(bad), std::invalid_argument) << bad;
  for (DtwFeatureKind k : {DtwFeatureKind::kMfcc, DtwFeatureKind::kFbank, DtwFeatureKind::kPlp}) {
    const DtwFeatureConfig c = DtwFeatureConfig::for_kind(k);
    EXPECT_GT(c.test_warps.size(), 1u) << to_string(k);
    EXPECT_NE(std::find(c.test_warps.begin(), c.test_warps.end(), 1.0f), c.test_warps.end());
    EXPECT_NO_THROW(c.validate());
  }
  DtwFeatureConfig c = DtwFeatureConfig::for_kind(DtwFeatureKind::kMfcc);
  c.test_warps.clear();
  EXPECT_THROW(c.validate(), std::invalid_argument);
  DtwFeatureConfig s = DtwFeatureConfig::for_kind(DtwFeatureKind::kSpectrum);
  EXPECT_EQ(s.test_warps, (std::vector<float>{1.0f}));
  s.test_warps = {0.9f, 1.0f};
  EXPECT_THROW(s.validate(), std::invalid_argument);
  DtwDecisionOptions d;
  d.k_nearest = 0;
  EXPECT_THROW(d.validate(), std::invalid_argument);
  d = DtwDecisionOptions();
  d.reject = DtwDecisionOptions::Reject::kFixed;
  EXPECT_THROW(d.validate(), std::invalid_argument);  // no distance given
}

// A vowel-like sound: harmonics of f0 shaped by two formants.
// Harmonics of f0 below max_hz (7 kHz: wide band; below 4 kHz: as from a
// narrow channel), shaped by two formants.
std::vector<float> vowel(double f0, double f1, double f2, double seconds, int rate = 16000,
                         double max_hz = 7000.0) {
  std::vector<float> s(static_cast<size_t>(0.3 * rate), 0.0f);
  const auto n = static_cast<size_t>(seconds * rate);
  for (size_t k = 0; k < n; ++k) {
    const double t = static_cast<double>(k) / rate;
    double v = 0.0;
    for (int h = 1; h * f0 < max_hz; ++h) {
      const double f = h * f0;
      const double g = 1.0 / (1.0 + std::pow((f - f1) / 120.0, 2)) + 0.5 / (1.0 + std::pow((f - f2) / 200.0, 2));
      v += g * std::sin(2 * M_PI * f * t);
    }
    s.push_back(static_cast<float>(3000.0 * v));
  }
  s.resize(s.size() + static_cast<size_t>(0.3 * rate), 0.0f);
  return s;
}

class WarpedFeatures : public ::testing::TestWithParam<DtwFeatureKind> {};

TEST_P(WarpedFeatures, SeveralWarpsFromOneFft) {
  BackendPtr cpu = make_cpu_backend();
  const std::vector<float> x = vowel(120, 700, 1200, 0.4);
  DtwFeatureConfig one = DtwFeatureConfig::for_kind(GetParam());
  one.test_warps = {1.0f};
  DtwFeatureConfig three = one;
  three.test_warps = {0.9f, 1.0f, 1.1f};
  DtwFeatureComputer a(one, *cpu), b(three, *cpu);
  const FeatureMatrix plain = a.compute_untrimmed(x.data(), static_cast<int64_t>(x.size()));
  const std::vector<FeatureMatrix> single = a.compute_warped_untrimmed(x.data(), static_cast<int64_t>(x.size()));
  ASSERT_EQ(single.size(), 1u);
  EXPECT_EQ(single[0].data, plain.data);
  const std::vector<FeatureMatrix> w = b.compute_warped_untrimmed(x.data(), static_cast<int64_t>(x.size()));
  ASSERT_EQ(w.size(), 3u);
  double same = 0.0, other = 0.0;
  for (size_t k = 0; k < 3; ++k) {
    ASSERT_EQ(w[k].rows, plain.rows);
    ASSERT_EQ(w[k].dim, plain.dim);
  }
  for (size_t i = 0; i < plain.data.size(); ++i) {
    same = std::max(same, static_cast<double>(std::fabs(w[1].data[i] - plain.data[i])));
    other = std::max(other, static_cast<double>(std::fabs(w[0].data[i] - plain.data[i])));
  }
  EXPECT_LT(same, 1e-3);  // warp 1 of the stack is the unwarped feature
  EXPECT_GT(other, 0.1);  // and warp 0.9 is not
  // Trimming: the same samples kept as compute() keeps.
  SpeechSegment kept;
  bool found = false;
  const std::vector<FeatureMatrix> t = b.compute_warped(x.data(), static_cast<int64_t>(x.size()), &kept, &found);
  const DtwUtterance u = a.compute(x.data(), static_cast<int64_t>(x.size()));
  EXPECT_TRUE(found);
  EXPECT_EQ(kept.begin, u.kept.begin);
  EXPECT_EQ(kept.end, u.kept.end);
  EXPECT_EQ(t[1].rows, u.features.rows);
}

INSTANTIATE_TEST_SUITE_P(Kinds, WarpedFeatures,
                         ::testing::Values(DtwFeatureKind::kMfcc, DtwFeatureKind::kFbank, DtwFeatureKind::kPlp));

using testing::write_wav;

class DecisionLibraryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpuspeech-dtw-decision-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ::mkdir((dir_ + "/two").c_str(), 0755);
    ::mkdir((dir_ + "/one").c_str(), 0755);
    // Two "voices" (f0 and formants scaled) of two "words".
    write_wav(dir_ + "/two/ah_v1.wav", vowel(110, 700, 1200, 0.4));
    write_wav(dir_ + "/two/ah_v2.wav", vowel(200, 800, 1350, 0.45));
    write_wav(dir_ + "/two/ee_v1.wav", vowel(110, 300, 2300, 0.4));
    write_wav(dir_ + "/two/ee_v2.wav", vowel(200, 340, 2600, 0.35));
    write_wav(dir_ + "/one/ah.wav", vowel(110, 700, 1200, 0.4));
    write_wav(dir_ + "/one/ee.wav", vowel(110, 300, 2300, 0.4));
    opts_ = WordRecognizerOptions::defaults();
    opts_.library.cache_dir = "-";
    cpu_ = make_cpu_backend();
  }
  void TearDown() override { { std::error_code ec; std::filesystem::remove_all(dir_, ec); } }

  std::string dir_;
  WordRecognizerOptions opts_;
  BackendPtr cpu_;
};

TEST_F(DecisionLibraryTest, ScaleIsTheUpperQuartileOfSameWordPairs) {
  const TemplateLibrary lib = TemplateLibrary::load(dir_ + "/two", opts_.library, *cpu_);
  ASSERT_EQ(lib.size(), 4u);
  // By hand: each template against the other of its word, both directions.
  std::vector<float> pairs;
  for (size_t t = 0; t < 4; ++t) {
    const size_t p = t ^ 1u;  // ah_v1/ah_v2, ee_v1/ee_v2
    ASSERT_EQ(lib[t].label, lib[p].label);
    pairs.push_back(dtw_distance(lib[t].features.data.data(), lib[t].features.rows, lib[p].features.data.data(),
                                 lib[p].features.rows, lib.dim(), opts_.dtw));
  }
  std::sort(pairs.begin(), pairs.end());
  const TemplateScale s = template_scale(lib, opts_.dtw);
  EXPECT_EQ(s.pairs, 4);
  EXPECT_EQ(s.upper_quartile, pairs[2]);  // floor(0.75 * 3)
  DtwDecisionOptions d;
  d.reject = DtwDecisionOptions::Reject::kFromTemplates;
  d.reject_scale = 1.5f;
  EXPECT_FLOAT_EQ(rejection_threshold(lib, opts_.dtw, d), 1.5f * s.upper_quartile);
  d.reject = DtwDecisionOptions::Reject::kOff;
  EXPECT_EQ(rejection_threshold(lib, opts_.dtw, d), 0.0f);
  d.reject = DtwDecisionOptions::Reject::kFixed;
  d.reject_distance = 7.0f;
  EXPECT_EQ(rejection_threshold(lib, opts_.dtw, d), 7.0f);
}

TEST_F(DecisionLibraryTest, OneTemplatePerWordCannotCalibrate) {
  const TemplateLibrary lib = TemplateLibrary::load(dir_ + "/one", opts_.library, *cpu_);
  EXPECT_EQ(template_scale(lib, opts_.dtw).pairs, 0);
  DtwDecisionOptions d;
  d.reject = DtwDecisionOptions::Reject::kFromTemplates;
  EXPECT_THROW(rejection_threshold(lib, opts_.dtw, d), std::invalid_argument);
  WordRecognizerOptions o = opts_;
  o.decision = d;
  EXPECT_THROW(WordRecognizer(dir_ + "/one", o, *cpu_), std::invalid_argument);
}

// Band matching (band_limit.h): a vowel with no harmonic above 3.6 kHz is
// band-limited and matched against the (wide-band) templates cut at 4 kHz.
// A cut set that cannot be made (an edge below the VTLN's lower knee)
// leaves it to the wide set, as band matching off does, and says why.
TEST_F(DecisionLibraryTest, BandMatchingAndItsFallBack) {
  std::vector<float> x = vowel(150, 740, 1250, 0.4, 16000, 3600.0);
  // Faded in and out over 30 ms: an abrupt onset is a click, whose
  // spectrum reaches past 4 kHz.
  const size_t begin = static_cast<size_t>(0.3 * 16000), len = static_cast<size_t>(0.4 * 16000), fade = 480;
  for (size_t k = 0; k < fade; ++k) {
    const float g = 0.5f - 0.5f * std::cos(static_cast<float>(M_PI) * k / fade);
    x[begin + k] *= g;
    x[begin + len - 1 - k] *= g;
  }
  const int64_t n = static_cast<int64_t>(x.size());
  ASSERT_TRUE(is_band_limited(x.data(), n, 16000.0f));
  WordRecognizer on(dir_ + "/two", opts_, *cpu_);
  const WordRecognizer::Result a = on.recognise(x.data(), n);
  EXPECT_TRUE(a.band_limited);
  EXPECT_EQ(a.decision.label, "ah");
  EXPECT_TRUE(on.band_match_error().empty());

  WordRecognizerOptions o = opts_;
  o.band_match = false;
  WordRecognizer off(dir_ + "/two", o, *cpu_);
  const WordRecognizer::Result b = off.recognise(x.data(), n);
  EXPECT_FALSE(b.band_limited);
  EXPECT_EQ(b.decision.label, "ah");
  // The cut features are other numbers.
  EXPECT_NE(a.decision.distance, b.decision.distance);

  o = opts_;
  o.band_limit.edge_hz = 150.0f;
  WordRecognizer broken(dir_ + "/two", o, *cpu_);
  const WordRecognizer::Result c = broken.recognise(x.data(), n);
  EXPECT_FALSE(c.band_limited);
  EXPECT_FALSE(broken.band_match_error().empty());
  EXPECT_EQ(c.decision.label, b.decision.label);
  EXPECT_EQ(c.decision.distance, b.decision.distance);
  // After the failed attempt the spectrum is no longer looked at: the next
  // test goes straight to the wide set, with the same result.
  const WordRecognizer::Result d = broken.recognise(x.data(), n);
  EXPECT_FALSE(d.band_limited);
  EXPECT_EQ(d.decision.label, b.decision.label);
  EXPECT_EQ(d.decision.distance, b.decision.distance);
}

TEST_F(DecisionLibraryTest, AveragingAlignsToTheMedoid) {
  const TemplateLibrary lib = TemplateLibrary::load(dir_ + "/two", opts_.library, *cpu_);
  for (StepPattern pattern : {StepPattern::kItakura, StepPattern::kSymmetric}) {
    DtwOptions dtw = opts_.dtw;
    dtw.pattern = pattern;
    const std::vector<DtwTemplate> avg = average_templates(lib, dtw);
    ASSERT_EQ(avg.size(), 2u);
    for (const DtwTemplate& a : avg) {
      // Two members: the medoid is the one with the smaller distance to the
      // other (ties to the first); the average is the medoid's frames and
      // the other's frames on its path, half and half.
      std::vector<size_t> m;
      for (size_t t = 0; t < lib.size(); ++t)
        if (lib[t].label == a.label) m.push_back(t);
      ASSERT_EQ(m.size(), 2u);
      const FeatureMatrix& x = lib[m[0]].features;
      const FeatureMatrix& y = lib[m[1]].features;
      const float dxy = dtw_distance(x.data.data(), x.rows, y.data.data(), y.rows, lib.dim(), dtw);
      const float dyx = dtw_distance(y.data.data(), y.rows, x.data.data(), x.rows, lib.dim(), dtw);
      const FeatureMatrix& med = dxy <= dyx ? x : y;
      const FeatureMatrix& other = dxy <= dyx ? y : x;
      std::vector<std::pair<int64_t, int64_t>> path;
      dtw_distance(med.data.data(), med.rows, other.data.data(), other.rows, lib.dim(), dtw, &path);
      ASSERT_EQ(a.features.rows, med.rows);
      // The other's frames on each medoid frame's column, averaged (Itakura:
      // exactly one; symmetric: one or more).
      std::vector<double> col(static_cast<size_t>(med.rows) * lib.dim(), 0.0);
      std::vector<int> hits(static_cast<size_t>(med.rows), 0);
      for (const auto& [i, j] : path) {
        for (int k = 0; k < lib.dim(); ++k) col[static_cast<size_t>(i) * lib.dim() + k] += other.row(j)[k];
        ++hits[static_cast<size_t>(i)];
      }
      for (int64_t i = 0; i < med.rows; ++i) {
        ASSERT_GT(hits[static_cast<size_t>(i)], 0);
        if (pattern == StepPattern::kItakura) {
          EXPECT_EQ(hits[static_cast<size_t>(i)], 1);
        }
        for (int k = 0; k < lib.dim(); ++k)
          EXPECT_NEAR(a.features.row(i)[k],
                      0.5 * (med.row(i)[k] + col[static_cast<size_t>(i) * lib.dim() + k] / hits[static_cast<size_t>(i)]),
                      1e-4)
              << a.label << " " << i;
      }
    }
  }
  // In the recogniser: added to the recordings, or in their place.
  WordRecognizerOptions o = opts_;
  o.averaging = TemplateAveraging::kAdd;
  EXPECT_EQ(WordRecognizer(dir_ + "/two", o, *cpu_).library().size(), 6u);
  o.averaging = TemplateAveraging::kOnly;
  EXPECT_EQ(WordRecognizer(dir_ + "/two", o, *cpu_).library().size(), 2u);
  // One recording per word: nothing to average.
  EXPECT_TRUE(average_templates(TemplateLibrary::load(dir_ + "/one", opts_.library, *cpu_), opts_.dtw).empty());
  EXPECT_THROW(parse_template_averaging("mean"), std::invalid_argument);
}

TEST_F(DecisionLibraryTest, RecognisesAThirdVoiceOnEveryEngine) {
  // A third voice between the two, with its own pitch.
  const std::vector<float> ah = vowel(150, 750, 1280, 0.42), ee = vowel(150, 320, 2450, 0.38);
  WordRecognizer ref(dir_ + "/two", opts_, *cpu_);
  const WordRecognizer::Result ra = ref.recognise(ah.data(), static_cast<int64_t>(ah.size()));
  const WordRecognizer::Result re = ref.recognise(ee.data(), static_cast<int64_t>(ee.size()));
  EXPECT_EQ(ra.decision.label, "ah");
  EXPECT_EQ(re.decision.label, "ee");
  EXPECT_GT(ra.frames, 30);
  for (const std::string& name : {std::string("opencl"), std::string("cuda")}) {
    WordRecognizerOptions o = opts_;
    o.engine = name;
    std::unique_ptr<WordRecognizer> dev;
    try {
      dev = std::make_unique<WordRecognizer>(dir_ + "/two", o, *cpu_);
    } catch (const BackendError& e) {
      const std::vector<std::string> req = testing::required_backends();
      EXPECT_EQ(std::find(req.begin(), req.end(), name), req.end()) << name << " required: " << e.what();
      continue;
    }
    for (const std::vector<float>* x : {&ah, &ee}) {
      const MatchDecision a = ref.recognise(x->data(), static_cast<int64_t>(x->size())).decision;
      const MatchDecision b = dev->recognise(x->data(), static_cast<int64_t>(x->size())).decision;
      EXPECT_EQ(a.label, b.label) << name;
      EXPECT_NEAR(a.distance, b.distance, 1e-4 * a.distance) << name;
      EXPECT_NEAR(a.runner_up_distance, b.runner_up_distance, 1e-4 * a.runner_up_distance) << name;
    }
  }
}

}  // namespace
}  // namespace gpuspeech
