// Cue grouping and SRT / WebVTT text (common/output/subtitle_format.h): exact
// output for hand-made word lists, the limits, and that cutting a growing
// word list piece by piece gives the cues of cutting it whole.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "common/output/subtitle_format.h"

namespace gpuspeech {
namespace {

constexpr int64_t kMs = 1'000'000;

std::vector<TimedWord> words(std::initializer_list<std::tuple<const char*, int64_t, int64_t>> w) {
  std::vector<TimedWord> out;
  for (const auto& [t, s, e] : w) out.push_back({t, s * kMs, e * kMs});
  return out;
}

TEST(SubtitleFormat, Timestamps) {
  EXPECT_EQ(srt_timestamp(0), "00:00:00,000");
  EXPECT_EQ(srt_timestamp(1234 * kMs + 999'999), "00:00:01,234");
  EXPECT_EQ(webvtt_timestamp((3600 + 62) * 1000 * kMs + 5 * kMs), "01:01:02.005");
  EXPECT_EQ(srt_timestamp(int64_t{100} * 3600 * 1000 * kMs), "100:00:00,000");
  EXPECT_EQ(srt_timestamp(-5), "00:00:00,000");
}

TEST(SubtitleFormat, SrtAndWebvttBlocks) {
  Cue c;
  c.start_ns = 1500 * kMs;
  c.end_ns = 2750 * kMs;
  c.text = "go forward\nten meters";
  EXPECT_EQ(srt_cue(3, c), "3\n00:00:01,500 --> 00:00:02,750\ngo forward\nten meters\n\n");
  EXPECT_EQ(webvtt_header(), "WEBVTT\n\n");
  EXPECT_EQ(webvtt_cue(c), "00:00:01.500 --> 00:00:02.750\ngo forward\nten meters\n\n");
  c.text = "a<b> & c\n\n";
  EXPECT_EQ(webvtt_cue(c), "00:00:01.500 --> 00:00:02.750\na&lt;b&gt; &amp; c\n\n");
  EXPECT_EQ(srt_cue(1, c), "1\n00:00:01,500 --> 00:00:02,750\na<b> & c\n\n");
}

TEST(SubtitleFormat, GroupsByGapCharsAndDuration) {
  CueOptions o;
  o.max_chars = 20;
  o.max_duration_ns = 3000 * kMs;
  o.max_gap_ns = 500 * kMs;
  o.line_chars = 0;
  // "go forward ten" fits 20 chars; "meters" would make 21 -> new cue;
  // 900 ms of silence before "stop" -> new cue; "and then" after 2.8 s
  // of cue would pass 3 s -> new cue.
  const auto w = words({{"go", 0, 200},
                        {"forward", 200, 600},
                        {"ten", 600, 900},
                        {"meters", 900, 1300},
                        {"stop", 2200, 2500},
                        {"now", 2500, 4900},
                        {"and", 5100, 5300}});
  const std::vector<Cue> cues = complete_cues(w, 0, false, o);
  ASSERT_EQ(cues.size(), 4u);
  EXPECT_EQ(cues[0].text, "go forward ten");
  EXPECT_EQ(cues[0].start_ns, 0);
  EXPECT_EQ(cues[0].end_ns, 900 * kMs);
  EXPECT_EQ(cues[1].text, "meters");
  EXPECT_EQ(cues[2].text, "stop now");
  EXPECT_EQ(cues[2].end_ns, 4900 * kMs);
  EXPECT_EQ(cues[3].text, "and");
  EXPECT_EQ(cues[3].first_word, 6u);
  EXPECT_EQ(cues[3].num_words, 1u);
  // With more words to come, the last cue is held back.
  EXPECT_EQ(complete_cues(w, 0, true, o).size(), 3u);
  EXPECT_EQ(complete_cues(w, 4, true, o).size(), 1u);
}

TEST(SubtitleFormat, LongWordGetsItsOwnCueAndLinesBreakNearTheMiddle) {
  CueOptions o;
  o.max_chars = 10;
  o.line_chars = 0;
  const auto w = words({{"supercalifragilistic", 0, 900}, {"yes", 900, 1000}});
  const auto cues = complete_cues(w, 0, false, o);
  ASSERT_EQ(cues.size(), 2u);
  EXPECT_EQ(cues[0].text, "supercalifragilistic");
  CueOptions lines;
  lines.line_chars = 10;
  const auto w2 = words({{"one", 0, 1}, {"two", 1, 2}, {"three", 2, 3}, {"four", 3, 4}});
  EXPECT_EQ(complete_cues(w2, 0, false, lines)[0].text, "one two\nthree four");
}

TEST(SubtitleFormat, OverlappingWordsGiveMonotonicCues) {
  CueOptions o;
  o.max_chars = 3;
  const auto w = words({{"a", 0, 500}, {"b", 400, 800}, {"c", 700, 900}});
  const auto cues = complete_cues(w, 0, false, o);
  ASSERT_EQ(cues.size(), 2u);  // "a b" fits 3 chars, "c" does not
  EXPECT_GE(cues[1].start_ns, cues[0].end_ns);
  EXPECT_GE(cues[1].end_ns, cues[1].start_ns);
}

TEST(SubtitleFormat, IncrementalEqualsWhole) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> len(1, 12), dur(50, 900), gap(0, 1500);
  CueOptions o;
  o.max_chars = 30;
  o.max_duration_ns = 2500 * kMs;
  o.max_gap_ns = 700 * kMs;
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<TimedWord> w;
    int64_t t = 0;
    for (int i = 0; i < 60; ++i) {
      t += gap(rng) * kMs / 4;
      const int64_t e = t + dur(rng) * kMs;
      w.push_back({std::string(len(rng), 'a' + i % 26), t, e});
      t = e;
    }
    const auto whole = complete_cues(w, 0, false, o);
    // Grow the list a few words at a time, emitting complete cues.
    std::vector<Cue> pieces;
    size_t next = 0;
    for (size_t n = 1; n <= w.size(); n += 1 + trial % 5) {
      const std::vector<TimedWord> prefix(w.begin(), w.begin() + n);
      for (Cue& c : complete_cues(prefix, next, true, o)) {
        next = c.first_word + c.num_words;
        pieces.push_back(c);
      }
    }
    for (Cue& c : complete_cues(w, next, false, o)) pieces.push_back(c);
    ASSERT_EQ(pieces.size(), whole.size());
    for (size_t k = 0; k < whole.size(); ++k) {
      EXPECT_EQ(pieces[k].text, whole[k].text);
      EXPECT_EQ(pieces[k].start_ns, whole[k].start_ns);
      EXPECT_EQ(pieces[k].end_ns, whole[k].end_ns);
      if (k > 0) {
        EXPECT_GE(whole[k].start_ns, whole[k - 1].end_ns);
      }
    }
  }
}

TEST(SubtitleFormat, BadOptionsAreRefused) {
  CueOptions o;
  o.max_chars = 0;
  EXPECT_THROW(complete_cues({}, 0, false, o), std::invalid_argument);
}

}  // namespace
}  // namespace gpuspeech
