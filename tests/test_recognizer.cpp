// The recognition engine end to end (suite 'reference'), against
// pocketsphinx-testdata's own transcriptions with the installed en-us
// model: goforward.raw with goforward.gram, the five cards WAVs with
// cards.gram. Also the engine's streaming API (pushing in pieces gives the
// one-shot result; partial results grow) and its errors. Every search
// backend usable here is run; all must give the same words.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/features/feature_pipeline.h"
#include "common/engine/recognizer.h"
#include "common/features/wav_reader.h"
#include "tests/test_backends.h"

namespace gpuspeech {
namespace {

std::string en_us_root() { return testing::model_dir() + "/en-us"; }

RecognizerConfig grammar_config(GrammarKind kind, const std::string& grammar,
                                const std::string& search = "cpu") {
  RecognizerConfig c = RecognizerConfig::en_us_defaults(en_us_root());
  c.grammar_kind = kind;
  c.grammar = grammar;
  c.scoring_backend = "cpu";
  c.search_backend = search;
  c.cache_dir = "-";  // compile afresh: the test checks the compiler too
  return c;
}

std::vector<std::string> search_backends() {
  std::vector<std::string> out = {"cpu"};
  for (const std::string& b : testing::backends_under_test())
    if (b == "cuda") out.push_back("cuda");
  return out;
}

bool have_file(const std::string& path) { return std::ifstream(path).good(); }

// "<s> ten of clubs  </s> (001)" -> {"001", "ten of clubs"}
std::vector<std::pair<std::string, std::string>> read_transcriptions(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::pair<std::string, std::string>> out;
  std::string line;
  while (std::getline(in, line)) {
    const size_t open = line.rfind('(');
    const size_t close = line.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open) continue;
    const std::string id = line.substr(open + 1, close - open - 1);
    std::istringstream words(line.substr(0, open));
    std::string w, text;
    while (words >> w) {
      if (w == "<s>" || w == "</s>") continue;
      text += (text.empty() ? "" : " ") + w;
    }
    out.emplace_back(id, text);
  }
  return out;
}

TEST(Recognizer, GoForwardWithItsGrammar) {
  const std::string raw = testing::audio_dir() + "/goforward.raw";
  const std::string gram = testing::audio_dir() + "/goforward.gram";
  if (!have_file(raw) || !have_file(gram) || !have_file(en_us_root() + "/en-us/mdef"))
    GTEST_SKIP() << "pocketsphinx-testdata or pocketsphinx-en-us not installed";
  const AudioData audio = read_raw_s16le_file(raw, 16000);
  for (const std::string& search : search_backends()) {
    std::string log;
    Recognizer rec(grammar_config(GrammarKind::kJsgf, gram, search), &log);
    const RecognitionResult r =
        rec.recognize(audio.samples.data(), static_cast<int64_t>(audio.samples.size()));
    EXPECT_EQ(r.text(), "go forward ten meters") << search << "\n" << log;
    EXPECT_TRUE(r.best.final_state) << search;
    EXPECT_TRUE(r.final);
    // Word times are ordered, inside the utterance, and not all crammed in.
    int prev_end = -1;
    for (const HypothesisWord& w : r.best.words) {
      EXPECT_GT(w.start_frame, prev_end) << w.text;
      EXPECT_GE(w.end_frame, w.start_frame + 4) << w.text;  // >= 5 frames a word
      prev_end = w.end_frame;
    }
    EXPECT_LT(prev_end, r.frames);
  }
}

TEST(Recognizer, CardsWithTheirGrammar) {
  const std::string dir = testing::audio_dir() + "/cards";
  if (!have_file(dir + "/cards.gram") || !have_file(en_us_root() + "/en-us/mdef"))
    GTEST_SKIP() << "pocketsphinx-testdata or pocketsphinx-en-us not installed";
  const auto expected = read_transcriptions(dir + "/cards.transcription");
  ASSERT_EQ(expected.size(), 5u);
  for (const std::string& search : search_backends()) {
    Recognizer rec(grammar_config(GrammarKind::kJsgf, dir + "/cards.gram", search));
    for (const auto& [id, text] : expected) {
      const AudioData audio = read_wav_file(dir + "/" + id + ".wav");
      const RecognitionResult r =
          rec.recognize(audio.samples.data(), static_cast<int64_t>(audio.samples.size()));
      EXPECT_EQ(r.text(), text) << "cards/" << id << ".wav, search " << search;
    }
  }
}

TEST(Recognizer, StreamingGivesTheOneShotResult) {
  const std::string raw = testing::audio_dir() + "/goforward.raw";
  const std::string gram = testing::audio_dir() + "/goforward.fsg";
  if (!have_file(raw) || !have_file(gram) || !have_file(en_us_root() + "/en-us/mdef"))
    GTEST_SKIP() << "pocketsphinx-testdata or pocketsphinx-en-us not installed";
  RecognizerConfig c = grammar_config(GrammarKind::kFsg, gram);
  c.nbest = 3;
  Recognizer rec(c);
  const AudioData audio = read_raw_s16le_file(raw, 16000);
  const FeatureMatrix feats = compute_features(rec.feature_options(), rec.scoring_backend(),
                                               audio.samples.data(),
                                               static_cast<int64_t>(audio.samples.size()));
  ASSERT_EQ(feats.dim, rec.feature_dim());
  rec.reset();
  rec.push_features(feats.data.data(), feats.rows);
  const RecognitionResult whole = rec.finish();
  EXPECT_THROW(rec.push_features(feats.data.data(), 1), std::logic_error);
  ASSERT_FALSE(whole.best.words.empty());
  ASSERT_FALSE(whole.nbest.empty());
  EXPECT_EQ(whole.nbest[0].text(), whole.text());

  rec.reset();
  size_t words_seen = 0;
  int stable_seen = 0;
  for (int64_t f = 0; f < feats.rows; f += 37) {
    const int64_t n = std::min<int64_t>(37, feats.rows - f);
    rec.push_features(feats.row(f), n);
    const RecognitionResult p = rec.partial();
    EXPECT_FALSE(p.final);
    EXPECT_EQ(p.frames, f + n);
    EXPECT_LE(p.best.stable_words, static_cast<int32_t>(p.best.words.size()));
    // Stable words never change once stable.
    EXPECT_GE(p.best.stable_words, stable_seen);
    stable_seen = std::max(stable_seen, p.best.stable_words);
    words_seen = std::max(words_seen, p.best.words.size());
  }
  const RecognitionResult pieces = rec.finish();
  EXPECT_EQ(pieces.text(), whole.text());
  EXPECT_EQ(pieces.best.cost, whole.best.cost);
  EXPECT_GT(words_seen, 0u);
  EXPECT_GT(stable_seen, 0);
}

// Word confidences (token_passing.h) in final results: in (0, 1], high on
// the clean cards recordings, and lower somewhere once goforward.raw is
// buried in white noise (fixed LCG, several levels: at least one level
// must leave the search a close alternative). Partial results carry them
// too, and on clean audio trailing_silence_frames is 0 in the middle of
// each final word.
TEST(Recognizer, WordConfidencesAndTrailingSilence) {
  const std::string dir = testing::audio_dir() + "/cards";
  const std::string raw = testing::audio_dir() + "/goforward.raw";
  if (!have_file(dir + "/cards.gram") || !have_file(raw) || !have_file(en_us_root() + "/en-us/mdef"))
    GTEST_SKIP() << "pocketsphinx-testdata or pocketsphinx-en-us not installed";
  for (const std::string& search : search_backends()) {
    Recognizer rec(grammar_config(GrammarKind::kJsgf, dir + "/cards.gram", search));
    int words = 0, high = 0;
    for (int i = 1; i <= 5; ++i) {
      const AudioData audio = read_wav_file(dir + "/00" + std::to_string(i) + ".wav");
      const RecognitionResult r =
          rec.recognize(audio.samples.data(), static_cast<int64_t>(audio.samples.size()));
      EXPECT_GT(r.best.confidence, 0.0f);
      EXPECT_LE(r.best.confidence, 1.0f);
      for (const HypothesisWord& w : r.best.words) {
        EXPECT_GT(w.confidence, 0.0f) << w.text;
        EXPECT_LE(w.confidence, 1.0f) << w.text;
        ++words;
        if (w.confidence >= 0.9f) ++high;
      }
    }
    EXPECT_GE(words, 15);
    EXPECT_GE(high * 10, words * 9) << "clean words with confidence >= 0.9, search " << search;
  }

  RecognizerConfig c = grammar_config(GrammarKind::kJsgf, testing::audio_dir() + "/goforward.gram");
  Recognizer rec(c);
  const AudioData clean = read_raw_s16le_file(raw, 16000);
  float lowest = 1.0f;
  for (int amplitude : {0, 1200, 1700, 2400}) {  // 0: clean
    std::vector<float> noisy(clean.samples.begin(), clean.samples.end());
    uint32_t x = 2024;
    for (float& v : noisy) {
      x = x * 1664525u + 1013904223u;
      v += static_cast<float>(amplitude) * (static_cast<float>(x >> 8) / 8388608.0f - 1.0f);
    }
    const FeatureMatrix f = compute_features(rec.feature_options(), rec.scoring_backend(),
                                             noisy.data(), static_cast<int64_t>(noisy.size()));
    rec.reset();
    int64_t done = 0;
    std::vector<std::pair<int64_t, int32_t>> partials;  // (frames, trailing silence)
    while (done < f.rows) {
      const int64_t n = std::min<int64_t>(10, f.rows - done);
      rec.push_features(f.row(done), n);
      done += n;
      const RecognitionResult p = rec.partial();
      for (const HypothesisWord& w : p.best.words) {
        EXPECT_GT(w.confidence, 0.0f);
        EXPECT_LE(w.confidence, 1.0f);
      }
      partials.emplace_back(done, p.best.trailing_silence_frames);
    }
    const RecognitionResult r = rec.finish();
    for (const HypothesisWord& w : r.best.words) {
      EXPECT_GT(w.confidence, 0.0f);
      if (amplitude > 0) lowest = std::min(lowest, w.confidence);
      // In noise a partial's path may differ from the final one; on clean
      // audio it is the final path's in the middle of a word.
      if (amplitude > 0) continue;
      EXPECT_GE(w.confidence, 0.9f) << w.text;
      for (const auto& [frames, silence] : partials)
        if (frames - 1 >= w.start_frame + 5 && frames - 1 <= w.end_frame - 5) {
          EXPECT_EQ(silence, 0) << "inside '" << w.text << "' at frame " << frames;
        }
    }
  }
  EXPECT_LT(lowest, 0.95f) << "no word lost confidence in noise";
  EXPECT_GT(lowest, 0.0f);
}

TEST(Recognizer, ErrorsNameTheFile) {
  if (!have_file(en_us_root() + "/en-us/mdef")) GTEST_SKIP() << "pocketsphinx-en-us not installed";
  auto message_of = [](const RecognizerConfig& c) {
    try {
      Recognizer r(c);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  // A grammar word the dictionary lacks.
  const std::string gram = ::testing::TempDir() + "/gpuspeech-missing-word.gram";
  {
    std::ofstream out(gram);
    out << "#JSGF V1.0;\ngrammar g;\npublic <x> = go qwxzzy forward;\n";
  }
  std::string msg = message_of(grammar_config(GrammarKind::kJsgf, gram));
  EXPECT_NE(msg.find("qwxzzy"), std::string::npos) << msg;
  EXPECT_NE(msg.find(gram), std::string::npos) << msg;
  std::remove(gram.c_str());
  // A missing model directory.
  RecognizerConfig c = grammar_config(GrammarKind::kJsgf, testing::audio_dir() + "/goforward.gram");
  c.model_dir = "/nonexistent/model";
  msg = message_of(c);
  EXPECT_NE(msg.find("/nonexistent/model"), std::string::npos) << msg;
  // A missing grammar file.
  msg = message_of(grammar_config(GrammarKind::kFsg, "/nonexistent/g.fsg"));
  EXPECT_NE(msg.find("/nonexistent/g.fsg"), std::string::npos) << msg;
  // A bad search backend name.
  c = grammar_config(GrammarKind::kJsgf, testing::audio_dir() + "/goforward.gram", "gpu");
  msg = message_of(c);
  EXPECT_NE(msg.find("gpu"), std::string::npos) << msg;
}

}  // namespace
}  // namespace gpuspeech
