// The graph cache's n-gram image (common/search/ngram_image.h): a model
// written and read back is the same model, value for value and byte for
// byte; anything but an intact image is an error naming the file.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/model/arpa_lm.h"
#include "common/model/ngram_model.h"
#include "common/search/ngram_image.h"
#include "rescoring_test_util.h"
#include "tests/fuzz/fixed_checksum.h"

namespace gpuspeech {
namespace {

std::string temp_path(const std::string& name) {
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp ? tmp : "/tmp") + "/" + name + "-" + std::to_string(getpid());
}

// Every n-gram of `a` in `b` with the same values, and the same counts.
void expect_same_model(const NgramModel& a, const NgramModel& b) {
  ASSERT_EQ(a.order(), b.order());
  ASSERT_EQ(a.vocabulary(), b.vocabulary());
  for (int n = 1; n <= a.order(); ++n) {
    ASSERT_EQ(a.num_ngrams(n), b.num_ngrams(n)) << n;
    EXPECT_EQ(a.num_derived(n), b.num_derived(n)) << n;
    a.for_each_ngram(n, [&](const int* words, int len, float p, float bo, bool derived) {
      float p2 = 0, bo2 = 0;
      ASSERT_TRUE(b.find(words, static_cast<size_t>(len), &p2, &bo2));
      EXPECT_EQ(p, p2);
      EXPECT_EQ(bo, bo2);
      (void)derived;
    });
  }
}

std::string parse_error(const std::vector<uint8_t>& b) {
  try {
    parse_ngram_image(b.data(), b.size(), "cache/x.pruned.lm");
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(NgramImage, RandomTrigramModelsComeBackExactly) {
  std::mt19937 rng(20261205);
  for (int trial = 0; trial < 6; ++trial) {
    const testing::LmPair lms = testing::random_lm_pair(rng, 12 + 9 * trial);
    for (const NgramModel* m : {lms.full.get(), lms.pruned.get()}) {
      const std::vector<uint8_t> bytes = format_ngram_image(*m);
      const NgramModel back = parse_ngram_image(bytes.data(), bytes.size(), "x.lm");
      expect_same_model(*m, back);
      EXPECT_EQ(back.source(), "x.lm");
      EXPECT_EQ(back.format(), m->format());
      EXPECT_EQ(format_ngram_image(back), bytes);  // one spelling per model
      // Scores, back-off paths included, are the same floats.
      std::uniform_int_distribution<int> word(0, m->vocabulary_size() - 1);
      for (int q = 0; q < 200; ++q) {
        const int h[2] = {word(rng), word(rng)};
        const int w = word(rng);
        EXPECT_EQ(m->score_log10(h, 2, w), back.score_log10(h, 2, w));
      }
    }
    EXPECT_GT(lms.full->order(), 2);
  }
}

// An ARPA model keeps its format and its derived suffix entries.
TEST(NgramImage, ArpaModelWithDerivedSuffixes) {
  const std::string arpa =
      "\\data\\\nngram 1=4\nngram 2=2\nngram 3=1\n\n"
      "\\1-grams:\n-1.0 <s> -0.5\n-0.7 </s>\n-0.6 a -0.25\n-0.9 b -0.125\n\n"
      "\\2-grams:\n-0.3 <s> a -0.0625\n-0.2 a </s>\n\n"
      "\\3-grams:\n-0.1 <s> a b\n\n\\end\\\n";
  const NgramModel m = parse_arpa_lm(arpa, "tiny.arpa");
  ASSERT_EQ(m.num_derived(2), 1u);  // "a b", the suffix of "<s> a b"
  const std::vector<uint8_t> bytes = format_ngram_image(m);
  const NgramModel back = parse_ngram_image(bytes.data(), bytes.size(), "tiny.lm");
  expect_same_model(m, back);
  EXPECT_EQ(back.format(), LmFileFormat::kArpa);
  EXPECT_EQ(back.num_derived(2), 1u);
  EXPECT_EQ(back.score_log10(std::vector<std::string>{"<s>", "a"}, "b"), -0.1f);
}

TEST(NgramImage, FilesAndTheCachedReader) {
  std::mt19937 rng(7);
  const testing::LmPair lms = testing::random_lm_pair(rng, 30);
  const std::string image = temp_path("ngram-image.lm"), arpa = temp_path("ngram-image.arpa");
  write_ngram_image(image, *lms.full);
  expect_same_model(*lms.full, read_ngram_image(image));
  expect_same_model(*lms.full, read_cached_ngram_model(image));
  EXPECT_EQ(read_cached_ngram_model(image).source(), image);
  // ARPA text, as caches written before images hold it.
  {
    std::ofstream f(arpa, std::ios::binary);
    f << format_arpa_lm(*lms.full);
  }
  const NgramModel from_text = read_cached_ngram_model(arpa);
  EXPECT_EQ(from_text.format(), LmFileFormat::kArpa);
  EXPECT_EQ(from_text.num_ngrams(2), lms.full->num_ngrams(2));
  // Not an image: said so, naming the file.
  try {
    read_ngram_image(arpa);
    ADD_FAILURE() << "ARPA text read as an image";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(arpa + ": not a gpuspeech n-gram image"),
              std::string::npos) << e.what();
  }
  try {
    read_cached_ngram_model(image + ".missing");
    ADD_FAILURE() << "a missing file was read";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(image + ".missing"), std::string::npos) << e.what();
  }
  std::remove(image.c_str());
  std::remove(arpa.c_str());
}

TEST(NgramImage, DamageIsAnErrorNamingTheFile) {
  std::mt19937 rng(11);
  const testing::LmPair lms = testing::random_lm_pair(rng, 20);
  const std::vector<uint8_t> good = format_ngram_image(*lms.full);
  // Every truncation.
  for (size_t n = 0; n < good.size(); ++n) {
    const std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<long>(n));
    const std::string e = parse_error(cut);
    ASSERT_NE(e.find("cache/x.pruned.lm"), std::string::npos) << n << ": " << e;
  }
  // Every single flipped byte: in the headers and the vocabulary by their
  // checks (or the checksum), in the arrays by the checksum.
  size_t headers = 32 + 16 * static_cast<size_t>(lms.full->order());
  for (const std::string& w : lms.full->vocabulary()) headers += 4 + w.size();
  for (size_t i = 0; i < good.size(); i += 7) {
    std::vector<uint8_t> b = good;
    b[i] ^= 0x10;
    const std::string e = parse_error(b);
    ASSERT_FALSE(e.empty()) << i;
    if (i >= headers) EXPECT_NE(e.find("checksum mismatch"), std::string::npos) << i << ": " << e;
  }
  // Behind a recomputed checksum: a header claiming 2^31 bigrams is
  // refused against the file's size before anything is allocated.
  {
    std::vector<uint8_t> b = good;
    const size_t bigram_count = 32 + 16;  // fixed header, then the unigrams' level header
    for (int k = 0; k < 8; ++k) b[bigram_count + k] = k == 3 ? 0x80 : 0;
    testing::fix_checksum(b);
    EXPECT_NE(parse_error(b).find("file too short"), std::string::npos) << parse_error(b);
  }
  // A word id beyond the vocabulary (the last bigram's, which stays in
  // increasing order): the trie's own checks.
  {
    std::vector<uint8_t> b = good;
    const NgramModel m = parse_ngram_image(good.data(), good.size(), "x");
    uint64_t vocab_bytes = 0;
    for (const std::string& w : m.vocabulary()) vocab_bytes += 4 + w.size();
    const size_t first_bigram_word = 32 + 16 * m.order() + vocab_bytes +
                                     m.num_ngrams(1) * 4 * 2 + (m.num_ngrams(1) + 1) * 4 +
                                     m.levels()[0].derived.size();
    b[first_bigram_word + 4 * (m.num_ngrams(2) - 1) + 3] = 0x7f;
    testing::fix_checksum(b);
    EXPECT_NE(parse_error(b).find("beyond the vocabulary"), std::string::npos) << parse_error(b);
  }
  // Another version.
  {
    std::vector<uint8_t> b = good;
    b[8] = 9;
    testing::fix_checksum(b);
    EXPECT_NE(parse_error(b).find("unsupported version 9"), std::string::npos) << parse_error(b);
  }
}

}  // namespace
}  // namespace gpuspeech
