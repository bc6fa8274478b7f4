// The search graph file: save/load round trip, validation, and every kind
// of damage (truncation, bad counts, corrupt bytes) as a clear error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "common/search/content_hash.h"
#include "common/search/epsilon_arc_lists.h"
#include "common/search/search_graph.h"

namespace gpuspeech {
namespace {

// A random valid graph: states with random arcs, a few final states, words
// with some fillers.
SearchGraph random_graph(std::mt19937& rng, int states, int max_out, int senones, int words) {
  SearchGraph g;
  g.num_senones = senones;
  g.start_state = static_cast<int32_t>(rng() % states);
  g.arc_begin.push_back(0);
  std::uniform_real_distribution<float> cost(-2.0f, 20.0f);
  for (int s = 0; s < states; ++s) {
    const int n = static_cast<int>(rng() % (max_out + 1));
    for (int k = 0; k < n; ++k) {
      g.arc_dest.push_back(static_cast<int32_t>(rng() % states));
      g.arc_ilabel.push_back(static_cast<int32_t>(rng() % (senones + 1)));
      g.arc_olabel.push_back(rng() % 4 == 0 ? static_cast<int32_t>(1 + rng() % words) : 0);
      g.arc_cost.push_back(cost(rng));
    }
    g.arc_begin.push_back(static_cast<int64_t>(g.arc_dest.size()));
    g.final_cost.push_back(rng() % 5 == 0 ? cost(rng) : SearchGraph::kInfinity);
  }
  for (int w = 0; w < words; ++w) {
    g.words.push_back("word" + std::to_string(w) + (w % 7 == 0 ? "(é)" : ""));
    g.word_is_filler.push_back(w % 5 == 0 ? 1 : 0);
  }
  g.source_hash = "0123456789abcdef0123456789abcdef";
  return g;
}

std::string temp_path(const std::string& name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/gpuspeech-test-" + std::to_string(getpid()) + "-" + name;
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

void expect_equal(const SearchGraph& a, const SearchGraph& b) {
  EXPECT_EQ(a.start_state, b.start_state);
  EXPECT_EQ(a.arc_begin, b.arc_begin);
  EXPECT_EQ(a.arc_dest, b.arc_dest);
  EXPECT_EQ(a.arc_ilabel, b.arc_ilabel);
  EXPECT_EQ(a.arc_olabel, b.arc_olabel);
  EXPECT_EQ(a.arc_cost, b.arc_cost);  // bit-exact floats
  ASSERT_EQ(a.final_cost.size(), b.final_cost.size());
  for (size_t i = 0; i < a.final_cost.size(); ++i)
    EXPECT_TRUE(a.final_cost[i] == b.final_cost[i]) << i;
  EXPECT_EQ(a.words, b.words);
  EXPECT_EQ(a.word_is_filler, b.word_is_filler);
  EXPECT_EQ(a.num_senones, b.num_senones);
  EXPECT_EQ(a.source_hash, b.source_hash);
}

TEST(SearchGraph, RoundTrip) {
  std::mt19937 rng(42);
  for (int trial = 0; trial < 20; ++trial) {
    const SearchGraph g = random_graph(rng, 1 + trial * 37, 1 + trial % 6, 1 + trial * 11, 1 + trial);
    const std::string path = temp_path("rt.gsg");
    g.save(path);
    const SearchGraph h = SearchGraph::load(path);
    expect_equal(g, h);
    const std::vector<uint8_t> bytes = read_bytes(path);
    expect_equal(g, SearchGraph::parse(bytes.data(), bytes.size(), "mem"));
    std::remove(path.c_str());
  }
}

TEST(SearchGraph, ValidateNamesTheProblem) {
  std::mt19937 rng(1);
  const SearchGraph good = random_graph(rng, 30, 4, 10, 5);
  ASSERT_NO_THROW(good.validate());
  auto expect_bad = [](SearchGraph g, const std::string& what) {
    try {
      g.validate();
      ADD_FAILURE() << "accepted: " << what;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  SearchGraph g = good;
  g.arc_dest[0] = g.num_states();
  expect_bad(g, "out of range");
  g = good;
  g.arc_ilabel[0] = good.num_senones + 1;
  expect_bad(g, "input label");
  g = good;
  g.arc_olabel[0] = static_cast<int32_t>(good.words.size()) + 1;
  expect_bad(g, "output label");
  g = good;
  g.arc_cost[0] = std::nanf("");
  expect_bad(g, "cost");
  g = good;
  g.final_cost[3] = -SearchGraph::kInfinity;
  expect_bad(g, "final cost");
  g = good;
  g.arc_begin[5] = g.arc_begin[6] + 1;
  expect_bad(g, "decrease");
  g = good;
  g.start_state = -1;
  expect_bad(g, "start state");
  g = good;
  g.word_is_filler.pop_back();
  expect_bad(g, "word_is_filler");
  g = good;
  g.arc_cost.pop_back();
  expect_bad(g, "differ in length");
  EXPECT_THROW(SearchGraph().validate(), std::invalid_argument);
  // save() refuses an invalid graph rather than writing it.
  g = good;
  g.arc_dest[0] = -3;
  EXPECT_THROW(g.save(temp_path("bad.gsg")), std::invalid_argument);
}

TEST(SearchGraph, DamagedFilesAreClearErrors) {
  std::mt19937 rng(3);
  const SearchGraph g = random_graph(rng, 50, 3, 20, 6);
  const std::string path = temp_path("dmg.gsg");
  g.save(path);
  const std::vector<uint8_t> bytes = read_bytes(path);
  std::remove(path.c_str());
  auto error_of = [](const std::vector<uint8_t>& b) -> std::string {
    try {
      SearchGraph::parse(b.data(), b.size(), "damaged.gsg");
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "";
  };
  // Every truncation.
  for (size_t n = 0; n < bytes.size(); n += 1 + n / 16) {
    const std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + n);
    const std::string e = error_of(cut);
    EXPECT_NE(e, "") << "truncated to " << n << " bytes accepted";
    EXPECT_EQ(e.rfind("damaged.gsg: ", 0), 0u) << e;
  }
  // Every single-byte corruption is caught (by the checksum at least).
  for (size_t i = 0; i < bytes.size(); i += 3) {
    std::vector<uint8_t> b = bytes;
    b[i] ^= 0x5a;
    EXPECT_NE(error_of(b), "") << "corruption at byte " << i << " accepted";
  }
  // Absurd counts behind a valid checksum: rejected before allocating.
  auto with_checksum = [](std::vector<uint8_t> b) {
    ContentHasher h;
    h.update(b.data(), b.size() - 8);
    const uint64_t s = h.low64();
    for (int k = 0; k < 8; ++k) b[b.size() - 8 + k] = static_cast<uint8_t>(s >> (8 * k));
    return b;
  };
  std::vector<uint8_t> b = bytes;
  for (int k = 0; k < 8; ++k) b[24 + k] = 0x7f;  // num_arcs = huge
  EXPECT_NE(error_of(with_checksum(b)).find("too short"), std::string::npos) << error_of(with_checksum(b));
  b = bytes;
  b[16] = 0xff, b[17] = 0xff, b[18] = 0xff, b[19] = 0x7f;  // num_states = 2^31 - 1
  EXPECT_NE(error_of(with_checksum(b)), "");
  b = bytes;
  b[8] = 2;  // version
  EXPECT_NE(error_of(with_checksum(b)).find("version"), std::string::npos);
  b = bytes;
  b[0] = 'X';
  EXPECT_NE(error_of(b).find("bad magic"), std::string::npos);
  // A destination out of range behind a valid checksum: validate() catches it.
  b = bytes;
  const size_t dest_at = 56 + g.source_hash.size() + 8 * (g.arc_begin.size());
  b[dest_at + 3] = 0x40;
  EXPECT_NE(error_of(with_checksum(b)).find("out of range"), std::string::npos) << error_of(with_checksum(b));
  EXPECT_THROW(SearchGraph::load(temp_path("does-not-exist.gsg")), std::runtime_error);
}

TEST(ContentHash, SensitiveToEveryByteAndSplitInvariant) {
  std::mt19937 rng(5);
  std::vector<uint8_t> data(1000);
  for (auto& x : data) x = static_cast<uint8_t>(rng());
  ContentHasher whole;
  whole.update(data.data(), data.size());
  // Fed in pieces of any size: the same hash.
  for (size_t piece : {1u, 3u, 7u, 8u, 13u, 999u}) {
    ContentHasher h;
    for (size_t i = 0; i < data.size(); i += piece) h.update(data.data() + i, std::min(piece, data.size() - i));
    EXPECT_EQ(h.hex(), whole.hex()) << piece;
  }
  for (size_t i = 0; i < data.size(); i += 37) {
    std::vector<uint8_t> d = data;
    d[i] ^= 1;
    ContentHasher h;
    h.update(d.data(), d.size());
    EXPECT_NE(h.hex(), whole.hex());
    EXPECT_NE(h.low64(), whole.low64());
  }
  ContentHasher a, b;
  a.update_field("ab");
  a.update_field("c");
  b.update_field("a");
  b.update_field("bc");
  EXPECT_NE(a.hex(), b.hex());
  EXPECT_EQ(whole.hex().size(), 32u);
}

// The device search's epsilon-arc lists: per state exactly its epsilon arcs,
// those without a word label first, each kind in CSR order, and nothing
// else (an emitting arc in a list would be relaxed as if it were epsilon).
TEST(SearchGraph, EpsilonArcListsHoldEachStatesEpsilonArcsInOrder) {
  std::mt19937 rng(9090);
  for (int round = 0; round < 20; ++round) {
    const SearchGraph g = random_graph(rng, 1 + static_cast<int>(rng() % 300), 12, 5, 7);
    const EpsilonArcLists l = epsilon_arc_lists(g);
    const size_t n = static_cast<size_t>(g.num_states());
    ASSERT_EQ(l.first.size(), n + 1);
    ASSERT_EQ(l.plain.size(), n);
    ASSERT_EQ(l.first[0], 0u);
    ASSERT_EQ(l.first[n], l.arcs.size());
    size_t epsilon = 0;
    for (int32_t il : g.arc_ilabel) epsilon += il == 0 ? 1 : 0;
    EXPECT_EQ(l.arcs.size(), epsilon) << "round " << round;
    for (size_t s = 0; s < n; ++s) {
      std::vector<uint32_t> plain, word;
      for (int64_t a = g.arc_begin[s]; a < g.arc_begin[s + 1]; ++a) {
        if (g.arc_ilabel[a] != 0) continue;
        (g.arc_olabel[a] == 0 ? plain : word).push_back(static_cast<uint32_t>(a));
      }
      ASSERT_LE(l.first[s], l.first[s + 1]);
      ASSERT_EQ(l.plain[s], plain.size()) << "state " << s;
      const std::vector<uint32_t> got_plain(l.arcs.begin() + l.first[s],
                                            l.arcs.begin() + l.first[s] + l.plain[s]);
      const std::vector<uint32_t> got_word(l.arcs.begin() + l.first[s] + l.plain[s],
                                           l.arcs.begin() + l.first[s + 1]);
      EXPECT_EQ(got_plain, plain) << "state " << s;
      EXPECT_EQ(got_word, word) << "state " << s;
    }
  }
}

}  // namespace
}  // namespace gpuspeech
