// Pronunciation dictionaries: Debian's cmudict-en-us.dict and noisedict
// (against counts taken from the file by a separate, simpler reading, and
// against the en-us acoustic model's phone set), the tidigits dictionary
// against its model, pocketsphinx-testdata's defective.dic, and the format's
// corners and errors on small texts.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/model/dictionary.h"
#include "common/model/mdef.h"
#include "common/model/model_error.h"
#include "test_backends.h"

namespace gpuspeech {
namespace {

std::string en_us_dict() { return testing::model_dir() + "/en-us/cmudict-en-us.dict"; }
std::string en_us_noisedict() { return testing::model_dir() + "/en-us/en-us/noisedict"; }
std::string en_us_mdef() { return testing::model_dir() + "/en-us/en-us/mdef"; }

std::vector<std::string> base_phones(const ModelDefinition& mdef) {
  std::vector<std::string> out;
  for (int i = 0; i < mdef.num_base_phones(); ++i) out.push_back(mdef.base_phone_name(i));
  return out;
}

// Expects `fn` to throw ModelError whose message contains every fragment.
template <typename Fn>
void expect_model_error(Fn fn, const std::vector<std::string>& fragments) {
  try {
    fn();
    ADD_FAILURE() << "no ModelError; expected one mentioning " << fragments[0];
  } catch (const ModelError& e) {
    const std::string msg = e.what();
    for (const std::string& f : fragments)
      EXPECT_NE(msg.find(f), std::string::npos) << "message: " << msg << "\nmissing: " << f;
  }
}

#if defined(__SANITIZE_ADDRESS__)
constexpr double kSlowdown = 8.0;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr double kSlowdown = 8.0;
#else
constexpr double kSlowdown = 1.0;
#endif
#else
constexpr double kSlowdown = 1.0;
#endif

TEST(Dictionary, EnUsLoadsFastWithTheFileCounts) {
  // Counts by a plain reading of the file: each non-comment line with a
  // word and phones is one pronunciation; "word(N)" lines are alternates.
  size_t prons = 0, alternates = 0;
  std::set<std::string> phones;
  for (const std::string& path : {en_us_dict(), en_us_noisedict()}) {
    std::ifstream in(path);
    ASSERT_TRUE(in) << path;
    std::string line, word, ph;
    while (std::getline(in, line)) {
      std::istringstream ls(line);
      if (!(ls >> word)) continue;
      ++prons;
      if (word.back() == ')' && word.find('(') != std::string::npos) ++alternates;
      while (ls >> ph) phones.insert(ph);
    }
  }
  // Processor time, not wall time: CI runs tests side by side on 2 cores.
  const auto t0 = std::chrono::steady_clock::now();
  const std::clock_t c0 = std::clock();
  const Dictionary d = Dictionary::load(en_us_dict(), en_us_noisedict());
  const double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("cmudict-en-us.dict + noisedict: %d words, %d pronunciations, %.3f s CPU "
              "(%.3f s wall)\n",
              d.num_words(), d.num_pronunciations(), cpu, wall);
  EXPECT_LT(cpu, 1.0 * kSlowdown);
  // The noise dictionary has <s>, </s> and <sil>: nothing is added.
  EXPECT_EQ(d.num_pronunciations(), static_cast<int>(prons));
  EXPECT_EQ(d.num_words(), static_cast<int>(prons - alternates));
  EXPECT_TRUE(d.warnings().empty());
  EXPECT_EQ(d.phone_names().size(), phones.size());

  const int hello = d.word_id("hello");
  ASSERT_NE(hello, Dictionary::kNoWord);
  EXPECT_EQ(d.word_id("hello(2)"), hello);
  ASSERT_EQ(d.pronunciations(hello).size(), 2u);
  EXPECT_EQ(d.phones(d.pronunciations(hello)[0]),
            (std::vector<std::string>{"HH", "AH", "L", "OW"}));
  EXPECT_EQ(d.phones(d.pronunciations(hello)[1]),
            (std::vector<std::string>{"HH", "EH", "L", "OW"}));
  EXPECT_EQ(d.pronunciation(d.pronunciations(hello)[1]).variant, "2");
  EXPECT_FALSE(d.is_filler(hello));
  EXPECT_EQ(d.word_id("Hello"), Dictionary::kNoWord);  // case-sensitive by default

  for (const char* w : {"[NOISE]", "[SPEECH]", "<sil>"}) {
    ASSERT_NE(d.word_id(w), Dictionary::kNoWord) << w;
    EXPECT_TRUE(d.is_filler(d.word_id(w))) << w;
  }
  for (const char* w : {"<s>", "</s>"}) {
    ASSERT_NE(d.word_id(w), Dictionary::kNoWord) << w;
    EXPECT_FALSE(d.is_filler(d.word_id(w))) << w;
  }
  EXPECT_EQ(d.phones(d.pronunciations(d.word_id("[NOISE]"))[0]),
            std::vector<std::string>{"+NSN+"});

  // Every phone is one the acoustic model has.
  const ModelDefinition mdef = ModelDefinition::load(en_us_mdef());
  EXPECT_NO_THROW(d.validate_phones(base_phones(mdef)));
}

TEST(Dictionary, MissingPhoneNamesFileLineWordAndPhone) {
  const Dictionary d = Dictionary::load(en_us_dict(), en_us_noisedict());
  const ModelDefinition mdef = ModelDefinition::load(en_us_mdef());
  std::vector<std::string> phones = base_phones(mdef);
  phones.erase(std::find(phones.begin(), phones.end(), "ZH"));
  // The first line using ZH, found independently.
  long first_line = 0;
  std::string first_word;
  size_t users = 0;
  {
    std::ifstream in(en_us_dict());
    std::string line;
    long n = 0;
    while (std::getline(in, line)) {
      ++n;
      std::istringstream ls(line);
      std::string w, ph;
      ls >> w;
      while (ls >> ph)
        if (ph == "ZH") {
          if (!first_line) {
            first_line = n;
            first_word = w;
          }
          ++users;
          break;
        }
    }
  }
  ASSERT_GT(first_line, 0);
  expect_model_error([&] { d.validate_phones(phones); },
                     {en_us_dict() + ":" + std::to_string(first_line) + ":",
                      "'" + first_word + "'", "'ZH'", std::to_string(users - 1) + " more"});
  // The callback form sees each distinct phone once.
  size_t asked = 0;
  d.validate_phones([&](const std::string&) {
    ++asked;
    return true;
  });
  EXPECT_EQ(asked, d.phone_names().size());
}

TEST(Dictionary, TidigitsDictionaryMatchesItsModel) {
  const std::string dir = testing::audio_dir() + "/tidigits";
  Dictionary d;
  d.add_file(dir + "/lm/tidigits.dic", false);
  d.add_sentence_markers("SIL");
  EXPECT_EQ(d.num_words(), 11 + 3);
  const ModelDefinition mdef = ModelDefinition::load(dir + "/hmm/mdef");
  EXPECT_NO_THROW(d.validate_phones(base_phones(mdef)));
  EXPECT_EQ(d.phones(d.pronunciations(d.word_id("six"))[0]),
            (std::vector<std::string>{"S_six", "I_six", "K_six", "S_six_2"}));
}

TEST(Dictionary, DefectiveDicFromTestdata) {
  // Lower-case phones that the (case-sensitive) en-us model lacks.
  const std::string path = testing::audio_dir() + "/defective.dic";
  Dictionary d;
  d.add_file(path, false);
  EXPECT_EQ(d.num_words(), 5);
  const ModelDefinition mdef = ModelDefinition::load(en_us_mdef());
  expect_model_error([&] { d.validate_phones(base_phones(mdef)); },
                     {path + ":1:", "'go'", "'g'", "does not have"});
  // pocketsphinx's -dictcase: compared without case, every phone exists.
  DictionaryOptions nocase;
  nocase.case_sensitive = false;
  Dictionary folded(nocase);
  folded.add_file(path, false);
  EXPECT_NO_THROW(folded.validate_phones(base_phones(mdef)));
  EXPECT_EQ(folded.word_id("FORWARD"), folded.word_id("forward"));
}

TEST(Dictionary, FormatCorners) {
  Dictionary d;
  d.add_text(
      ";;; a comment\n"
      "## another comment\n"
      "\n"
      "   \t  \n"
      "read\tR IY D\r\n"
      "read(2)  R EH D\n"
      "read(past) R EH D\n"
      "(paren  P ER EH N\n"
      "x    EH K S\n"
      "x()  EH K S\n"
      "  lead  L IY D  \n"
      "no;;comment N OW\n",
      "corners.dic", false);
  const int read = d.word_id("read");
  ASSERT_NE(read, Dictionary::kNoWord);
  EXPECT_EQ(d.pronunciations(read).size(), 3u);
  EXPECT_EQ(d.word_id("read(past)"), read);
  EXPECT_EQ(d.pronunciation(d.pronunciations(read)[2]).variant, "past");
  EXPECT_EQ(d.pronunciation(d.pronunciations(read)[1]).line, 6);
  EXPECT_EQ(d.phones(d.pronunciations(read)[0]), (std::vector<std::string>{"R", "IY", "D"}));
  // "(paren" is a word (no closing parenthesis); "x()" an alternate of x
  // (pocketsphinx's rule: last character ')' and a '(' after the first).
  EXPECT_NE(d.word_id("(paren"), Dictionary::kNoWord);
  EXPECT_EQ(d.pronunciations(d.word_id("x")).size(), 2u);
  EXPECT_NE(d.word_id("lead"), Dictionary::kNoWord);
  EXPECT_NE(d.word_id("no;;comment"), Dictionary::kNoWord);
  EXPECT_EQ(d.num_words(), 5);
  EXPECT_EQ(d.num_pronunciations(), 8);
  EXPECT_TRUE(d.warnings().empty());
}

TEST(Dictionary, Errors) {
  expect_model_error(
      [] {
        Dictionary d;
        d.add_text("a AH\nlonely\nb B IY\n", "nophones.dic", false);
      },
      {"nophones.dic:2:", "'lonely'", "no phones"});
  expect_model_error(
      [] {
        Dictionary d;
        d.add_text("a AH\nb(2) B IY\n", "orphan.dic", false);
      },
      {"orphan.dic:2:", "'b(2)'", "before its base word", "'b'"});
  expect_model_error([] { Dictionary::load("/nonexistent/dir/x.dict"); },
                     {"/nonexistent/dir/x.dict", "cannot read"});

  // Skipping as pocketsphinx does, with warnings naming the lines.
  DictionaryOptions lenient;
  lenient.skip_bad_entries = true;
  Dictionary d(lenient);
  d.add_text("a AH\nlonely\nb(2) B IY\nc S IY\na EY\n", "lenient.dic", false);
  EXPECT_EQ(d.num_words(), 2);
  ASSERT_EQ(d.warnings().size(), 3u);
  EXPECT_NE(d.warnings()[0].find("lenient.dic:2:"), std::string::npos);
  EXPECT_NE(d.warnings()[1].find("lenient.dic:3:"), std::string::npos);
  EXPECT_NE(d.warnings()[2].find("lenient.dic:5:"), std::string::npos);
  EXPECT_NE(d.warnings()[2].find("first definition is kept"), std::string::npos);
  EXPECT_EQ(d.phones(d.pronunciations(d.word_id("a"))[0]), std::vector<std::string>{"AH"});
}

TEST(Dictionary, DuplicatesKeepTheFirstAndFillerClasses) {
  Dictionary d;
  d.add_text("go G OW\ngo G AA\n", "main.dic", false);
  d.add_text("<s> SIL\n</s> SIL\n<sil> SIL\n[COUGH] +COUGH+\n++UM++ +UM+\n", "filler.dic", true);
  EXPECT_EQ(d.pronunciations(d.word_id("go")).size(), 1u);
  // The skipped line's phones are not the dictionary's.
  EXPECT_EQ(std::count(d.phone_names().begin(), d.phone_names().end(), "AA"), 0);
  EXPECT_NO_THROW(d.validate_phones(std::vector<std::string>{"G", "OW", "SIL", "+COUGH+", "+UM+"}));
  ASSERT_EQ(d.warnings().size(), 1u);
  EXPECT_NE(d.warnings()[0].find("main.dic:2:"), std::string::npos);
  EXPECT_NE(d.warnings()[0].find("main.dic:1"), std::string::npos);
  EXPECT_FALSE(d.is_filler(d.word_id("<s>")));
  EXPECT_FALSE(d.is_filler(d.word_id("</s>")));
  EXPECT_TRUE(d.is_filler(d.word_id("<sil>")));
  EXPECT_TRUE(d.is_filler(d.word_id("[COUGH]")));
  EXPECT_TRUE(d.is_filler(d.word_id("++UM++")));
  EXPECT_FALSE(d.is_filler(d.word_id("go")));

  // Markers added only where missing; <sil> a filler.
  Dictionary e;
  e.add_text("hi HH AY\n", "e.dic", false);
  e.add_sentence_markers("SIL");
  EXPECT_EQ(e.num_words(), 4);
  EXPECT_TRUE(e.is_filler(e.word_id("<sil>")));
  EXPECT_FALSE(e.is_filler(e.word_id("<s>")));
  e.add_sentence_markers("SIL");
  EXPECT_EQ(e.num_words(), 4);

  // Code-added entries.
  const int p = e.add_pronunciation("hi(2)", {"HH", "EY"}, false);
  EXPECT_EQ(e.pronunciation(p).word, e.word_id("hi"));
  EXPECT_THROW(e.add_pronunciation("bad", {}, false), std::invalid_argument);
  EXPECT_THROW(e.add_pronunciation("bad", {"A B"}, false), std::invalid_argument);
}

TEST(Dictionary, AlternateBeforeBaseIsAnErrorWithItsLine) {
  expect_model_error(
      [] {
        Dictionary d;
        d.add_text("x()  EH K S\nx    EH K S\n", "early.dic", false);
      },
      {"early.dic:1:", "'x()'", "before its base word 'x'"});
}

}  // namespace
}  // namespace gpuspeech
