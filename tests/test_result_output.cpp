// The parts of gpudecoder's output that live in common/: the JSON line of a
// final result (result_json.h) and the endpointing rule (endpointing.h).
#include <gtest/gtest.h>

#include <clocale>
#include <cmath>
#include <limits>
#include <string>

#include "common/engine/adaptive_redecoder.h"
#include "common/engine/endpointing.h"
#include "common/output/result_json.h"

namespace gpuspeech {
namespace {

HypothesisWord word(const std::string& text, int32_t start, int32_t end, float confidence) {
  HypothesisWord w;
  w.text = text;
  w.start_frame = start;
  w.end_frame = end;
  w.confidence = confidence;
  return w;
}

TEST(ResultJson, WritesWordsTimesAndEscapes) {
  RecognitionResult r;
  r.best.words = {word("go", 10, 29, 0.75f), word("say \"hi\"\\\n", 30, 59, 1.0f)};
  r.best.confidence = 0.5f;
  ResultJsonOptions o;
  o.utterance = 3;
  o.frames = 80;
  o.reason = "silence";
  // 100 frames a second, the utterance starting at 2 s.
  const std::string j = result_json(r, o, [](int64_t f) { return 2.0 + f / 100.0; });
  EXPECT_EQ(j,
            "{\"utterance\":3,\"start\":2,\"end\":2.8,\"reason\":\"silence\","
            "\"hypothesis\":\"go say \\\"hi\\\"\\\\\\u000a\",\"confidence\":0.5,\"words\":["
            "{\"word\":\"go\",\"start\":2.1,\"end\":2.3,\"confidence\":0.75},"
            "{\"word\":\"say \\\"hi\\\"\\\\\\u000a\",\"start\":2.3,\"end\":2.6,\"confidence\":1}]}\n");
}

TEST(ResultJson, NbestOnlyWhenAskedAndNonFiniteAsNull) {
  RecognitionResult r;
  r.best.words = {word("yes", 0, 9, 1.0f)};
  r.best.confidence = std::numeric_limits<float>::quiet_NaN();
  Hypothesis second;
  second.words = {word("no", 0, 9, 1.0f)};
  second.confidence = 0.25f;
  second.cost = 1234.5678f;
  r.nbest = {r.best, second};
  ResultJsonOptions o;
  o.frames = 10;
  o.reason = "eos";
  auto sec = [](int64_t f) { return f / 100.0; };
  const std::string plain = result_json(r, o, sec);
  EXPECT_EQ(plain.find("nbest"), std::string::npos);
  EXPECT_NE(plain.find("\"confidence\":null"), std::string::npos) << plain;
  o.with_nbest = true;
  const std::string with = result_json(r, o, sec);
  EXPECT_NE(with.find(",\"nbest\":[{\"hypothesis\":\"yes\",\"confidence\":null,"), std::string::npos)
      << with;
  EXPECT_NE(with.find("{\"hypothesis\":\"no\",\"confidence\":0.25,\"cost\":1234.57}]}"),
            std::string::npos)
      << with;
}

// A decimal comma would make the line invalid JSON.
TEST(ResultJson, NumbersIgnoreTheLocale) {
  const char* locales[] = {"de_DE.UTF-8", "fr_FR.UTF-8", "de_DE", "C.UTF-8"};
  const std::string old = std::setlocale(LC_NUMERIC, nullptr);
  bool comma = false;
  for (const char* l : locales)
    if (std::setlocale(LC_NUMERIC, l) != nullptr && std::string(std::localeconv()->decimal_point) == ",") {
      comma = true;
      break;
    }
  std::string out;
  append_json_number(out, 2.5);
  std::setlocale(LC_NUMERIC, old.c_str());
  EXPECT_EQ(out, "2.5") << (comma ? "under a decimal-comma locale" : "in the C locale (no decimal-comma locale installed)");
}

Hypothesis partial(int words, int32_t trailing_silence) {
  Hypothesis h;
  for (int i = 0; i < words; ++i) h.words.push_back(word("w", i, i, 1.0f));
  h.trailing_silence_frames = trailing_silence;
  return h;
}

TEST(Endpointing, FinalAfterWordsAndSilence) {
  EXPECT_EQ(decide_endpoint(50, 300, partial(2, 49)), EndpointDecision::kNone);
  EXPECT_EQ(decide_endpoint(50, 300, partial(2, 50)), EndpointDecision::kFinal);
  // Inside a word (no trailing silence) an utterance is never cut, however long.
  EXPECT_EQ(decide_endpoint(50, 100000, partial(1, 0)), EndpointDecision::kNone);
}

TEST(Endpointing, TheDetectorEndsAndDropsUtterances) {
  VoiceActivity speaking;  // the detector hears speech: the search's rules
  EXPECT_EQ(decide_endpoint(50, 300, partial(2, 49), &speaking), EndpointDecision::kNone);
  EXPECT_EQ(decide_endpoint(50, 300, partial(2, 50), &speaking), EndpointDecision::kFinal);
  // Speech heard in the utterance ended E frames ago: final, even inside a
  // "word" the search hears in the noise; without a word, the search's
  // rules.
  VoiceActivity ended;
  ended.silence_frames = 49;
  EXPECT_EQ(decide_endpoint(50, 300, partial(2, 0), &ended), EndpointDecision::kNone);
  ended.silence_frames = 50;
  EXPECT_EQ(decide_endpoint(50, 300, partial(2, 0), &ended), EndpointDecision::kFinal);
  EXPECT_EQ(decide_endpoint(50, 300, partial(0, 0), &ended), EndpointDecision::kNone);
  // No speech heard in the whole utterance: dropped once it is long
  // enough, words or not.
  VoiceActivity silent;
  silent.silent_throughout = true;
  EXPECT_EQ(decide_endpoint(50, kVadSilentDropFrames - 1, partial(1, 0), &silent),
            EndpointDecision::kNone);
  EXPECT_EQ(decide_endpoint(50, kVadSilentDropFrames, partial(1, 0), &silent),
            EndpointDecision::kDrop);
  // Endpointing off: nothing ends.
  EXPECT_EQ(decide_endpoint(0, 300, partial(2, 0), &ended), EndpointDecision::kNone);
  EXPECT_EQ(decide_endpoint(0, 300, partial(2, 0), &silent), EndpointDecision::kNone);
}

// The last words whose middle lies in the detector's silence (past its
// grace) go; a word that only runs into it stays, and so does one begun in
// the speech that the search stretched into the pause; kNoSilence keeps
// everything.
TEST(Endpointing, WordsInTheDetectorsSilenceAreLeftOut) {
  auto hyp = [] {
    Hypothesis h;
    h.words = {word("the", 0, 19, 1.0f), word("sun", 20, 59, 1.0f), word("off", 56, 90, 1.0f)};
    h.stable_words = 3;
    return h;
  };
  ASSERT_EQ(kSilenceGraceFrames, 10);
  ASSERT_EQ(kSpeechBeganFrames, 30);
  Hypothesis h = hyp();
  EXPECT_EQ(drop_words_from(h, 60), 1u);  // "off": middle 73, began 56
  ASSERT_EQ(h.words.size(), 2u);
  EXPECT_EQ(h.words.back().text, "sun");
  EXPECT_EQ(h.stable_words, 2);
  h = hyp();
  EXPECT_EQ(drop_words_from(h, 64), 0u) << "the middle of \"off\" (73) is within the grace";
  h = hyp();
  EXPECT_EQ(drop_words_from(h, 25), 2u) << "\"sun\" (middle 39.5, began 20) too";
  h = hyp();
  EXPECT_EQ(drop_words_from(h, -10), 3u);
  h = hyp();
  EXPECT_EQ(drop_words_from(h, kNoSilence), 0u);
  EXPECT_EQ(h.words.size(), 3u);
  // A last word begun in the speech, stretched far into the pause: kept
  // while it began 30 frames or more before the silence, else dropped.
  Hypothesis stretched;
  stretched.words = {word("the", 0, 19, 1.0f), word("lake", 20, 140, 1.0f)};
  stretched.stable_words = 2;
  EXPECT_EQ(drop_words_from(stretched, 51), 0u);
  EXPECT_EQ(drop_words_from(stretched, 50), 0u);
  EXPECT_EQ(drop_words_from(stretched, 49), 1u);
  EXPECT_EQ(stretched.words.back().text, "the");
}

// The first words whose middle lies before the detector's speech go; a
// word that only starts before it stays; 0 keeps everything.
TEST(Endpointing, WordsBeforeTheDetectorsSpeechAreLeftOut) {
  auto hyp = [] {
    Hypothesis h;
    h.words = {word("up", 0, 41, 1.0f), word("the", 62, 74, 1.0f), word("sun", 75, 110, 1.0f)};
    h.stable_words = 2;
    return h;
  };
  Hypothesis h = hyp();
  EXPECT_EQ(drop_words_before(h, 40), 1u);  // "up": middle 20.5
  ASSERT_EQ(h.words.size(), 2u);
  EXPECT_EQ(h.words.front().text, "the");
  EXPECT_EQ(h.stable_words, 1);
  h = hyp();
  EXPECT_EQ(drop_words_before(h, 20), 0u) << "the middle of \"up\" (20.5) is after the speech's start";
  h = hyp();
  EXPECT_EQ(drop_words_before(h, 69), 2u) << "\"the\" (middle 68) too";
  h = hyp();
  EXPECT_EQ(drop_words_before(h, 0), 0u);
  EXPECT_EQ(drop_words_before(h, 1000), 3u);
  EXPECT_TRUE(h.words.empty());
  EXPECT_EQ(h.stable_words, 0);
}

TEST(Endpointing, DropsSilenceWithoutWords) {
  const int64_t e = 50;
  EXPECT_EQ(decide_endpoint(e, 100, partial(0, kNoWordSilenceFactor * e - 1)),
            EndpointDecision::kNone);
  EXPECT_EQ(decide_endpoint(e, 100, partial(0, kNoWordSilenceFactor * e)), EndpointDecision::kDrop);
  // No word after the limit, whatever the path is in.
  EXPECT_EQ(decide_endpoint(e, kNoWordLimitFactor * e - 1, partial(0, 0)), EndpointDecision::kNone);
  EXPECT_EQ(decide_endpoint(e, kNoWordLimitFactor * e, partial(0, 0)), EndpointDecision::kDrop);
}

TEST(Endpointing, OffWhenZero) {
  EXPECT_EQ(decide_endpoint(0, 1000000, partial(0, 1000000)), EndpointDecision::kNone);
  EXPECT_EQ(decide_endpoint(0, 1000, partial(3, 1000)), EndpointDecision::kNone);
}

}  // namespace
}  // namespace gpuspeech
