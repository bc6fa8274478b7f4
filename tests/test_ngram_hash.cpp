// The n-gram hash (common/model/ngram_hash.h, ngram_hash_table.h) against
// the trie it was built from (NgramModel::score_log10): every query must
// give the trie's float to the bit and the same n-gram length. Random
// models (trigram and bigram, derived suffixes, unigram-only) are queried
// exhaustively, every history of every length over the whole vocabulary;
// pocketsphinx's en-us.lm.bin with a million queries, half through listed
// n-grams and half at random. Models the hash cannot hold are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "common/model/model_error.h"
#include "common/model/ngram_hash_table.h"
#include "common/model/ngram_model.h"
#include "tests/rescoring_test_util.h"
#include "tests/test_backends.h"

namespace gpuspeech {
namespace {

unsigned test_seed() {
  const char* env = std::getenv("GPUSPEECH_TEST_SEED");
  const unsigned seed = env != nullptr && *env != '\0' ? static_cast<unsigned>(std::strtoul(env, nullptr, 10))
                                                         : std::random_device{}();
  std::printf("seed %u (GPUSPEECH_TEST_SEED=%u repeats this run)\n", seed, seed);
  std::fflush(stdout);
  return seed;
}

uint32_t bits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// One query through both; history oldest first, only its last order - 1
// words count (as the rescorer passes them).
::testing::AssertionResult same_score(const NgramModel& lm, const NgramHashView& h,
                                      const std::vector<int>& history, int word) {
  int want_length = 0;
  const float want = lm.score_log10(history.data(), history.size(), word, &want_length);
  const int k = std::min<int>(static_cast<int>(history.size()), lm.order() - 1);
  int recent[kNgramHashMaxOrder];
  for (int i = 0; i < k; ++i) recent[i] = history[history.size() - 1 - i];
  int got_length = 0;
  const float got = ngram_hash_score_log10(h, recent, k, word, &got_length);
  if (bits(got) == bits(want) && got_length == want_length) return ::testing::AssertionSuccess();
  std::string words;
  for (int w : history) words += lm.word(w) + " ";
  return ::testing::AssertionFailure() << lm.source() << ": P(" << lm.word(word) << " | " << words
                                       << ") trie " << want << " (length " << want_length << "), hash "
                                       << got << " (length " << got_length << ")";
}

TEST(NgramHash, RandomModelsScoreAsTheTrieForEveryQuery) {
  std::mt19937 rng(test_seed());
  size_t queries = 0, listed = 0;
  for (int trial = 0; trial < 120; ++trial) {
    const int words = std::uniform_int_distribution<int>(3, 24)(rng);
    const double bigrams = std::uniform_real_distribution<double>(0.05, 0.9)(rng);
    const double trigrams = std::uniform_real_distribution<double>(0.0, 0.6)(rng);
    const testing::LmPair pair = testing::random_lm_pair(rng, words, bigrams, trigrams);
    for (const NgramModel* lm : {pair.full.get(), pair.pruned.get()}) {
      const NgramHashTable table(*lm);
      const NgramHashView h = table.view();
      size_t want_entries = 0;
      for (int n = 2; n <= lm->order(); ++n) want_entries += lm->num_ngrams(n);
      ASSERT_EQ(table.entries(), want_entries);
      ASSERT_GE(table.slots().size(), 2 * want_entries);
      const int V = lm->vocabulary_size();
      for (int w = 0; w < V; ++w) {
        ASSERT_TRUE(same_score(*lm, h, {}, w));
        for (int a = 0; a < V; ++a) {
          ASSERT_TRUE(same_score(*lm, h, {a}, w));
          for (int b = 0; b < V; ++b) {
            ASSERT_TRUE(same_score(*lm, h, {b, a}, w));
            int n = 0;
            const std::vector<int> hist{b, a};
            lm->score_log10(hist.data(), hist.size(), w, &n);
            listed += n > 1;
          }
        }
        queries += 1 + V + static_cast<size_t>(V) * V;
      }
    }
  }
  std::printf("%zu queries, %zu through listed n-grams of order 2 or more\n", queries, listed);
  EXPECT_GT(listed, queries / 10);
}

TEST(NgramHash, EnUsScoresAsTheTrie) {
  const std::string path = testing::model_dir() + "/en-us/en-us.lm.bin";
  if (!std::ifstream(path).good()) GTEST_SKIP() << path << " not installed (pocketsphinx-en-us)";
  const NgramModel lm = read_ngram_model(path);
  const NgramHashTable table(lm);
  std::printf("%s: %zu n-grams of order 2-3 in %zu slots (%.0f MiB), at most %u probes\n", path.c_str(),
              table.entries(), table.slots().size(), table.bytes() / 1048576.0, table.max_probes());
  const NgramHashView h = table.view();
  std::mt19937 rng(test_seed());
  // Listed trigrams and bigrams (a uniform sample of each order, by
  // reservoir), so that the lookups that find something are tested as
  // often as those that back off.
  std::vector<std::vector<int>> sample;
  constexpr size_t kPerOrder = 100000;
  for (int n = 2; n <= lm.order(); ++n) {
    size_t seen = 0;
    const size_t first = sample.size();
    lm.for_each_ngram(n, [&](const int* ws, int len, float, float, bool) {
      ++seen;
      if (sample.size() - first < kPerOrder)
        sample.emplace_back(ws, ws + len);
      else if (const size_t j = std::uniform_int_distribution<size_t>(0, seen - 1)(rng); j < kPerOrder)
        sample[first + j].assign(ws, ws + len);
    });
  }
  std::uniform_int_distribution<int> word(0, lm.vocabulary_size() - 1), length(0, 3);
  std::uniform_int_distribution<size_t> pick(0, sample.size() - 1);
  size_t listed = 0;
  constexpr int kQueries = 1000000;
  for (int q = 0; q < kQueries; ++q) {
    std::vector<int> history;
    int w = 0;
    if (q % 2 == 0) {
      const std::vector<int>& g = sample[pick(rng)];
      history.assign(g.begin(), g.end() - 1);
      w = g.back();
      if (q % 4 == 0) history.insert(history.begin(), word(rng));  // an older word that may not count
      if (q % 8 == 2) history.back() = word(rng);  // the context listed or not, the n-gram likely not
    } else {
      history.resize(length(rng));
      for (int& x : history) x = word(rng);
      w = word(rng);
    }
    ASSERT_TRUE(same_score(lm, h, history, w)) << "query " << q;
    int n = 0;
    lm.score_log10(history.data(), history.size(), w, &n);
    listed += n > 1;
  }
  std::printf("%d queries, %zu through listed n-grams of order 2 or more\n", kQueries, listed);
  EXPECT_GT(listed, static_cast<size_t>(kQueries / 4));
}

TEST(NgramHash, RefusesModelsItCannotHold) {
  // Order 4: "a b c d" and its suffixes.
  std::vector<std::string> vocab{"<s>", "</s>", "a", "b", "c", "d"};
  std::vector<NgramList> lists(4);
  for (int n = 1; n <= 4; ++n) lists[n - 1].order = n;
  for (uint32_t w = 0; w < vocab.size(); ++w) {
    lists[0].words.push_back(w);
    lists[0].log10_prob.push_back(-1.0f);
    lists[0].log10_backoff.push_back(-0.5f);
  }
  const std::vector<uint32_t> gram{2, 3, 4, 5};
  for (int n = 2; n <= 4; ++n) {
    lists[n - 1].words.insert(lists[n - 1].words.end(), gram.end() - n, gram.end());
    lists[n - 1].log10_prob.push_back(-0.3f);
    lists[n - 1].log10_backoff.push_back(n < 4 ? -0.2f : 0.0f);
  }
  const NgramModel four = NgramModel::build(vocab, lists, "four.arpa");
  std::string why;
  EXPECT_FALSE(NgramHashTable::fits(four, &why));
  EXPECT_NE(why.find("order 4"), std::string::npos) << why;
  try {
    NgramHashTable table(four);
    FAIL() << "an order-4 model was taken";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("four.arpa"), std::string::npos) << e.what();
  }
}

TEST(NgramHash, KeysOfDistinctNgramsDiffer) {
  // Lengths 1-3 over ids near the limit and near 0: no two keys alike, none 0.
  const int ids[] = {0, 1, 2, kNgramHashMaxVocabulary - 2, kNgramHashMaxVocabulary - 1};
  std::vector<unsigned long long> keys;
  for (int a : ids) {
    keys.push_back(ngram_hash_key(&a, 1));
    for (int b : ids) {
      const int two[2] = {a, b};
      keys.push_back(ngram_hash_key(two, 2));
      for (int c : ids) {
        const int three[3] = {a, b, c};
        keys.push_back(ngram_hash_key(three, 3));
      }
    }
  }
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(std::adjacent_find(keys.begin(), keys.end()), keys.end());
  EXPECT_NE(keys.front(), 0ull);
}

}  // namespace
}  // namespace gpuspeech
