// Language models. References no one here wrote:
//   - sphinx_lm_convert's ARPA text of the small binary models
//     (tests/data/lm/*.arpa): every n-gram read from the .lm.bin must carry
//     the same probability and back-off;
//   - sphinx_lm_eval's per-word scores (tests/data/lm/*.lm_eval, and fresh
//     random sentences when sphinx_lm_eval is installed): the back-off
//     scores must agree, en-us.lm.bin included;
//   - a plain map-based back-off scorer written here from the ARPA
//     definition, against the trie on random ARPA models (which exercises
//     the suffix entries the trie inserts);
//   - probability: the distributions P(. | h) of real models sum to 1.
// Then malformed ARPA text and truncated or corrupted binary files.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "common/model/arpa_lm.h"
#include "common/model/byte_reader.h"
#include "common/model/lm_trie_reader.h"
#include "common/model/model_error.h"
#include "common/model/ngram_model.h"
#include "test_backends.h"

namespace gpuspeech {
namespace {

const double kUnit = std::log10(kSphinxLmLogBase);  // log10 of one Sphinx log unit

std::string turtle_bin() { return testing::audio_dir() + "/turtle.lm.bin"; }
std::string tidigits_bin() { return testing::audio_dir() + "/tidigits/lm/tidigits.lm.bin"; }
std::string en_us_bin() { return testing::model_dir() + "/en-us/en-us.lm.bin"; }
std::string en_us_phone_bin() { return testing::model_dir() + "/en-us/en-us-phone.lm.bin"; }
std::string reference_file(const std::string& f) { return testing::data_dir() + "/lm/" + f; }

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

// A fresh seed for a randomized test, or GPUSPEECH_TEST_SEED's value when
// set. Printed (and flushed, so that it survives an abort) before the first
// trial, so that any failure can be run again.
unsigned test_seed() {
  const char* env = std::getenv("GPUSPEECH_TEST_SEED");
  const unsigned seed = env && *env ? static_cast<unsigned>(std::strtoul(env, nullptr, 10))
                                    : std::random_device{}();
  std::printf("seed %u (GPUSPEECH_TEST_SEED=%u repeats this run)\n", seed, seed);
  std::fflush(stdout);
  return seed;
}

// ------------------------------------------------- sphinx_lm_eval output

struct EvalLine {
  std::vector<std::string> history;
  std::string word;
  long score;  // Sphinx log units, truncated
};

// Lines "log P(WORD|H1 H2 ) = SCORE"; other lines are skipped.
std::vector<EvalLine> parse_lm_eval(std::istream& in) {
  std::vector<EvalLine> out;
  std::string line;
  const std::string head = "log P(", mid = ") = ";
  while (std::getline(in, line)) {
    if (line.compare(0, head.size(), head) != 0) continue;
    const size_t bar = line.find('|', head.size());
    const size_t close = line.rfind(mid);
    if (bar == std::string::npos || close == std::string::npos || close < bar) continue;
    EvalLine e;
    e.word = line.substr(head.size(), bar - head.size());
    std::istringstream hs(line.substr(bar + 1, close - bar - 1));
    std::string h;
    while (hs >> h) e.history.push_back(h);
    e.score = std::stol(line.substr(close + mid.size()));
    out.push_back(e);
  }
  return out;
}

// Scores agree with sphinx_lm_eval's within 2 of its units (it truncates a
// float sum to an integer).
// `tolerance` is in Sphinx log units: 2 for the binary model itself, more
// for ARPA text, whose 4 decimals round each value by up to 1.15 units.
void expect_scores_match(const NgramModel& m, const std::vector<EvalLine>& lines,
                         const std::string& what, double tolerance = 2.0) {
  ASSERT_FALSE(lines.empty()) << what;
  double worst = 0;
  size_t known = 0;
  for (const EvalLine& e : lines) {
    std::string h;
    for (const std::string& w : e.history) h += w + " ";
    double mine = m.score_log10(e.history, e.word) / kUnit;
    // Where sphinxbase left a node's children out of order, its search can
    // miss a stored n-gram and back off instead; this reader sorts them and
    // finds it (see lm_trie_reader.cpp). Then sphinx_lm_eval's score must be
    // the back-off one, and ours the stored n-gram's.
    if (m.warnings().size() > 0 && e.history.size() + 1 == static_cast<size_t>(m.order())) {
      std::vector<int> ids;
      for (const std::string& w : e.history) ids.push_back(m.word_id(w));
      ids.push_back(m.word_id(e.word));
      float stored = 0;
      const double backed_off =
          (m.backoff_log10(ids.data(), ids.size() - 1) +
           m.score_log10(ids.data() + 1, ids.size() - 2, ids.back())) / kUnit;
      if (m.find(ids.data(), ids.size(), &stored) &&
          std::fabs(backed_off - e.score) <= tolerance && std::fabs(mine - e.score) > tolerance) {
        EXPECT_NEAR(mine, stored / kUnit, 1e-3);
        std::printf("  %s: P(%s| %s) is stored (%.0f units); sphinx_lm_eval backs off (%ld)\n",
                    what.c_str(), e.word.c_str(), h.c_str(), mine, e.score);
        ++known;
        continue;
      }
    }
    const double diff = std::fabs(mine - static_cast<double>(e.score));
    worst = std::max(worst, diff);
    EXPECT_LE(diff, tolerance) << what << ": P(" << e.word << " | " << h << "): mine " << mine
                               << " units, sphinx_lm_eval " << e.score;
  }
  EXPECT_LE(known, 2u) << what;
  std::printf("%s: %zu scores, largest difference %.3f Sphinx log units\n", what.c_str(),
              lines.size() - known, worst);
}

std::vector<EvalLine> read_lm_eval(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  return parse_lm_eval(in);
}

std::string find_program(const char* name) {
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    const std::string p = dir + "/" + name;
    if (::access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

// ------------------------------------------- a plain reference scorer

// The ARPA definition, directly: maps from word sequences to values.
struct ReferenceLm {
  int order = 0;
  std::map<std::vector<int>, std::pair<double, double>> ngrams;  // prob, backoff

  double score(std::vector<int> h, int w) const {
    if (static_cast<int>(h.size()) > order - 1) h.erase(h.begin(), h.end() - (order - 1));
    std::vector<int> full = h;
    full.push_back(w);
    auto it = ngrams.find(full);
    if (it != ngrams.end()) return it->second.first;
    if (h.empty()) return -HUGE_VAL;  // unigrams are all listed
    auto ctx = ngrams.find(h);
    const double bo = ctx == ngrams.end() ? 0.0 : ctx->second.second;
    h.erase(h.begin());
    return bo + score(h, w);
  }
};

// A random ARPA model as text, with its reference. Higher-order n-grams are
// drawn at random, so many lack their suffixes and prefixes.
std::string random_arpa(std::mt19937& rng, ReferenceLm& lm, int& vocab) {
  vocab = std::uniform_int_distribution<int>(3, 25)(rng);
  lm.order = std::uniform_int_distribution<int>(1, 4)(rng);
  lm.ngrams.clear();
  std::uniform_real_distribution<double> prob(-4.0, -0.05), bo(-1.5, 0.5);
  std::vector<std::vector<std::string>> sections(lm.order);
  char buf[64];
  auto value = [&](double v) {  // as written, so both sides read the same
    std::snprintf(buf, sizeof buf, "%.4f", v);
    return std::string(buf);
  };
  for (int k = 1; k <= lm.order; ++k) {
    const int count = k == 1 ? vocab : std::uniform_int_distribution<int>(0, vocab * 4)(rng);
    std::uniform_int_distribution<int> word(0, vocab - 1);
    for (int i = 0; i < count; ++i) {
      std::vector<int> ws;
      if (k == 1) {
        ws.push_back(i);
      } else {
        for (int j = 0; j < k; ++j) ws.push_back(word(rng));
        if (lm.ngrams.count(ws)) continue;
      }
      const std::string p = value(prob(rng));
      const std::string b = k < lm.order ? value(bo(rng)) : "";
      lm.ngrams[ws] = {std::stod(p), b.empty() ? 0.0 : std::stod(b)};
      std::string line = p;
      for (int w : ws) line += " w" + std::to_string(w);
      if (!b.empty()) line += " " + b;
      sections[k - 1].push_back(line);
    }
  }
  std::string text = "random model\n\\data\\\n";
  for (int k = 1; k <= lm.order; ++k)
    text += "ngram " + std::to_string(k) + "=" + std::to_string(sections[k - 1].size()) + "\n";
  for (int k = 1; k <= lm.order; ++k) {
    text += "\n\\" + std::to_string(k) + "-grams:\n";
    for (const std::string& l : sections[k - 1]) text += l + "\n";
  }
  text += "\n\\end\\\n";
  return text;
}

// ------------------------------------------------------------------ tests

TEST(NgramModel, RandomArpaModelsScoreAsTheDefinitionSays) {
  const unsigned seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  size_t queries = 0, derived = 0;
  for (int trial = 0; trial < 200; ++trial) {
    ReferenceLm lm;
    int vocab = 0;
    const std::string text = random_arpa(rng, lm, vocab);
    const NgramModel m = parse_arpa_lm(text, "random.arpa");
    ASSERT_EQ(m.order(), lm.order);
    for (int k = 2; k <= m.order(); ++k) derived += m.num_derived(k);
    std::uniform_int_distribution<int> word(0, vocab - 1);
    for (int q = 0; q < 300; ++q) {
      std::vector<int> h(std::uniform_int_distribution<int>(0, 4)(rng));
      for (int& x : h) x = word(rng);
      const int w = word(rng);
      const double expect = lm.score(h, w);
      const float got = m.score_log10(h, w);
      ASSERT_NEAR(got, expect, 2e-4) << "seed " << seed << " trial " << trial << "\n" << text;
      ++queries;
    }
    // Every listed n-gram is found with its values; derived entries are
    // exactly the ones not listed.
    size_t listed = 0;
    for (int k = 1; k <= m.order(); ++k)
      m.for_each_ngram(k, [&](const int* ws, int n, float p, float b, bool is_derived) {
        const std::vector<int> key(ws, ws + n);
        auto it = lm.ngrams.find(key);
        ASSERT_EQ(it == lm.ngrams.end(), is_derived);
        if (is_derived) {
          // A derived entry holds the back-off score of its last word.
          std::vector<int> h(ws, ws + n - 1);
          EXPECT_NEAR(p, lm.score(h, ws[n - 1]), 2e-4);
          EXPECT_EQ(b, 0.0f);
          return;
        }
        ++listed;
        EXPECT_NEAR(p, it->second.first, 1e-6);
        if (k < m.order()) {
          EXPECT_NEAR(b, it->second.second, 1e-6);
        }
        float fp = 0, fb = 0;
        EXPECT_TRUE(m.find(ws, n, &fp, &fb));
        EXPECT_EQ(fp, p);
      });
    EXPECT_EQ(listed, lm.ngrams.size());
    // Written out and read back: the same model.
    const NgramModel again = parse_arpa_lm(format_arpa_lm(m, 6), "again.arpa");
    for (int q = 0; q < 50; ++q) {
      std::vector<int> h(std::uniform_int_distribution<int>(0, 3)(rng));
      for (int& x : h) x = word(rng);
      const int w = word(rng);
      ASSERT_NEAR(again.score_log10(h, w), m.score_log10(h, w), 2e-6);
    }
  }
  std::printf("%zu random queries, %zu derived suffix entries\n", queries, derived);
  EXPECT_GT(derived, 0u);
}

// What a device copy of a model will be: the view's arrays copied into
// buffers of their own, nothing else. Scored through ngram_score_log10
// (the function the kernels will call), every query must give the model's
// float exactly, and the same n-gram length.
TEST(NgramModel, ViewOverCopiedArraysScoresExactlyAsTheModel) {
  const unsigned seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  size_t queries = 0, backed_off = 0;
  for (int trial = 0; trial < 100; ++trial) {
    ReferenceLm lm;
    int vocab = 0;
    const NgramModel m = parse_arpa_lm(random_arpa(rng, lm, vocab), "random.arpa");
    const NgramView original = m.view();
    ASSERT_EQ(original.order, m.order());
    ASSERT_EQ(original.vocabulary, m.vocabulary_size());
    // The copies, and a view over them.
    std::vector<std::vector<uint32_t>> words(m.order()), children(m.order());
    std::vector<std::vector<float>> prob(m.order()), backoff(m.order());
    NgramView copy = original;
    for (int l = 0; l < m.order(); ++l) {
      const NgramLevel& level = m.levels()[l];
      words[l] = level.words;
      children[l] = level.children;
      prob[l] = level.log10_prob;
      backoff[l] = level.log10_backoff;
      copy.levels[l].words = words[l].empty() ? nullptr : words[l].data();
      copy.levels[l].children = children[l].empty() ? nullptr : children[l].data();
      copy.levels[l].log10_prob = prob[l].data();
      copy.levels[l].log10_backoff = backoff[l].empty() ? nullptr : backoff[l].data();
    }
    std::uniform_int_distribution<int> word(0, vocab - 1);
    for (int q = 0; q < 300; ++q) {
      std::vector<int> h(std::uniform_int_distribution<int>(0, 4)(rng));
      for (int& x : h) x = word(rng);
      const int w = word(rng);
      int length = 0;
      const float expect = m.score_log10(h.data(), h.size(), w, &length);
      // Most recent first, at most order - 1 words, as the view takes them.
      const int k = std::min<int>(static_cast<int>(h.size()), m.order() - 1);
      std::vector<int> recent(h.rbegin(), h.rbegin() + k);
      int got_length = 0;
      const float got = ngram_score_log10(copy, recent.data(), k, w, &got_length);
      ASSERT_EQ(got, expect) << "trial " << trial << " query " << q;
      ASSERT_EQ(got_length, length);
      backed_off += length <= k;
      ++queries;
    }
  }
  std::printf("%zu queries through copied arrays, %zu of them backed off\n", queries, backed_off);
  EXPECT_GT(backed_off, 0u);
}

// A history's contexts looked up once (ngram_context), then many words
// scored after it: each to the model's float, with the same n-gram length.
TEST(NgramModel, ScoresAfterAContextLookedUpOnceAreTheModels) {
  const unsigned seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  size_t queries = 0, backed_off = 0, short_contexts = 0;
  for (int trial = 0; trial < 100; ++trial) {
    ReferenceLm lm;
    int vocab = 0;
    const NgramModel m = parse_arpa_lm(random_arpa(rng, lm, vocab), "random.arpa");
    const NgramView view = m.view();
    std::uniform_int_distribution<int> word(0, vocab - 1);
    for (int q = 0; q < 30; ++q) {
      std::vector<int> h(std::uniform_int_distribution<int>(0, 4)(rng));
      for (int& x : h) x = word(rng);
      const int k = std::min<int>(static_cast<int>(h.size()), m.order() - 1);
      std::vector<int> recent(h.rbegin(), h.rbegin() + k);
      const NgramContext ctx = ngram_context(view, recent.data(), k);
      short_contexts += ctx.listed < k;
      for (int v = 0; v < vocab; ++v) {
        int length = 0, got_length = 0;
        const float expect = m.score_log10(h.data(), h.size(), v, &length);
        const float got = ngram_score_log10(view, ctx, v, &got_length);
        ASSERT_EQ(got, expect) << "trial " << trial << " history " << q << " word " << v;
        ASSERT_EQ(got_length, length);
        backed_off += length <= k;
        ++queries;
      }
    }
  }
  std::printf("%zu queries, %zu backed off, %zu histories with an unlisted context\n", queries,
              backed_off, short_contexts);
  EXPECT_GT(backed_off, 0u);
  EXPECT_GT(short_contexts, 0u);
}

TEST(NgramModel, HandWorkedBackoff) {
  // P(c | a b) listed; P(d | a b) = BO(a b) + BO(b) + P(d); P(c | x b) =
  // P(c | b) since "x b" is not listed (BO 1); "b c" is missing, so the
  // trie derives it: P(c | b) = BO(b) + P(c).
  const std::string text =
      "\\data\\\nngram 1=5\nngram 2=2\nngram 3=1\n\n"
      "\\1-grams:\n-1.0 a -0.5\n-1.1 b -0.25\n-1.2 c -0.1\n-1.3 d\n-1.4 x -0.7\n\n"
      "\\2-grams:\n-0.3 a b -0.125\n-0.6 x a -0.05\n\n"
      "\\3-grams:\n-0.2 a b c\n\n\\end\\\n";
  const NgramModel m = parse_arpa_lm(text, "hand.arpa");
  EXPECT_EQ(m.num_ngrams(2), 3u);
  EXPECT_EQ(m.num_derived(2), 1u);
  EXPECT_NEAR(m.score_log10({"a", "b"}, "c"), -0.2, 1e-6);
  EXPECT_NEAR(m.score_log10({"a", "b"}, "d"), -0.125 - 0.25 - 1.3, 1e-6);
  EXPECT_NEAR(m.score_log10({"x", "b"}, "c"), -0.25 - 1.2, 1e-6);
  EXPECT_NEAR(m.score_log10({"b"}, "c"), -0.25 - 1.2, 1e-6);
  EXPECT_NEAR(m.score_log10({"x"}, "a"), -0.6, 1e-6);
  EXPECT_NEAR(m.score_log10({"x", "a"}, "b"), -0.05 - 0.3, 1e-6);
  EXPECT_NEAR(m.score_log10({}, "d"), -1.3, 1e-6);
  EXPECT_NEAR(m.score_log10({"c", "d", "x", "a"}, "b"), -0.05 - 0.3, 1e-6);  // last 2 count
  int len = 0;
  const int h[2] = {m.word_id("a"), m.word_id("b")};
  m.score_log10(h, 2, m.word_id("c"), &len);
  EXPECT_EQ(len, 3);
  m.score_log10(h, 2, m.word_id("d"), &len);
  EXPECT_EQ(len, 1);
  EXPECT_NEAR(m.score_ln(h, 2, m.word_id("c")), -0.2 * std::log(10.0), 1e-6);
  EXPECT_NEAR(m.backoff_log10(h, 2), -0.125, 1e-7);
  EXPECT_EQ(m.backoff_log10(h + 1, 1), -0.25f);
  EXPECT_THROW(m.score_log10({"a"}, "nope"), std::out_of_range);
  EXPECT_THROW(m.score_log10(std::vector<int>{99}, 0), std::out_of_range);
}

void expect_same_ngrams(const NgramModel& bin, const NgramModel& arpa, const std::string& what) {
  ASSERT_EQ(bin.order(), arpa.order()) << what;
  ASSERT_EQ(bin.vocabulary(), arpa.vocabulary()) << what;
  size_t compared = 0;
  double worst = 0;
  for (int n = 1; n <= bin.order(); ++n) {
    EXPECT_EQ(bin.num_ngrams(n), arpa.num_ngrams(n)) << what << " order " << n;
    // sphinx_lm_convert prints 4 decimals.
    arpa.for_each_ngram(n, [&](const int* ws, int k, float p, float b, bool) {
      float bp = 0, bb = 0;
      ASSERT_TRUE(bin.find(ws, k, &bp, &bb)) << what << ": an n-gram of the ARPA is missing";
      EXPECT_NEAR(bp, p, 5.1e-5) << what;
      EXPECT_NEAR(bb, b, 5.1e-5) << what;
      worst = std::max({worst, std::fabs(double(bp) - p), std::fabs(double(bb) - b)});
      ++compared;
    });
  }
  std::printf("%s: %zu n-grams equal to sphinx_lm_convert's (largest difference %.2g)\n",
              what.c_str(), compared, worst);
}

TEST(LmTrie, SmallModelsMatchSphinxLmConvert) {
  expect_same_ngrams(read_lm_trie(turtle_bin()), read_arpa_lm(reference_file("turtle.arpa")), "turtle");
  expect_same_ngrams(read_lm_trie(tidigits_bin()), read_arpa_lm(reference_file("tidigits.arpa")),
                     "tidigits");
}

TEST(LmTrie, ScoresMatchSphinxLmEval) {
  const std::vector<EvalLine> turtle = read_lm_eval(reference_file("turtle.lm_eval"));
  expect_scores_match(read_ngram_model(turtle_bin()), turtle, "turtle.lm.bin");
  expect_scores_match(read_ngram_model(reference_file("turtle.arpa")), turtle, "turtle.arpa", 3.5);
  expect_scores_match(read_ngram_model(en_us_bin()), read_lm_eval(reference_file("en-us.lm_eval")),
                      "en-us.lm.bin");
}

// Random sentences made of listed n-grams and of random words, scored by
// sphinx_lm_eval now.
TEST(LmTrie, FreshRandomSentencesMatchSphinxLmEval) {
  const std::string tool = find_program("sphinx_lm_eval");
  if (tool.empty()) GTEST_SKIP() << "sphinx_lm_eval (sphinxbase-utils) is not installed";
  const unsigned seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  for (const std::string& path : {turtle_bin(), tidigits_bin(), en_us_phone_bin(), en_us_bin()}) {
    const NgramModel m = read_ngram_model(path);
    const int s = m.word_id("<s>"), e = m.word_id("</s>");
    // Reservoir samples of listed n-grams of the highest order, without
    // sentence markers inside.
    std::vector<std::vector<int>> sample;
    size_t seen = 0;
    m.for_each_ngram(m.order(), [&](const int* ws, int n, float, float, bool) {
      for (int i = 0; i < n; ++i)
        if (ws[i] == s || ws[i] == e) return;
      ++seen;
      if (sample.size() < 60) {
        sample.emplace_back(ws, ws + n);
      } else {
        const size_t j = std::uniform_int_distribution<size_t>(0, seen - 1)(rng);
        if (j < sample.size()) sample[j] = std::vector<int>(ws, ws + n);
      }
    });
    std::uniform_int_distribution<int> any(0, m.vocabulary_size() - 1);
    const std::string file = ::testing::TempDir() + "lm_eval_sentences.txt";
    {
      std::ofstream out(file);
      for (int i = 0; i < 40; ++i) {
        std::vector<int> words;
        for (int part = 0; part < 2 && !sample.empty(); ++part) {
          const auto& g = sample[std::uniform_int_distribution<size_t>(0, sample.size() - 1)(rng)];
          words.insert(words.end(), g.begin(), g.end());
        }
        for (int r = std::uniform_int_distribution<int>(0, 3)(rng); r > 0; --r) {
          const int w = any(rng);
          if (w != s && w != e) words.push_back(w);
        }
        if (i % 2) std::shuffle(words.begin(), words.end(), rng);
        out << "<s>";
        for (int w : words) out << " " << m.word(w);
        out << " </s>\n";
      }
    }
    const std::string cmd = tool + " -lm " + path + " -lsn " + file + " -verbose yes 2>/dev/null";
    FILE* p = ::popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::string output;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) output.append(buf, n);
    ::pclose(p);
    std::istringstream in(output);
    expect_scores_match(m, parse_lm_eval(in), path + " (random sentences)");
    std::remove(file.c_str());
  }
}

TEST(LmTrie, EnUsDistributionsSumToOne) {
  // A back-off model's P(. | h) sums to 1 over the vocabulary (less <s>,
  // which is never predicted) for every context: a check of the back-off
  // weights and of the scorer, 16-bit quantization included. en-us is such
  // a model (turtle's and en-us-phone's are not normalised at all: their
  // unigrams alone sum to 0.38 and 3.5).
  const NgramModel m = read_ngram_model(en_us_bin());
  const int s = m.word_id("<s>");
  std::mt19937 rng(7);
  // Contexts of listed trigrams (so that the trigram level is used), and
  // random ones (mostly backing off).
  std::vector<std::vector<int>> contexts;
  size_t seen = 0;
  m.for_each_ngram(3, [&](const int* ws, int, float, float, bool) {
    ++seen;
    if (contexts.size() < 8) {
      contexts.push_back({ws[0], ws[1]});
    } else {
      const size_t j = std::uniform_int_distribution<size_t>(0, seen - 1)(rng);
      if (j < 8) contexts[j] = {ws[0], ws[1]};
    }
  });
  std::uniform_int_distribution<int> any(0, m.vocabulary_size() - 1);
  contexts.push_back({});
  contexts.push_back({s});
  for (int i = 0; i < 4; ++i) contexts.push_back({any(rng), any(rng)});
  double worst = 0;
  for (const std::vector<int>& h : contexts) {
    double sum = 0;
    for (int w = 0; w < m.vocabulary_size(); ++w)
      if (w != s) sum += std::pow(10.0, m.score_log10(h, w));
    worst = std::max(worst, std::fabs(sum - 1.0));
    std::string text;
    for (int w : h) text += m.word(w) + " ";
    EXPECT_NEAR(sum, 1.0, 2e-3) << "context '" << text << "'";
  }
  std::printf("en-us.lm.bin: P(.|h) sums within %.2g of 1 over %zu contexts\n", worst,
              contexts.size());
}

TEST(LmTrie, EnUsLoadsWithItsCounts) {
  const std::string bytes = read_model_file(en_us_bin());
  ASSERT_GT(bytes.size(), 32u);
  const int order = static_cast<unsigned char>(bytes[19]);
  uint32_t header[3];
  std::memcpy(header, bytes.data() + 20, sizeof header);
  const std::clock_t c0 = std::clock();
  const NgramModel m = parse_lm_trie(bytes, en_us_bin());
  const double secs = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
  std::printf("en-us.lm.bin: order %d, %zu/%zu/%zu n-grams, decoded in %.3f s CPU\n", m.order(),
              m.num_ngrams(1), m.num_ngrams(2), m.num_ngrams(3), secs);
  for (const std::string& w : m.warnings()) std::printf("  %s\n", w.c_str());
  ASSERT_EQ(order, 3);
  EXPECT_EQ(m.order(), 3);
  EXPECT_EQ(m.num_ngrams(1), header[0]);
  // sphinxbase allots a few more suffix entries than it fills.
  EXPECT_LE(m.num_ngrams(2), header[1]);
  EXPECT_GT(m.num_ngrams(2), header[1] - 100);
  EXPECT_EQ(m.num_ngrams(3), header[2]);
  EXPECT_LT(secs, 10.0);
  double total = 0;
  for (float p : m.levels()[0].log10_prob) total += std::pow(10.0, p);
  EXPECT_NEAR(total, 1.0, 1e-3);
  for (const char* w : {"the", "hello", "recognition", "<s>", "</s>"})
    EXPECT_NE(m.word_id(w), NgramModel::kNoWord) << w;
}

// ------------------------------------------------------------ bad input

TEST(ArpaLm, Errors) {
  const std::string good_head = "\\data\\\nngram 1=2\nngram 2=1\n\n\\1-grams:\n-1 a -0.5\n-1 b -0.5\n\n";
  struct Case {
    std::string text;
    std::vector<std::string> fragments;
  };
  const std::vector<Case> cases = {
      {"just text\n", {"bad.arpa:", "no \\data\\"}},
      {"\\data\\\n\\1-grams:\n-1 a\n\\end\\\n", {"bad.arpa:1:", "not followed by any 'ngram"}},
      {"\\data\\\nngram 2=1\n", {"bad.arpa:2:", "order 2 where order 1"}},
      {"\\data\\\nngram 1=x\n", {"bad.arpa:2:", "malformed count"}},
      {"\\data\\\nngram 1=99999999999\n\\1-grams:\n", {"bad.arpa:2:", "more than a file of"}},
      // Declared 3 unigrams, two present: the error names the section.
      {"\\data\\\nngram 1=3\n\n\\1-grams:\n-1 a\n-1 b\n\n\\end\\\n",
       {"bad.arpa:4:", "has 2 entries but line 2 declared 3"}},
      // Declared 1, two present: the error names the extra line.
      {"\\data\\\nngram 1=1\n\n\\1-grams:\n-1 a\n-1 b\n\n\\end\\\n",
       {"bad.arpa:6:", "more 1-grams than the 1 declared at line 2"}},
      {good_head + "\\2-grams:\n-0.5 a c\n\n\\end\\\n",
       {"bad.arpa:10:", "word 'c'", "not among the unigrams"}},
      {good_head + "\\2-grams:\n-0.5 a\n\n\\end\\\n", {"bad.arpa:10:", "found 2 fields"}},
      {good_head + "\\2-grams:\nhalf a b\n\n\\end\\\n", {"bad.arpa:10:", "bad log probability"}},
      {good_head + "\\2-grams:\nnan a b\n\n\\end\\\n", {"bad.arpa:10:", "bad log probability"}},
      // Beyond float's range: the model keeps floats, where these would be
      // infinities (found by fuzz_arpa: a -inf back-off weight written out
      // could not be read back).
      {good_head + "\\2-grams:\n1e39 a b\n\n\\end\\\n", {"bad.arpa:10:", "bad log probability"}},
      {"\\data\\\nngram 1=2\n\n\\1-grams:\n-1 a -1e39\n-1 b\n\n\\end\\\n",
       {"bad.arpa:5:", "bad log back-off weight '-1e39' (not a finite float)"}},
      {"\\data\\\nngram 1=2\n\n\\1-grams:\n-1 a -inf\n-1 b\n\n\\end\\\n",
       {"bad.arpa:5:", "bad log back-off weight '-inf'"}},
      {good_head + "\\2-grams:\n-0.5 a b\n-0.4 a b\n\n\\end\\\n",
       {"bad.arpa:11:", "more 2-grams than the 1 declared at line 3"}},
      {"\\data\\\nngram 1=2\nngram 2=2\n\n\\1-grams:\n-1 a -0.5\n-1 b -0.5\n\n\\2-grams:\n"
       "-0.5 a b\n-0.4 a b\n\n\\end\\\n",
       {"bad.arpa:11:", "'a b' is listed twice", "also at line 10"}},
      {good_head + "\\2-grams:\n-0.5 a b\n", {"bad.arpa:", "truncated", "no \\end\\"}},
      {good_head, {"bad.arpa:", "truncated", "\\2-grams: section is missing"}},
      {good_head + "\\3-grams:\n", {"bad.arpa:9:", "expected \\2-grams:"}},
      {"\\data\\\nngram 1=2\n\n\\1-grams:\n-1 a\n-1 a\n\n\\end\\\n",
       {"bad.arpa:6:", "unigram 'a' is listed twice (first at line 5)"}},
      {"\\data\\\nngram 1=1\n\n\\1-grams:\n-1 a\n\n\\nonsense\\\n",
       {"bad.arpa:7:", "expected \\end\\"}},
      {"\x1f\x8b\x08\x00", {"bad.arpa:", "gzip"}},
  };
  for (const Case& c : cases)
    expect_model_error([&] { parse_arpa_lm(c.text, "bad.arpa"); }, c.fragments);

  // Tolerated, with warnings.
  const NgramModel m = parse_arpa_lm(
      "\\data\\\nngram 1=2\n\n\\1-grams:\n0.5 a -0.3\n-1 b\n\n\\end\\\n", "warn.arpa");
  ASSERT_EQ(m.warnings().size(), 2u);
  EXPECT_NE(m.warnings()[0].find("warn.arpa:5:"), std::string::npos);
  EXPECT_EQ(m.score_log10({}, "a"), 0.0f);
  expect_model_error([] { read_arpa_lm("/nonexistent.arpa"); }, {"/nonexistent.arpa", "cannot read"});
}

TEST(LmTrie, TruncatedFilesFailCleanly) {
  const std::string bytes = read_model_file(turtle_bin());
  // Every cut in the header and the first unigrams, then a spread of cuts
  // through the rest (including each region's boundaries).
  std::vector<size_t> cuts;
  for (size_t i = 0; i < 64; ++i) cuts.push_back(i);
  const size_t quant_end = 36 + (2 * 65536 + 65536) * 4;
  for (size_t b : {quant_end - 1, quant_end, quant_end + 12, quant_end + 92 * 12,
                   bytes.size() - 1, bytes.size() - 100})
    cuts.push_back(b);
  for (size_t i = 0; i < 80; ++i) cuts.push_back(64 + (bytes.size() - 64) * i / 80);
  for (size_t cut : cuts)
    EXPECT_THROW(parse_lm_trie(std::string_view(bytes).substr(0, cut), "cut.lm.bin"), ModelError)
        << "cut at " << cut;
  expect_model_error([&] { parse_lm_trie(bytes.substr(0, 100), "cut.lm.bin"); },
                     {"cut.lm.bin: offset", "truncated"});
}

TEST(LmTrie, CorruptFilesFailCleanlyOrLoad) {
  const std::string good = read_model_file(turtle_bin());
  const size_t quant_end = 36 + (2 * 65536 + 65536) * 4;
  const unsigned seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  size_t loaded = 0, refused = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::string bad = good;
    // Corrupt the structure (header, unigrams, trie, words), not only bins.
    std::uniform_int_distribution<size_t> where(0, 1);
    for (int k = std::uniform_int_distribution<int>(1, 4)(rng); k > 0; --k) {
      size_t at = where(rng) ? std::uniform_int_distribution<size_t>(0, 35)(rng)
                             : std::uniform_int_distribution<size_t>(quant_end, bad.size() - 1)(rng);
      bad[at] = static_cast<char>(std::uniform_int_distribution<int>(0, 255)(rng));
    }
    try {
      const NgramModel m = parse_lm_trie(bad, "corrupt.lm.bin");
      ++loaded;
      // Whatever loaded must answer queries within bounds.
      std::uniform_int_distribution<int> any(0, m.vocabulary_size() - 1);
      for (int q = 0; q < 100; ++q) {
        std::vector<int> h = {any(rng), any(rng)};
        (void)m.score_log10(h, any(rng));
      }
    } catch (const ModelError&) {
      ++refused;
    }
  }
  std::printf("seed %u: %zu corrupt files refused, %zu loaded\n", seed, refused, loaded);
  EXPECT_GT(refused, 0u);

  // Damaged indices, each refused where it is read.
  const size_t unigrams_at = quant_end, bigrams_at = quant_end + 92 * 12;
  // Found by the trials above (seed 2840409864): the end marker's index
  // 212 -> 110 made 110 2-grams while unigrams 44.. still pointed up to
  // 212, and NgramModel::validate read past the 2-grams' end.
  std::string s = good;
  s[unigrams_at + 91 * 12 + 8] = 110;
  expect_model_error([&] { parse_lm_trie(s, "x.lm.bin"); },
                     {"x.lm.bin: offset " + std::to_string(unigrams_at + 91 * 12 + 8) + ":",
                      "the end marker of the unigrams: its children start at 110, before those "
                      "of the entry before it (209)"});
  s = good;
  s[unigrams_at + 12 + 8 + 1] = 0x7f;  // unigram 1's child index 71 -> 32583
  expect_model_error([&] { parse_lm_trie(s, "x.lm.bin"); },
                     {"x.lm.bin: offset " + std::to_string(unigrams_at + 12 + 8) + ":",
                      "unigram 1: child index 32583 is beyond the 212 entries"});
  s = good;
  s[unigrams_at + 5 * 12 + 8] = 0;  // unigram 5's children start at 0, before 74
  expect_model_error([&] { parse_lm_trie(s, "x.lm.bin"); },
                     {"x.lm.bin: offset " + std::to_string(unigrams_at + 5 * 12 + 8) + ":",
                      "unigram 5: its children start at 0, before those of the entry before "
                      "it (74)"});
  s = good;
  s[unigrams_at + 8] = 1;
  expect_model_error([&] { parse_lm_trie(s, "x.lm.bin"); },
                     {"offset " + std::to_string(unigrams_at + 8) + ":", "unigram 0", "not at 0"});
  s = good;
  s[unigrams_at + 91 * 12 + 8] = static_cast<char>(213);  // the end marker
  expect_model_error([&] { parse_lm_trie(s, "x.lm.bin"); },
                     {"end marker of the unigrams", "213 is beyond the 212"});
  // 2-grams: 47 bits each (word 7, probability and back-off codes 32,
  // child index 8), packed least significant bit first.
  auto set_bits = [&](std::string& b, size_t bit, int n, unsigned v) {
    for (int i = 0; i < n; ++i, ++bit) {
      char& c = b[bigrams_at + bit / 8];
      c = static_cast<char>((c & ~(1 << (bit % 8))) | (((v >> i) & 1) << (bit % 8)));
    }
  };
  s = good;
  set_bits(s, 3 * 47, 7, 100);  // 2-gram 3's word id
  expect_model_error([&] { parse_lm_trie(s, "x.lm.bin"); },
                     {"x.lm.bin: offset " + std::to_string(bigrams_at + 3 * 47 / 8) + ":",
                      "2-gram 3 has word id 100, beyond the 91 unigrams"});
  s = good;
  set_bits(s, 10 * 47 + 39, 8, 250);  // 2-gram 10's child index
  expect_model_error([&] { parse_lm_trie(s, "x.lm.bin"); },
                     {"x.lm.bin: offset " + std::to_string(bigrams_at + (10 * 47 + 39) / 8) + ":",
                      "2-gram 10: child index 250 is beyond the 177 entries"});

  // Damaged header fields.
  s = good;
  s[19] = 0;
  expect_model_error([&] { parse_lm_trie(s, "x.lm.bin"); }, {"x.lm.bin: offset 19", "order 0"});
  s = good;
  s[19] = 12;
  expect_model_error([&] { parse_lm_trie(s, "x.lm.bin"); }, {"order 12"});
  s = good;
  s[23] = 0x01;  // unigram count * 2^24
  expect_model_error([&] { parse_lm_trie(s, "x.lm.bin"); }, {"x.lm.bin: offset", "truncated"});
  s = good;
  s[27] = 0x7f;  // 2-gram count beyond the format's limit
  expect_model_error([&] { parse_lm_trie(s, "x.lm.bin"); }, {"2^25"});
  expect_model_error([] { parse_lm_trie("garbage", "g.lm.bin"); }, {"g.lm.bin", "not a Sphinx trie"});
  std::string dmp("\x11\0\0\0Darpa Trigram LM\0", 21);
  expect_model_error([&] { parse_lm_trie(dmp, "old.DMP"); }, {"old.DMP", "DMP", "sphinx_lm_convert"});
  expect_model_error([&] { read_ngram_model("/nonexistent.lm.bin"); }, {"cannot read"});
}

}  // namespace
}  // namespace gpuspeech
