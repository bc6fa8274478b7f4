// Kaldi spk2utt parsing (common/fmllr/spk2utt.h): good files, and each malformed
// case naming the file and line.
#include <gtest/gtest.h>

#include <string>

#include "common/fmllr/spk2utt.h"

namespace gpuspeech {
namespace {

TEST(Spk2Utt, ParsesSpeakersInOrder) {
  const SpeakerMap m = parse_spk2utt("b u3\tu1\r\n\n   \na u2 u4 \n", "s.txt");
  ASSERT_EQ(m.speakers.size(), 2u);
  EXPECT_EQ(m.speakers[0], "b");
  EXPECT_EQ(m.speakers[1], "a");
  EXPECT_EQ(m.utterances[0], (std::vector<std::string>{"u3", "u1"}));
  EXPECT_EQ(m.utterances[1], (std::vector<std::string>{"u2", "u4"}));
  EXPECT_EQ(m.speaker_lines, (std::vector<int>{1, 4}));
  EXPECT_EQ(m.speaker_of("u4"), 1);
  EXPECT_EQ(m.speaker_of("u1"), 0);
  EXPECT_EQ(m.speaker_of("u9"), -1);
  EXPECT_EQ(m.utterance_line("u2"), 4);
  EXPECT_EQ(m.utterance_line("u9"), 0);
  EXPECT_TRUE(parse_spk2utt("", "empty").speakers.empty());
  EXPECT_EQ(parse_spk2utt("s u", "no-newline").utterances[0].size(), 1u);
}

std::string error_of(const std::string& text) {
  try {
    parse_spk2utt(text, "spk2utt");
  } catch (const Spk2UttError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Spk2Utt, MalformedLinesNameFileAndLine) {
  EXPECT_EQ(error_of("a u1\nb\n"),
            "spk2utt:2: speaker 'b' has no utterances (expected \"speaker utt1 utt2 ...\")");
  EXPECT_EQ(error_of("a u1\nb u2\na u3\n"), "spk2utt:3: speaker 'a' already has a line (line 1)");
  EXPECT_EQ(error_of("a u1 u2\nb u3 u1\n"),
            "spk2utt:2: utterance 'u1' is listed twice (also on line 1, speaker 'a')");
  EXPECT_EQ(error_of("a u1 u1\n"),
            "spk2utt:1: utterance 'u1' is listed twice (also on line 1, speaker 'a')");
  EXPECT_NE(error_of("x/y u1\n").find("spk2utt:1: speaker id 'x/y' cannot name"), std::string::npos);
  EXPECT_NE(error_of("a u1\n.. u2\n").find("spk2utt:2: speaker id '..'"), std::string::npos);
  EXPECT_NE(error_of("a u1\n\nb u\x01\n").find("spk2utt:3: control character 0x01"),
            std::string::npos);
  EXPECT_NE(error_of(std::string("a u1\0 u2\n", 10)).find("spk2utt:1: control character 0x00"),
            std::string::npos);
}

TEST(Spk2Utt, MissingFileIsAnError) {
  try {
    read_spk2utt("/nonexistent/spk2utt");
    FAIL() << "no error";
  } catch (const Spk2UttError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/spk2utt: cannot open"), std::string::npos);
  }
}

}  // namespace
}  // namespace gpuspeech
