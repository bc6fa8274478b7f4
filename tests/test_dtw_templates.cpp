// The template library (common/dtw/template_library.h) and the DTW
// features (dtw_features.h): labels from names and lists, the on-disk cache
// (hits, keys that change with the audio and the options, damaged entries),
// the errors for bad templates, the plain log power spectrum against a
// direct DFT, and the spectrum on every usable backend against the CPU's.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "common/backends/backend_registry.h"
#include "common/dtw/template_feature_cache.h"
#include "common/dtw/template_library.h"
#include "common/dtw/template_matcher.h"
#include "tests/test_backends.h"
#include "tests/wav_test_util.h"

namespace gpuspeech {
namespace {

using testing::write_wav;

// Silence, a chirp from f0 to f1 Hz, silence.
std::vector<float> chirp(double f0, double f1, double seconds, int rate = 16000) {
  std::vector<float> s(static_cast<size_t>(0.3 * rate), 0.0f);
  const auto n = static_cast<size_t>(seconds * rate);
  double phase = 0.0;
  for (size_t k = 0; k < n; ++k) {
    const double f = f0 + (f1 - f0) * static_cast<double>(k) / static_cast<double>(n);
    phase += 2 * M_PI * f / rate;
    s.push_back(static_cast<float>(8000.0 * std::sin(phase)));
  }
  s.resize(s.size() + static_cast<size_t>(0.3 * rate), 0.0f);
  return s;
}

class TemplateLibraryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpuspeech-dtw-lib-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ::mkdir((dir_ + "/tpl").c_str(), 0755);
    write_wav(dir_ + "/tpl/up_1.wav", chirp(300, 1500, 0.5));
    write_wav(dir_ + "/tpl/up_anna.wav", chirp(350, 1400, 0.6));
    write_wav(dir_ + "/tpl/down.wav", chirp(1500, 300, 0.5));
    opts_.features = DtwFeatureConfig::for_kind(DtwFeatureKind::kMfcc);
    opts_.cache_dir = dir_ + "/cache";
    backend_ = make_cpu_backend();
  }
  void TearDown() override { { std::error_code ec; std::filesystem::remove_all(dir_, ec); } }

  std::string dir_;
  TemplateLibraryOptions opts_;
  BackendPtr backend_;
};

TEST_F(TemplateLibraryTest, LabelsFromNamesAndCacheHits) {
  const TemplateLibrary a = TemplateLibrary::load(dir_ + "/tpl", opts_, *backend_);
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a.labels(), (std::vector<std::string>{"down", "up", "up"}));
  EXPECT_EQ(a.cache_hits(), 0);
  EXPECT_EQ(a.dim(), 13);
  const TemplateLibrary b = TemplateLibrary::load(dir_ + "/tpl", opts_, *backend_);
  EXPECT_EQ(b.cache_hits(), 3);
  for (size_t t = 0; t < 3; ++t) {
    EXPECT_EQ(a[t].features.rows, b[t].features.rows);
    EXPECT_EQ(a[t].features.data, b[t].features.data);
  }
  // Another feature setting is another key: computed afresh.
  TemplateLibraryOptions fb = opts_;
  fb.features = DtwFeatureConfig::for_kind(DtwFeatureKind::kFbank);
  EXPECT_EQ(TemplateLibrary::load(dir_ + "/tpl", fb, *backend_).cache_hits(), 0);
  // A changed recording is another key too.
  write_wav(dir_ + "/tpl/down.wav", chirp(1400, 300, 0.5));
  EXPECT_EQ(TemplateLibrary::load(dir_ + "/tpl", opts_, *backend_).cache_hits(), 2);
  EXPECT_EQ(template_label_from_path("/x/yes_anna_2.wav"), "yes");
  EXPECT_EQ(template_label_from_path("stop.wav"), "stop");
}

TEST_F(TemplateLibraryTest, DamagedCacheEntryIsRecomputed) {
  const TemplateLibrary a = TemplateLibrary::load(dir_ + "/tpl", opts_, *backend_);
  // Truncate every entry.
  ASSERT_EQ(std::system(("for f in '" + opts_.cache_dir + "'/dtw/*.feat; do head -c 20 \"$f\" > \"$f.x\" && mv \"$f.x\" \"$f\"; done").c_str()), 0);
  const TemplateLibrary b = TemplateLibrary::load(dir_ + "/tpl", opts_, *backend_);
  EXPECT_EQ(b.cache_hits(), 0);
  EXPECT_EQ(a[0].features.data, b[0].features.data);
  EXPECT_EQ(TemplateLibrary::load(dir_ + "/tpl", opts_, *backend_).cache_hits(), 3);
}

// An entry's parser takes exactly what the writer wrote and nothing else:
// every truncation, an appended byte, counts the size does not hold (with
// no allocation sized by them) and values that are not finite are "not an
// entry", leaving the outputs as they were.
TEST(DtwFeatureCache, ParsesExactlyWhatItWrites) {
  std::mt19937 rng(7);
  std::normal_distribution<float> value(0.0f, 3.0f);
  FeatureMatrix m;
  m.rows = 17;
  m.dim = 13;
  m.data.resize(17 * 13);
  for (float& x : m.data) x = value(rng);
  const std::vector<uint8_t> bytes = dtw_feature_cache_bytes(m, 2);
  FeatureMatrix got;
  int syllables = -1;
  ASSERT_TRUE(parse_dtw_feature_cache(bytes.data(), bytes.size(), &got, &syllables));
  EXPECT_EQ(got.rows, 17);
  EXPECT_EQ(got.dim, 13);
  EXPECT_EQ(got.data, m.data);
  EXPECT_EQ(syllables, 2);

  FeatureMatrix untouched;
  int count = -1;
  for (size_t n = 0; n < bytes.size(); n += 1 + n / 8)
    EXPECT_FALSE(parse_dtw_feature_cache(bytes.data(), n, &untouched, &count)) << n;
  std::vector<uint8_t> b = bytes;
  b.push_back(0);
  EXPECT_FALSE(parse_dtw_feature_cache(b.data(), b.size(), &untouched, &count));
  b = bytes;
  const int64_t huge_rows = int64_t{1} << 40;
  std::memcpy(b.data() + 8, &huge_rows, 8);
  EXPECT_FALSE(parse_dtw_feature_cache(b.data(), b.size(), &untouched, &count));
  b = bytes;
  const int32_t negative = -1;
  std::memcpy(b.data() + 20, &negative, 4);  // syllable count
  EXPECT_FALSE(parse_dtw_feature_cache(b.data(), b.size(), &untouched, &count));
  for (float bad : {std::nanf(""), INFINITY, -INFINITY}) {
    b = bytes;
    std::memcpy(b.data() + 24 + 4 * 100, &bad, 4);
    EXPECT_FALSE(parse_dtw_feature_cache(b.data(), b.size(), &untouched, &count));
  }
  EXPECT_EQ(untouched.rows, 0);
  EXPECT_TRUE(untouched.data.empty());
  EXPECT_EQ(count, -1);
}

// A cache entry whose header claims more frames than the file holds, or
// whose features are not finite, is computed again, as a truncated one is.
TEST_F(TemplateLibraryTest, CacheEntryWithLyingCountsOrNanIsRecomputed) {
  const TemplateLibrary a = TemplateLibrary::load(dir_ + "/tpl", opts_, *backend_);
  std::vector<std::string> entries;
  for (const auto& e : std::filesystem::directory_iterator(opts_.cache_dir + "/dtw"))
    entries.push_back(e.path().string());
  ASSERT_EQ(entries.size(), 3u);
  for (size_t i = 0; i < entries.size(); ++i) {
    std::fstream f(entries[i], std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f.good());
    if (i == 0) {
      const int64_t rows = int64_t{1} << 28;  // 2^28 x 13 floats, were it believed: 14 GB
      f.seekp(8);
      f.write(reinterpret_cast<const char*>(&rows), 8);
    } else {
      const float nan = std::nanf("");
      f.seekp(24 + 4 * static_cast<std::streamoff>(i));
      f.write(reinterpret_cast<const char*>(&nan), 4);
    }
  }
  const TemplateLibrary b = TemplateLibrary::load(dir_ + "/tpl", opts_, *backend_);
  EXPECT_EQ(b.cache_hits(), 0);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].features.data, b[i].features.data) << i;
  EXPECT_EQ(TemplateLibrary::load(dir_ + "/tpl", opts_, *backend_).cache_hits(), 3);
}

TEST_F(TemplateLibraryTest, ListFileWithLabels) {
  std::ofstream(dir_ + "/list.txt") << "# comment\nrise tpl/up_1.wav\n\n" << dir_ << "/tpl/down.wav\n";
  const TemplateLibrary lib = TemplateLibrary::load(dir_ + "/list.txt", opts_, *backend_);
  EXPECT_EQ(lib.labels(), (std::vector<std::string>{"rise", "down"}));
  const PackedTemplates p = lib.pack();
  EXPECT_EQ(p.count(), 2);
  EXPECT_EQ(p.length(0), lib[0].features.rows);
  EXPECT_EQ(static_cast<int64_t>(p.frames.size()), (p.length(0) + p.length(1)) * 13);
}

void expect_template_error(const std::string& source, const TemplateLibraryOptions& o, Backend& b,
                           const std::string& needle) {
  try {
    TemplateLibrary::load(source, o, b);
    ADD_FAILURE() << "no error for " << source;
  } catch (const TemplateError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST_F(TemplateLibraryTest, BadTemplatesAreNamedErrors) {
  ::mkdir((dir_ + "/empty").c_str(), 0755);
  expect_template_error(dir_ + "/empty", opts_, *backend_, "/empty: no templates");
  ::mkdir((dir_ + "/zero").c_str(), 0755);
  write_wav(dir_ + "/zero/a_1.wav", {});
  expect_template_error(dir_ + "/zero", opts_, *backend_, "a_1.wav: no audio (zero samples)");
  ::mkdir((dir_ + "/rate").c_str(), 0755);
  write_wav(dir_ + "/rate/b.wav", chirp(300, 1500, 0.5, 8000), 8000);
  expect_template_error(dir_ + "/rate", opts_, *backend_, "b.wav: sample rate 8000 Hz");
  ::mkdir((dir_ + "/quiet").c_str(), 0755);
  write_wav(dir_ + "/quiet/c.wav", std::vector<float>(16000, 0.0f));
  expect_template_error(dir_ + "/quiet", opts_, *backend_, "c.wav: no speech found");
  expect_template_error(dir_ + "/missing", opts_, *backend_, "/missing: not found");
  // Without trimming a silent recording is a template like any other.
  TemplateLibraryOptions no_trim = opts_;
  no_trim.features.trim_silence = false;
  EXPECT_EQ(TemplateLibrary::load(dir_ + "/quiet", no_trim, *backend_).size(), 1u);
}

TEST(DtwFeatures, LogSpectrumMatchesADirectDft) {
  BackendPtr cpu = make_cpu_backend();
  DtwFeatureConfig c = DtwFeatureConfig::for_kind(DtwFeatureKind::kSpectrum);
  c.features.frame.preemphasis = 0.0f;
  c.features.frame.window = WindowType::kRectangular;
  c.features.frame.frame_length_ms = 32.0f;  // 512 samples = the FFT size
  c.features.frame.dither = 0.0f;
  c.features.norm.cmn = NormOptions::Cmn::kNone;
  c.trim_silence = false;
  DtwFeatureComputer fc(c, *cpu);
  ASSERT_EQ(fc.dim(), 257);
  std::vector<float> s(4000);
  for (size_t k = 0; k < s.size(); ++k)
    s[k] = static_cast<float>(1000.0 * std::cos(2 * M_PI * 40.0 * k / 512.0) + 300.0 * std::sin(2 * M_PI * 7.5 * k / 512.0));
  const FeatureMatrix m = fc.compute_untrimmed(s.data(), static_cast<int64_t>(s.size()));
  ASSERT_GE(m.rows, 3);
  for (int64_t t = 0; t < 3; ++t)
    for (int b = 0; b < 257; b += 1) {
      double re = 0.0, im = 0.0;
      for (int k = 0; k < 512; ++k) {
        re += s[t * 160 + k] * std::cos(2 * M_PI * b * k / 512.0);
        im -= s[t * 160 + k] * std::sin(2 * M_PI * b * k / 512.0);
      }
      const double want = std::log(std::max(re * re + im * im, 1.0));
      EXPECT_NEAR(m.row(t)[b], want, 1e-3 * std::max(1.0, std::fabs(want))) << "frame " << t << " bin " << b;
    }
}

TEST(DtwFeatures, EveryBackendGivesTheCpuFeatures) {
  BackendPtr cpu = make_cpu_backend();
  const std::vector<float> s = chirp(300, 3000, 0.8);
  for (const std::string& name : testing::backends_under_test()) {
    if (name == "cpu") continue;
    BackendPtr dev = open_backend(name);
    for (DtwFeatureKind k : {DtwFeatureKind::kMfcc, DtwFeatureKind::kFbank, DtwFeatureKind::kSpectrum}) {
      const DtwFeatureConfig c = DtwFeatureConfig::for_kind(k);
      DtwFeatureComputer a(c, *cpu), b(c, *dev);
      const DtwUtterance ua = a.compute(s.data(), static_cast<int64_t>(s.size()));
      const DtwUtterance ub = b.compute(s.data(), static_cast<int64_t>(s.size()));
      ASSERT_EQ(ua.features.rows, ub.features.rows);
      double worst = 0.0;
      size_t at = 0;
      for (size_t i = 0; i < ua.features.data.size(); ++i) {
        const double e = std::fabs(ua.features.data[i] - ub.features.data[i]);
        if (e > worst) worst = e, at = i;
      }
      // The log of a spectral bin far below the frame's strongest one
      // carries the float FFT's rounding (relative to the frame's energy)
      // magnified; the mel bands and cepstra average it away.
      const double tol = k == DtwFeatureKind::kSpectrum ? 0.05 : 2e-3;
      EXPECT_LT(worst, tol) << name << " " << to_string(k) << " at frame " << at / ua.features.dim
                            << " value " << at % ua.features.dim << " (cpu " << ua.features.data[at] << ")";
    }
  }
}

TEST(TemplateMatcher, BestRunnerUpAndRejection) {
  const float inf = INFINITY;
  const std::vector<std::string> labels = {"yes", "no", "yes", "stop"};
  MatchDecision d = decide_match({5.0f, 7.0f, 4.0f, 9.0f}, labels, 0.0f);
  EXPECT_EQ(d.label, "yes");
  EXPECT_EQ(d.template_index, 2);
  EXPECT_EQ(d.distance, 4.0f);
  EXPECT_EQ(d.runner_up, "no");  // the other "yes" template is not a runner-up
  EXPECT_EQ(d.runner_up_distance, 7.0f);
  EXPECT_FALSE(d.rejected);
  EXPECT_TRUE(decide_match({5.0f, 7.0f, 4.0f, 9.0f}, labels, 3.5f).rejected);
  d = decide_match({inf, inf, inf, inf}, labels, 0.0f);
  EXPECT_TRUE(d.rejected);
  EXPECT_EQ(d.label, "");
  d = decide_match({1.0f, inf}, {"a", "a"}, 0.0f);
  EXPECT_EQ(d.runner_up, "");
  EXPECT_THROW(decide_match({1.0f}, labels, 0.0f), std::invalid_argument);
}

}  // namespace
}  // namespace gpuspeech
