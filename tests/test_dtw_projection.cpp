// The DTW feature projection (common/dtw/feature_projection.h), its
// learner (projection_learner.h) and the eigen solver under it
// (symmetric_eigen.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/dtw/dtw.h"
#include "common/dtw/feature_projection.h"
#include "common/dtw/projection_catalog.h"
#include "common/dtw/projection_learner.h"
#include "common/dtw/projection_threshold.h"
#include "common/dtw/symmetric_eigen.h"
#include "common/dtw/template_library.h"

namespace gpuspeech {
namespace {

std::mt19937 fresh_rng() { return std::mt19937(std::random_device{}()); }

FeatureMatrix random_matrix(int64_t rows, int dim, std::mt19937& rng) {
  std::normal_distribution<float> g(0.0f, 1.0f);
  FeatureMatrix m;
  m.rows = rows;
  m.dim = dim;
  for (int64_t i = 0; i < rows * dim; ++i) m.data.push_back(g(rng));
  return m;
}

TEST(SymmetricEigen, DecomposesARandomMatrix) {
  std::mt19937 rng = fresh_rng();
  std::normal_distribution<double> g(0.0, 1.0);
  const int n = 9;
  std::vector<double> a(n * n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j <= i; ++j) a[i * n + j] = a[j * n + i] = g(rng);
  const SymmetricEigen e = symmetric_eigen(a, n);
  ASSERT_EQ(e.values.size(), size_t(n));
  for (int j = 0; j + 1 < n; ++j) EXPECT_GE(e.values[j], e.values[j + 1]);
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < n; ++i) {  // A v = lambda v, row by row
      double av = 0.0;
      for (int k = 0; k < n; ++k) av += a[i * n + k] * e.vectors[k * n + j];
      EXPECT_NEAR(av, e.values[j] * e.vectors[i * n + j], 1e-9);
    }
    for (int k = 0; k < n; ++k) {  // orthonormal columns
      double dot = 0.0;
      for (int i = 0; i < n; ++i) dot += e.vectors[i * n + j] * e.vectors[i * n + k];
      EXPECT_NEAR(dot, j == k ? 1.0 : 0.0, 1e-9);
    }
  }
}

TEST(SymmetricEigen, RefusesBadInput) {
  EXPECT_THROW(symmetric_eigen({}, 0), std::invalid_argument);
  EXPECT_THROW(symmetric_eigen({1, 2, 3}, 2), std::invalid_argument);
  EXPECT_THROW(symmetric_eigen({1, 0, 0, NAN}, 2), std::invalid_argument);
}

TEST(DtwProjection, SpliceRepeatsTheEdgeFrames) {
  FeatureMatrix m;
  m.rows = 3;
  m.dim = 2;
  m.data = {1, 2, 3, 4, 5, 6};
  const FeatureMatrix s = splice_frames(m, 1);
  ASSERT_EQ(s.dim, 6);
  ASSERT_EQ(s.rows, 3);
  EXPECT_EQ(s.data, (std::vector<float>{1, 2, 1, 2, 3, 4,  //
                                        1, 2, 3, 4, 5, 6,  //
                                        3, 4, 5, 6, 5, 6}));
  EXPECT_EQ(splice_frames(m, 0).data, m.data);
}

TEST(DtwProjection, AppliesTheMatrixToSplicedFrames) {
  std::mt19937 rng = fresh_rng();
  const FeatureMatrix m = random_matrix(7, 3, rng);
  // Output 0 is the next frame's first value, output 1 the sum of the
  // current frame's values.
  DtwProjection p;
  p.input_dim = 3;
  p.splice = 1;
  p.output_dim = 2;
  p.weights.assign(2 * 9, 0.0f);
  p.weights[0 * 9 + 6] = 1.0f;
  p.weights[1 * 9 + 3] = p.weights[1 * 9 + 4] = p.weights[1 * 9 + 5] = 1.0f;
  const FeatureMatrix r = p.apply(m);
  ASSERT_EQ(r.rows, 7);
  ASSERT_EQ(r.dim, 2);
  for (int64_t i = 0; i < 7; ++i) {
    EXPECT_EQ(r.row(i)[0], m.row(std::min<int64_t>(i + 1, 6))[0]);
    EXPECT_NEAR(r.row(i)[1], m.row(i)[0] + m.row(i)[1] + m.row(i)[2], 1e-5);
  }
  FeatureMatrix wrong = random_matrix(4, 2, rng);
  EXPECT_THROW(p.apply(wrong), std::invalid_argument);
}

TEST(DtwProjection, TextRoundTripsExactly) {
  std::mt19937 rng = fresh_rng();
  std::normal_distribution<float> g(0.0f, 3.0f);
  DtwProjection p;
  p.features = "dtw-kind=plp;kind=plp;rate=16000";
  p.input_dim = 4;
  p.splice = 2;
  p.output_dim = 3;
  p.thresholds = {std::fabs(g(rng)) + 0.1f, std::fabs(g(rng)) + 0.1f, std::fabs(g(rng)) + 0.1f};
  for (int i = 0; i < 3 * 20; ++i) p.weights.push_back(g(rng));
  const std::string text = format_dtw_projection(p, "made by a test\nsecond line");
  const DtwProjection q = parse_dtw_projection(text, "round.trip");
  EXPECT_EQ(q.features, p.features);
  EXPECT_EQ(q.input_dim, 4);
  EXPECT_EQ(q.splice, 2);
  EXPECT_EQ(q.output_dim, 3);
  EXPECT_EQ(q.thresholds, p.thresholds);
  EXPECT_EQ(q.weights, p.weights);
}

// Element n - 1 serves a word of n templates, the last every larger word;
// a map without thresholds gives 0 (cannot reject).
TEST(DtwProjection, ThresholdByTemplatesAWordHas) {
  DtwProjection p;
  EXPECT_EQ(p.threshold_for(3), 0.0f);
  p.thresholds = {2.0f, 1.8f, 1.7f};
  EXPECT_EQ(p.threshold_for(0), 2.0f);
  EXPECT_EQ(p.threshold_for(1), 2.0f);
  EXPECT_EQ(p.threshold_for(2), 1.8f);
  EXPECT_EQ(p.threshold_for(3), 1.7f);
  EXPECT_EQ(p.threshold_for(40), 1.7f);
  p.thresholds = {1.5f};
  EXPECT_EQ(p.threshold_for(7), 1.5f);
}

TEST(DtwProjection, BadTextNamesTheLine) {
  const std::string head = "gpuspeech-dtw-projection 1\nfeatures f\ninput-dim 2\nsplice 0\noutput-dim 1\nthreshold 1\nweights\n";
  struct Case {
    std::string text;
    std::string where;  // "bad:LINE:"
  } cases[] = {
      {"", "bad:0:"},
      {"something else\n", "bad:1:"},
      {"gpuspeech-dtw-projection 2\n", "bad:1:"},
      {"gpuspeech-dtw-projection 1\ninput-dim 2\n", "bad:2:"},
      {"gpuspeech-dtw-projection 1\nfeatures a b\n", "bad:2:"},
      {"gpuspeech-dtw-projection 1\nfeatures f\ninput-dim 0\n", "bad:3:"},
      {"gpuspeech-dtw-projection 1\nfeatures f\ninput-dim 2.5\n", "bad:3:"},
      {"gpuspeech-dtw-projection 1\nsplice 0\n", "bad:2:"},
      {"gpuspeech-dtw-projection 1\nfeatures f\ninput-dim 2\nsplice 40\n", "bad:4:"},
      {"gpuspeech-dtw-projection 1\nfeatures f\ninput-dim 4096\nsplice 32\noutput-dim 4096\nthreshold 1\nweights\n", "bad:7:"},
      {"gpuspeech-dtw-projection 1\nfeatures f\ninput-dim 2\nsplice 0\noutput-dim 1\nthreshold nan\n", "bad:6:"},
      {head, "bad:7:"},
      {"gpuspeech-dtw-projection 1\nfeatures f\ninput-dim 2\nsplice 0\noutput-dim 1\nthreshold\n", "bad:6:"},
      {"gpuspeech-dtw-projection 1\nfeatures f\ninput-dim 2\nsplice 0\noutput-dim 1\nthreshold 2 0\n", "bad:6:"},
      {"gpuspeech-dtw-projection 1\nfeatures f\ninput-dim 2\nsplice 0\noutput-dim 1\nthreshold 2 -1\n", "bad:6:"},
      {"gpuspeech-dtw-projection 1\nfeatures f\ninput-dim 2\nsplice 0\noutput-dim 1\nthreshold" +
           [] { std::string t; for (int i = 0; i < 65; ++i) t += " 1"; return t; }() + "\n",
       "bad:6:"},
      {head + "1 2 3\n", "bad:8:"},
      {head + "1 inf\n", "bad:8:"},
      {head + "1 2x\n", "bad:8:"},
      {head + "1 1e39\n", "bad:8:"},  // finite as a double, not as a float (found by the fuzzer)
      {head + "1 1,5\n", "bad:8:"},   // a decimal comma, in any locale
      {head + "1 +-2\n", "bad:8:"},
      {head + "# a comment\n\n1 2\n3 4\n", "bad:11:"},
  };
  for (const Case& c : cases) {
    try {
      parse_dtw_projection(c.text, "bad");
      ADD_FAILURE() << "parsed: " << c.text;
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()).rfind(c.where, 0), 0u) << e.what() << " for: " << c.text;
    }
  }
  const DtwProjection good = parse_dtw_projection(head + "# a comment\n\n+1.5 -2e-1\n", "good");
  EXPECT_EQ(good.weights, (std::vector<float>{1.5f, -0.2f}));
  EXPECT_EQ(good.thresholds, (std::vector<float>{1.0f}));
  std::string none = head;
  none.replace(none.find("threshold 1"), 11, "threshold 0");
  EXPECT_FALSE(parse_dtw_projection(none + "1 2\n", "none").has_threshold());
  EXPECT_THROW(load_dtw_projection("/nonexistent/map.txt"), std::runtime_error);
}

// A corpus where dimension 0 carries the word (each word its own contour)
// and dimensions 1-3 carry the voice (an offset per voice, as large as the
// words' differences, which CMN would not remove were it a slope or a
// shape; here it stays a constant so that DTW's paths follow the word):
// the learnt map must look at dimension 0 and make a word by a new voice
// nearer its own word than another word.
TEST(ProjectionLearner, FindsTheDirectionThatTellsWordsApart) {
  std::mt19937 rng = fresh_rng();
  std::normal_distribution<float> g(0.0f, 1.0f);
  const int words = 6, voices = 8, frames = 20, dim = 4;
  std::vector<std::vector<float>> contour(words, std::vector<float>(frames));
  for (auto& c : contour)
    for (float& x : c) x = g(rng);
  std::vector<std::vector<float>> offset(voices + 1, std::vector<float>(dim));
  for (auto& o : offset)
    for (int k = 1; k < dim; ++k) o[k] = g(rng);
  auto utterance = [&](int w, int v) {
    FeatureMatrix m;
    m.rows = frames;
    m.dim = dim;
    for (int i = 0; i < frames; ++i) {
      m.data.push_back(contour[w][i] + 0.05f * g(rng));
      for (int k = 1; k < dim; ++k) m.data.push_back(offset[v][k] + 0.05f * g(rng));
    }
    return m;
  };
  TemplateLibrary corpus = TemplateLibrary::empty(dim);
  for (int w = 0; w < words; ++w)
    for (int v = 0; v < voices; ++v) {
      DtwTemplate t;
      t.label = "w" + std::to_string(w);
      t.path = t.label + "_v" + std::to_string(v) + ".wav";
      t.features = utterance(w, v);
      corpus.add(std::move(t));
    }
  DtwOptions dtw;
  dtw.pattern = StepPattern::kSymmetric;
  ProjectionLearnerOptions opts;
  opts.splice = 0;
  opts.output_dim = 1;
  opts.within_regularisation = 0.0f;
  ProjectionLearnerReport report;
  const DtwProjection p = learn_dtw_projection(corpus, dtw, opts, &report);
  ASSERT_EQ(p.output_dim, 1);
  ASSERT_EQ(p.spliced_dim(), dim);
  for (int k = 1; k < dim; ++k) EXPECT_LT(std::fabs(p.weights[k]), 0.1f * std::fabs(p.weights[0])) << k;
  EXPECT_GT(report.within_pairs, 0);
  EXPECT_GT(report.between_pairs, 0);
  ASSERT_EQ(report.kept_ratios.size(), 1u);
  EXPECT_GT(report.kept_ratios[0], 3.0);  // the voice directions: about 1

  // A new voice (offset[voices]) saying word 0, against word 0 and word 1
  // by voice 0: once mapped, the voice no longer counts.
  const FeatureMatrix test = utterance(0, voices), same = utterance(0, 0), other = utterance(1, 0);
  auto dist = [&](const FeatureMatrix& a, const FeatureMatrix& b) {
    return dtw_distance(a.data.data(), a.rows, b.data.data(), b.rows, a.dim, dtw);
  };
  const FeatureMatrix pt = p.apply(test), ps = p.apply(same), po = p.apply(other);
  EXPECT_LT(dist(pt, ps), 0.5f * dist(pt, po));
}

TEST(ProjectionLearner, RefusesACorpusItCannotLearnFrom) {
  TemplateLibrary one_word = TemplateLibrary::empty(2);
  for (int v = 0; v < 3; ++v) {
    DtwTemplate t;
    t.label = "yes";
    t.path = "yes_" + std::to_string(v) + ".wav";
    t.features.rows = 5;
    t.features.dim = 2;
    t.features.data.assign(10, float(v));
    one_word.add(std::move(t));
  }
  EXPECT_THROW(learn_dtw_projection(one_word, DtwOptions{}, ProjectionLearnerOptions{}), std::invalid_argument);
  ProjectionLearnerOptions bad;
  bad.pairs_per_template = 0;
  EXPECT_THROW(bad.validate(), std::invalid_argument);
  EXPECT_THROW(TemplateLibrary::empty(0), std::invalid_argument);

  // A spliced spectrum is refused before any memory is taken for it.
  TemplateLibrary wide = TemplateLibrary::empty(257);
  for (int w = 0; w < 2; ++w)
    for (int v = 0; v < 2; ++v) {
      DtwTemplate t;
      t.label = w ? "yes" : "no";
      t.path = t.label + "_" + std::to_string(v) + ".wav";
      t.features.rows = 4;
      t.features.dim = 257;
      t.features.data.assign(4 * 257, float(v + w));
      wide.add(std::move(t));
    }
  try {
    learn_dtw_projection(wide, DtwOptions{}, ProjectionLearnerOptions{});
    ADD_FAILURE() << "a 1285-value spliced frame was learnt from";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("more than 512"), std::string::npos) << e.what();
  }
}

// A corpus of `words` x `voices` random recordings named WORD_VOICE.wav.
TemplateLibrary random_corpus(int words, int voices, int dim, std::mt19937& rng) {
  std::uniform_int_distribution<int> len(12, 20);
  TemplateLibrary corpus = TemplateLibrary::empty(dim);
  for (int w = 0; w < words; ++w)
    for (int v = 0; v < voices; ++v) {
      DtwTemplate t;
      t.label = "w" + std::to_string(w);
      t.path = "/corpus/" + t.label + "_en.v" + std::to_string(v) + ".wav";
      t.features = random_matrix(len(rng), dim, rng);
      corpus.add(std::move(t));
    }
  return corpus;
}

DtwProjection identity_map(int dim, float scale) {
  DtwProjection p;
  p.features = "test";
  p.input_dim = p.output_dim = dim;
  p.weights.assign(static_cast<size_t>(dim) * dim, 0.0f);
  for (int k = 0; k < dim; ++k) p.weights[static_cast<size_t>(k) * dim + k] = scale;
  return p;
}

TEST(ProjectionThreshold, VoiceComesFromTheFileName) {
  EXPECT_EQ(recording_voice("/a/b/dog_en.gb.Max.wav"), "en.gb.Max");
  EXPECT_EQ(recording_voice("red_car_anna.wav"), "car_anna");
  EXPECT_EQ(recording_voice("dog.wav"), "");
  EXPECT_EQ(recording_voice("dir_x/dog.wav"), "");
}

// With every voice but one recording templates and keep = 1, the
// threshold is the largest score of any (word, test voice): computed here
// directly, each test against the other voices' recordings of its word.
TEST(ProjectionThreshold, KeepAllIsTheLargestLeaveOneVoiceOutScore) {
  std::mt19937 rng = fresh_rng();
  const int words = 3, voices = 4, dim = 3;
  const TemplateLibrary corpus = random_corpus(words, voices, dim, rng);
  DtwOptions dtw;
  dtw.pattern = StepPattern::kSymmetric;
  const DtwProjection map = identity_map(dim, 1.0f);
  float largest = 0.0f;
  for (int w = 0; w < words; ++w)
    for (int tv = 0; tv < voices; ++tv) {
      const FeatureMatrix& test = corpus[static_cast<size_t>(w * voices + tv)].features;
      std::vector<float> d;
      for (int rv = 0; rv < voices; ++rv) {
        if (rv == tv) continue;
        const FeatureMatrix& ref = corpus[static_cast<size_t>(w * voices + rv)].features;
        d.push_back(dtw_distance(test.data.data(), test.rows, ref.data.data(), ref.rows, dim, dtw));
      }
      std::sort(d.begin(), d.end());
      largest = std::max(largest, 0.5f * (d[0] + d[1]));  // k = 2
    }
  ProjectionThresholdOptions opts;
  opts.words = words;
  opts.template_voices = voices - 1;
  opts.libraries = 60;  // every voice is drawn as the test voice (1 - 4 (3/4)^60 ~ 1)
  opts.keep = 1.0f;
  ProjectionThresholdReport report;
  const float t = calibrate_projection_threshold(corpus, map, dtw, opts, nullptr, &report);
  EXPECT_NEAR(t, largest, 1e-4f * largest);
  EXPECT_EQ(report.scores, int64_t{60} * words);

  // Distances scale with the map; a smaller share keeps a smaller score.
  EXPECT_NEAR(calibrate_projection_threshold(corpus, identity_map(dim, 2.0f), dtw, opts), 2.0f * t, 2e-4f * t);
  opts.keep = 0.5f;
  EXPECT_LT(calibrate_projection_threshold(corpus, map, dtw, opts), t);
}

// Test warps: a recording whose second "warp" is another voice's recording
// of the same word scores at most as without it (each template keeps its
// best warp); the same warp twice changes nothing.
TEST(ProjectionThreshold, TestWarpsTakeTheBestPerTemplate) {
  std::mt19937 rng = fresh_rng();
  const int words = 4, voices = 6, dim = 3;
  const TemplateLibrary corpus = random_corpus(words, voices, dim, rng);
  DtwOptions dtw;
  dtw.pattern = StepPattern::kSymmetric;
  const DtwProjection map = identity_map(dim, 1.0f);
  ProjectionThresholdOptions opts;
  opts.words = 3;
  opts.template_voices = 4;
  const float plain = calibrate_projection_threshold(corpus, map, dtw, opts);
  std::vector<std::vector<FeatureMatrix>> twice, helped;
  for (size_t i = 0; i < corpus.size(); ++i) {
    twice.push_back({corpus[i].features, corpus[i].features});
    const size_t same_word_other_voice = i % voices == 0 ? i + 1 : i - 1;
    helped.push_back({corpus[i].features, corpus[same_word_other_voice].features});
  }
  EXPECT_EQ(calibrate_projection_threshold(corpus, map, dtw, opts, &twice), plain);
  EXPECT_LE(calibrate_projection_threshold(corpus, map, dtw, opts, &helped), plain);
  twice.pop_back();
  EXPECT_THROW(calibrate_projection_threshold(corpus, map, dtw, opts, &twice), std::invalid_argument);
}

// One threshold per library size, each the single-size calibration with
// that many template voices; a size that leaves no voice to test is refused.
TEST(ProjectionThreshold, OneThresholdPerLibrarySize) {
  std::mt19937 rng = fresh_rng();
  const int words = 4, voices = 6, dim = 3;
  const TemplateLibrary corpus = random_corpus(words, voices, dim, rng);
  DtwOptions dtw;
  dtw.pattern = StepPattern::kSymmetric;
  const DtwProjection map = identity_map(dim, 1.0f);
  ProjectionThresholdOptions opts;
  opts.words = 3;
  std::vector<ProjectionThresholdReport> reports;
  const std::vector<float> t = calibrate_projection_thresholds(corpus, map, dtw, opts, voices - 1, nullptr, &reports);
  ASSERT_EQ(t.size(), static_cast<size_t>(voices - 1));
  ASSERT_EQ(reports.size(), t.size());
  for (int n = 1; n < voices; ++n) {
    ProjectionThresholdOptions one = opts;
    one.template_voices = n;
    ProjectionThresholdReport r;
    EXPECT_EQ(t[static_cast<size_t>(n - 1)], calibrate_projection_threshold(corpus, map, dtw, one, nullptr, &r)) << n;
    EXPECT_EQ(reports[static_cast<size_t>(n - 1)].scores, r.scores);
  }
  EXPECT_THROW(calibrate_projection_thresholds(corpus, map, dtw, opts, voices), std::invalid_argument);
  EXPECT_THROW(calibrate_projection_thresholds(corpus, map, dtw, opts, 0), std::invalid_argument);
}

TEST(ProjectionThreshold, RefusesWhatItCannotSimulate) {
  std::mt19937 rng = fresh_rng();
  const TemplateLibrary corpus = random_corpus(3, 4, 2, rng);
  const DtwProjection map = identity_map(2, 1.0f);
  ProjectionThresholdOptions opts;
  opts.words = 3;
  opts.template_voices = 4;  // no voice left to test
  EXPECT_THROW(calibrate_projection_threshold(corpus, map, DtwOptions{}, opts), std::invalid_argument);
  opts.template_voices = 3;
  opts.words = 4;  // more words than the corpus has
  EXPECT_THROW(calibrate_projection_threshold(corpus, map, DtwOptions{}, opts), std::invalid_argument);
  opts.words = 3;
  EXPECT_THROW(calibrate_projection_threshold(corpus, identity_map(3, 1.0f), DtwOptions{}, opts),
               std::invalid_argument);  // a map of 3 values a frame
  TemplateLibrary unnamed = TemplateLibrary::empty(2);
  DtwTemplate t;
  t.label = "dog";
  t.path = "dog.wav";
  t.features = random_matrix(5, 2, rng);
  unnamed.add(t);
  EXPECT_THROW(calibrate_projection_threshold(unnamed, map, DtwOptions{}, opts), std::invalid_argument);
  opts.keep = 0.0f;
  EXPECT_THROW(opts.validate(), std::invalid_argument);
}

TEST(ProjectionCatalog, TakesTheMapOfTheFeaturesAsked) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("gpuspeech-catalog-" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& features, float threshold) {
    DtwProjection p = identity_map(2, 1.0f);
    p.features = features;
    p.thresholds = {threshold};
    std::ofstream(dir / name) << format_dtw_projection(p);
  };
  write("a.projection", "dtw-kind=plp;high-freq=6800", 1.5f);
  write("b.projection", "dtw-kind=plp;high-freq=4000", 2.5f);
  write("c.txt", "dtw-kind=mfcc", 3.5f);  // not a .projection: not looked at in the directory
  EXPECT_EQ(find_dtw_projection({dir.string()}, "dtw-kind=plp;high-freq=4000").threshold_for(1), 2.5f);
  EXPECT_EQ(find_dtw_projection({dir.string()}, "dtw-kind=plp;high-freq=6800").threshold_for(1), 1.5f);
  EXPECT_EQ(find_dtw_projection({(dir / "c.txt").string(), dir.string()}, "dtw-kind=mfcc").threshold_for(1), 3.5f);
  try {
    find_dtw_projection({dir.string()}, "dtw-kind=mfcc");
    ADD_FAILURE() << "a map of other features was taken";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("a.projection: templates dtw-kind=mfcc, map dtw-kind=plp"), std::string::npos) << what;
    EXPECT_NE(what.find("b.projection"), std::string::npos) << what;
    EXPECT_EQ(what.find("c.txt"), std::string::npos) << what;
  }
  EXPECT_THROW(find_dtw_projection({}, "dtw-kind=plp"), std::runtime_error);
  EXPECT_THROW(find_dtw_projection({(dir / "missing.projection").string()}, "x"), std::runtime_error);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpuspeech
