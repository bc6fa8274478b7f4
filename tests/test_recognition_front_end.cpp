// The recognition front end's Sphinx noise subtraction and silence removal
// (RecognizerConfig::remove_noise / remove_silence, on by default as in
// pocketsphinx) against sphinx_fe: the features Recognizer makes from audio
// equal the model's CMN and deltas applied to what sphinx_fe writes with
// -remove_noise yes -remove_silence yes (tests/data/sphinx_fe/*.nr.mfc), and
// with both off to what it writes with both off (*.mfc). Also: word times
// stay on the audio's clock when silence is dropped.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "common/features/feature_writer.h"
#include "common/engine/recognizer.h"
#include "common/features/postprocess.h"
#include "common/features/wav_reader.h"
#include "tests/test_backends.h"

namespace gpuspeech {
namespace {

std::string en_us_root() { return testing::model_dir() + "/en-us"; }
bool have_file(const std::string& path) { return std::ifstream(path).good(); }

// The goforward grammar: a small graph, compiled in a second, so that the
// test is about the front end.
RecognizerConfig goforward_config() {
  RecognizerConfig c = RecognizerConfig::en_us_defaults(en_us_root());
  c.grammar_kind = GrammarKind::kJsgf;
  c.grammar = testing::audio_dir() + "/goforward.gram";
  c.scoring_backend = "cpu";
  c.search_backend = "cpu";
  c.cache_dir = "-";
  return c;
}

bool have_inputs() {
  return have_file(en_us_root() + "/en-us/mdef") &&
         have_file(testing::audio_dir() + "/goforward.gram") &&
         have_file(testing::audio_dir() + "/goforward.raw");
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0.0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]));
  return worst;
}

// The LCG noise of tests/data/sphinx_fe/generate.sh:
// x = (1103515245 x + 12345) mod 2^31 from x = 12345, sample
// ((x >> 16) mod 61) - 30.
struct FaintNoise {
  uint32_t state = 12345;
  void append(std::vector<float>& out, int n) {
    for (int i = 0; i < n; ++i) {
      state = (1103515245u * state + 12345u) & 0x7fffffffu;
      out.push_back(static_cast<float>(static_cast<int>((state >> 16) % 61) - 30));
    }
  }
};

// generate.sh's "padded" recording, where sphinx_fe's VAD drops frames in
// several places: faint noise, goforward, digital silence, noise, and
// goforward's first 1.5 s.
std::vector<float> padded_goforward(const std::vector<float>& gf) {
  std::vector<float> out;
  FaintNoise noise;
  noise.append(out, 19200);
  out.insert(out.end(), gf.begin(), gf.end());
  out.insert(out.end(), 4800, 0.0f);
  noise.append(out, 11200);
  out.insert(out.end(), gf.begin(), gf.begin() + 24000);
  return out;
}

struct Input {
  std::string name;
  std::vector<float> samples;
  std::string reference;  // sphinx_fe's cepstra, without ".mfc" / ".nr.mfc"
};

std::vector<Input> inputs() {
  std::vector<Input> out;
  const std::string ref = testing::data_dir() + "/sphinx_fe/";
  const AudioData gf = read_raw_s16le_file(testing::audio_dir() + "/goforward.raw", 16000);
  out.push_back({"goforward-padded", padded_goforward(gf.samples), ref + "goforward-padded"});
  for (const char* id : {"0870", "0880", "0890", "0920", "0930"}) {
    const std::string base = std::string("sense_and_sensibility_01_austen_64kb-") + id;
    out.push_back({base, read_wav_file(testing::audio_dir() + "/librivox/" + base + ".wav").samples,
                   ref + base});
  }
  return out;
}

TEST(RecognitionFrontEnd, DefaultsMatchSphinxFeNoiseAndSilenceRemoval) {
  if (!have_inputs()) GTEST_SKIP() << "pocketsphinx-testdata or pocketsphinx-en-us not installed";
  Recognizer rec(goforward_config());
  EXPECT_TRUE(rec.feature_options().noise.remove_noise);
  EXPECT_TRUE(rec.feature_options().noise.remove_silence);
  RecognizerConfig off_config = goforward_config();
  off_config.remove_noise = false;
  off_config.remove_silence = false;
  Recognizer off(off_config);
  const int dim = rec.feature_dim();
  for (const Input& in : inputs()) {
    SCOPED_TRACE(in.name);
    const int64_t n = static_cast<int64_t>(in.samples.size());
    for (bool on : {true, false}) {
      Recognizer& r = on ? rec : off;
      // generate.sh has no plain (both off) cepstra of the padded recording.
      const std::string file = in.reference + (on ? ".nr.mfc" : ".mfc");
      if (!on && !have_file(file)) continue;
      const FeatureMatrix cep = read_sphinx_mfc(file, 13);
      const std::vector<float> want = r.features_from_cepstra(cep.data.data(), cep.rows, cep.dim);
      const std::vector<float> got = r.compute_features(in.samples.data(), n);
      ASSERT_EQ(got.size() / dim, want.size() / dim) << (on ? "frames kept" : "frames");
      // 1e-3 on the cepstra (test_sphinx_noise), at most 4x that through
      // the second differences of the deltas.
      EXPECT_LE(max_abs_diff(got, want), 4e-3) << (on ? "noise and silence removal" : "both off");
      // audio_frame() numbers the frames kept in the audio: increasing,
      // and past the frames decoded where the VAD dropped some.
      const int64_t rows = cep.rows;
      const int64_t all = static_cast<int64_t>(off.compute_features(in.samples.data(), n).size()) / dim;
      r.compute_features(in.samples.data(), n);
      for (int64_t t = 1; t < rows; ++t) ASSERT_LT(r.audio_frame(t - 1), r.audio_frame(t)) << t;
      if (rows < all) {
        EXPECT_GT(r.audio_frame(rows - 1), rows - 1);
      } else {
        EXPECT_EQ(r.audio_frame(rows - 1), rows - 1);
      }
      if (in.name == "goforward-padded" && on) {
        EXPECT_LE(rows, all - 50) << "the VAD dropped (almost) nothing";
      }
    }
  }
}

// Cepstra handed in as such (gpuspeech-transcribe --mfc) get the stream's
// CMN rule too: with cmn_skip_negative_c0 the frames whose c0 is negative
// stay out of the mean, as on audio. Random cepstra, c0 of either sign.
TEST(RecognitionFrontEnd, CepstraInputFollowsTheCmnRule) {
  if (!have_inputs()) GTEST_SKIP() << "pocketsphinx-testdata or pocketsphinx-en-us not installed";
  RecognizerConfig rule_config = goforward_config();
  rule_config.cmn_skip_negative_c0 = true;
  Recognizer rule(rule_config);
  RecognizerConfig plain_config = goforward_config();
  plain_config.cmn_skip_negative_c0 = false;
  Recognizer plain(plain_config);
  ASSERT_TRUE(rule.feature_options().cmn_skips_negative_c0());
  ASSERT_FALSE(plain.feature_options().cmn_skips_negative_c0());
  const int dim = 13;
  const int64_t rows = 300;
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> c0(-40.0f, 20.0f), rest(-3.0f, 3.0f);
  std::vector<float> cep(static_cast<size_t>(rows * dim));
  for (int64_t t = 0; t < rows; ++t)
    for (int d = 0; d < dim; ++d) cep[static_cast<size_t>(t * dim + d)] = d == 0 ? c0(rng) : rest(rng);
  const std::vector<float> with_rule = rule.features_from_cepstra(cep.data(), rows, dim);
  const std::vector<float> without = plain.features_from_cepstra(cep.data(), rows, dim);
  // What the options say, applied here: the same numbers exactly.
  for (Recognizer* r : {&rule, &plain}) {
    FeatureMatrix want;
    want.rows = rows;
    want.dim = dim;
    want.data = cep;
    postprocess_utterance(r->feature_options(), want);
    EXPECT_EQ(want.data, r == &rule ? with_rule : without);
  }
  EXPECT_GT(max_abs_diff(with_rule, without), 1.0) << "the rule changed nothing";
}

// goforward after 2 s of faint noise: silence removal drops most of that
// noise, and the words' frames still count from the start of the recording,
// so they match the decoding that keeps every frame within a few frames
// (and lie 200 frames after those of goforward alone, within a few frames).
TEST(RecognitionFrontEnd, WordTimesStayOnTheAudioClock) {
  if (!have_inputs()) GTEST_SKIP() << "pocketsphinx-testdata or pocketsphinx-en-us not installed";
  const AudioData gf = read_raw_s16le_file(testing::audio_dir() + "/goforward.raw", 16000);
  std::vector<float> padded;
  FaintNoise().append(padded, 32000);
  padded.insert(padded.end(), gf.samples.begin(), gf.samples.end());
  const int64_t n = static_cast<int64_t>(padded.size());

  Recognizer rec(goforward_config());
  RecognizerConfig keep_config = goforward_config();
  keep_config.remove_silence = false;
  Recognizer keep(keep_config);
  const RecognitionResult dropped = rec.recognize(padded.data(), n);
  const RecognitionResult kept = keep.recognize(padded.data(), n);
  const RecognitionResult alone =
      keep.recognize(gf.samples.data(), static_cast<int64_t>(gf.samples.size()));
  ASSERT_FALSE(dropped.best.words.empty());
  EXPECT_LT(dropped.frames, kept.frames - 100) << "the leading noise was not dropped";
  ASSERT_EQ(dropped.text(), kept.text());
  ASSERT_EQ(dropped.text(), alone.text());
  for (size_t i = 0; i < dropped.best.words.size(); ++i) {
    const HypothesisWord& d = dropped.best.words[i];
    SCOPED_TRACE(d.text);
    EXPECT_NEAR(d.start_frame, kept.best.words[i].start_frame, 3);
    EXPECT_NEAR(d.end_frame, kept.best.words[i].end_frame, 3);
    EXPECT_NEAR(d.start_frame, alone.best.words[i].start_frame + 200, 3);
  }
}

}  // namespace
}  // namespace gpuspeech
