#include "lm_trie_reader.h"

#include <cmath>
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "byte_reader.h"
#include "model_error.h"

namespace gpuspeech {

namespace {

constexpr char kTrieMagic[] = "Trie Language Model";
constexpr size_t kTrieMagicLen = sizeof(kTrieMagic) - 1;
constexpr char kDmpMagic[] = "Darpa Trigram LM";
constexpr int kQuantBits = 16;
constexpr size_t kBins = size_t{1} << kQuantBits;
// Sphinx's bit-packed reads are 25 bits wide at most, which bounds word ids
// and child indices.
constexpr int kMaxIndexBits = 25;

// Bits needed to write `max_value` (0 needs none), as sphinxbase counts them.
int required_bits(uint64_t max_value) {
  int bits = 0;
  while (max_value) {
    ++bits;
    max_value >>= 1;
  }
  return bits;
}

// A bit-packed region: entries of `total_bits` bits, fields read least
// significant bit first from a little-endian stream.
class BitRegion {
 public:
  BitRegion(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  // Reads `bits` (<= 32) bits at bit offset `off`; the caller has checked
  // that the field lies inside the region.
  uint32_t read(uint64_t off, int bits) const {
    const size_t byte = static_cast<size_t>(off >> 3);
    const int shift = static_cast<int>(off & 7);
    uint64_t v = 0;
    const size_t n = std::min<size_t>(8, size_ - byte);
    for (size_t i = 0; i < n; ++i) v |= uint64_t(data_[byte + i]) << (8 * i);
    v >>= shift;
    return bits >= 32 ? static_cast<uint32_t>(v) : static_cast<uint32_t>(v & ((1ull << bits) - 1));
  }

 private:
  const uint8_t* data_;
  size_t size_;
};

// Bytes sphinxbase gives a level of `entries` entries of `total_bits` bits:
// one extra entry (for the end of the last child range), rounded up to a
// byte, plus 8 spare bytes for its 64-bit reads.
uint64_t level_bytes(uint64_t entries, int total_bits) {
  return ((1 + entries) * static_cast<uint64_t>(total_bits) + 7) / 8 + 8;
}

// Checks the child index `next` of entry `i` of a level of `entries`
// entries (i == entries: the sentinel that ends the last range), read at
// byte `at` of the file: entry i's children start where entry i-1's start
// (`prev`) or later, the first at 0, and none lies beyond the `below`
// entries the header gives the next level. Everything that indexes the
// level below (sort_children, NgramModel's queries) relies on this.
void check_child_index(const ByteReader& r, size_t at, const std::string& what, uint64_t i,
                       uint64_t entries, uint32_t next, uint32_t prev, uint64_t below) {
  const std::string entry =
      i == entries ? "the end marker of the " + what + "s" : what + " " + std::to_string(i);
  if (i == 0 && next != 0)
    r.fail_at(at, entry + ": its children start at " + std::to_string(next) + ", not at 0");
  if (next < prev)
    r.fail_at(at, entry + ": its children start at " + std::to_string(next) +
                      ", before those of the entry before it (" + std::to_string(prev) + ")");
  if (next > below)
    r.fail_at(at, entry + ": child index " + std::to_string(next) + " is beyond the " +
                      std::to_string(below) + " entries the header declares for the level below");
}

// Reorders the entries of levels[lvl] by `perm` (new index -> old index,
// each parent's children staying within its range), carrying every entry's
// children along: the level below is re-laid out block by block.
void permute_level(std::vector<NgramLevel>& levels, size_t lvl, const std::vector<uint32_t>& perm) {
  NgramLevel& l = levels[lvl];
  auto permuted = [&](const auto& v) {
    std::decay_t<decltype(v)> out(v.size());
    for (size_t i = 0; i < perm.size(); ++i) out[i] = v[perm[i]];
    return out;
  };
  l.words = permuted(l.words);
  l.log10_prob = permuted(l.log10_prob);
  if (!l.log10_backoff.empty()) l.log10_backoff = permuted(l.log10_backoff);
  if (!l.derived.empty()) l.derived = permuted(l.derived);
  if (l.children.empty()) return;
  std::vector<uint32_t> children(l.children.size());
  std::vector<uint32_t> next_perm;
  next_perm.reserve(levels[lvl + 1].size());
  for (size_t i = 0; i < perm.size(); ++i) {
    children[i] = static_cast<uint32_t>(next_perm.size());
    for (uint32_t c = l.children[perm[i]]; c < l.children[perm[i] + 1]; ++c) next_perm.push_back(c);
  }
  children[perm.size()] = static_cast<uint32_t>(next_perm.size());
  l.children = std::move(children);
  permute_level(levels, lvl + 1, next_perm);
}

// sphinxbase's trie builder occasionally leaves a node's children out of
// word order (en-us.lm.bin: two trigram nodes, e.g. the contexts of
// "and bullhorns"), where its own interpolation search may then miss them.
// Sorting makes every stored n-gram findable. Returns how many nodes were
// out of order. Needs every child range ordered and inside the level below
// (parse_lm_trie checks each index as it reads it).
size_t sort_children(std::vector<NgramLevel>& levels, size_t lvl) {
  const NgramLevel& parent = levels[lvl - 1];
  const NgramLevel& l = levels[lvl];
  std::vector<uint32_t> perm(l.size());
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<uint32_t>(i);
  size_t unsorted = 0;
  for (size_t q = 0; q + 1 < parent.children.size(); ++q) {
    const uint32_t b = parent.children[q], e = parent.children[q + 1];
    bool sorted = true;
    for (uint32_t i = b + 1; i < e && sorted; ++i) sorted = l.words[i - 1] < l.words[i];
    if (sorted) continue;
    ++unsorted;
    std::stable_sort(perm.begin() + b, perm.begin() + e,
                     [&](uint32_t x, uint32_t y) { return l.words[x] < l.words[y]; });
  }
  if (unsorted) permute_level(levels, lvl, perm);
  return unsorted;
}

}  // namespace

LmBinaryKind lm_binary_kind(std::string_view bytes) {
  if (bytes.size() >= kTrieMagicLen && bytes.compare(0, kTrieMagicLen, kTrieMagic) == 0)
    return LmBinaryKind::kTrie;
  // DMP: i32 length of the header string (17, either byte order), then it.
  const size_t dmp_len = sizeof(kDmpMagic);  // with its NUL
  if (bytes.size() >= 4 + dmp_len && bytes.compare(4, dmp_len - 1, kDmpMagic) == 0)
    return LmBinaryKind::kDmp;
  return LmBinaryKind::kNone;
}

NgramModel read_lm_trie(const std::string& path) {
  const std::string bytes = read_model_file(path);
  return parse_lm_trie(bytes, path);
}

NgramModel parse_lm_trie(std::string_view bytes, const std::string& name) {
  const LmBinaryKind kind = lm_binary_kind(bytes);
  if (kind == LmBinaryKind::kDmp)
    throw ModelError(name + ": Sphinx DMP language model (\"Darpa Trigram LM\"), which is not "
                            "read; convert it with sphinx_lm_convert -i " + name +
                     " -o model.lm.bin (or to ARPA text)");
  if (kind != LmBinaryKind::kTrie)
    throw ModelError(name + ": not a Sphinx trie language model (no \"Trie Language Model\" "
                            "header)");
  ByteReader r(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), name);
  r.skip(kTrieMagicLen, "header");
  const int order = r.u8("n-gram order");
  if (order < 1 || order > NgramModel::kMaxOrder)
    r.fail_at(kTrieMagicLen, "n-gram order " + std::to_string(order) + " is outside 1.." +
                                 std::to_string(NgramModel::kMaxOrder));
  std::vector<uint64_t> counts(order);
  for (int i = 0; i < order; ++i) {
    counts[i] = r.u32("count of " + std::to_string(i + 1) + "-grams");
    if (required_bits(counts[i]) > kMaxIndexBits)
      r.fail_at(r.offset() - 4, std::to_string(counts[i]) + " " + std::to_string(i + 1) +
                                    "-grams: more than the format's 2^25 limit");
  }
  if (counts[0] == 0) r.fail_at(kTrieMagicLen + 1, "the model has no unigrams");

  // Sizes of everything that follows, checked against the file before any
  // allocation (64-bit arithmetic: counts are below 2^25, products fit).
  const int word_bits = required_bits(counts[0]);
  std::vector<int> next_bits(order, 0), total_bits(order, 0);
  uint64_t ngram_bytes = 0;
  for (int i = 1; i < order; ++i) {
    if (i < order - 1) {
      next_bits[i] = required_bits(counts[i + 1]);
      total_bits[i] = word_bits + 2 * kQuantBits + next_bits[i];
    } else {
      total_bits[i] = word_bits + kQuantBits;
    }
    ngram_bytes += level_bytes(counts[i], total_bits[i]);
  }
  const uint64_t quant_floats = order > 1 ? (2 * kBins) * (order - 2) + kBins : 0;
  const uint64_t needed = (order > 1 ? 4 + quant_floats * 4 : 0) + (counts[0] + 1) * 12 +
                          ngram_bytes + 4;
  if (needed > r.remaining())
    r.fail("truncated: the counts in the header need " + std::to_string(needed) +
           " more bytes, the file has " + std::to_string(r.remaining()));

  // Bin tables, converted to log10 once.
  const double to_log10 = std::log10(kSphinxLmLogBase);
  std::vector<float> bins;
  if (order > 1) {
    const int32_t quant_type = r.i32("quantizer type");
    if (quant_type != 0 && quant_type != 1)
      r.fail_at(r.offset() - 4, "unknown quantizer type " + std::to_string(quant_type) +
                                    " (expected 1, 16-bit bins)");
    bins.resize(quant_floats);
    for (uint64_t i = 0; i < quant_floats; ++i) {
      const float v = r.f32("quantization bins");
      if (std::isnan(v))
        r.fail_at(r.offset() - 4, "quantization bin holds NaN");
      bins[i] = static_cast<float>(v * to_log10);
    }
  }
  auto prob_table = [&](int lvl) -> const float* {  // lvl: 1-based level index >= 1
    return bins.data() + (lvl - 1) * 2 * kBins;
  };
  auto backoff_table = [&](int lvl) -> const float* {
    return bins.data() + (lvl - 1) * 2 * kBins + kBins;
  };

  std::vector<NgramLevel> levels(order);
  {
    NgramLevel& uni = levels[0];
    const size_t V = counts[0];
    uni.log10_prob.resize(V);
    if (order > 1) {
      uni.log10_backoff.resize(V);
      uni.children.resize(V + 1);
    }
    for (size_t i = 0; i <= V; ++i) {
      const size_t at = r.offset();
      const float p = r.f32("unigram probability");
      const float bo = r.f32("unigram back-off");
      const uint32_t next = r.u32("unigram child index");
      if (order > 1)
        check_child_index(r, at + 8, "unigram", i, V, next, i ? uni.children[i - 1] : 0, counts[1]);
      if (i == V) {  // the sentinel entry: only its child index counts
        if (order > 1) uni.children[V] = next;
        continue;
      }
      if (std::isnan(p) || std::isnan(bo) || std::isinf(p) || std::isinf(bo))
        r.fail_at(at, "unigram " + std::to_string(i) + " holds a non-finite value");
      uni.log10_prob[i] = static_cast<float>(p * to_log10);
      if (order > 1) {
        uni.log10_backoff[i] = static_cast<float>(bo * to_log10);
        uni.children[i] = next;
      }
    }
  }

  std::vector<std::string> notes;
  for (int lvl = 1; lvl < order; ++lvl) {
    // The header's count sized the level, but sphinxbase estimates the
    // suffix entries it inserts before inserting them and can allot a few
    // more than it fills (en-us.lm.bin: 6 bigrams; this is also why
    // sphinx_lm_convert asserts on that file). The entries in use are those
    // the level above points to; the rest is zero padding.
    const uint64_t allotted = counts[lvl];
    const NgramLevel& parent = levels[lvl - 1];
    const uint64_t entries = parent.children.back();
    const uint64_t nbytes = level_bytes(allotted, total_bits[lvl]);
    // entries <= allotted: the parents' child indices were checked against it.
    if (entries < allotted)
      notes.push_back(name + ": the header declares " + std::to_string(allotted) + " " +
                      std::to_string(lvl + 1) + "-grams, the trie uses " +
                      std::to_string(entries));
    const size_t start = r.offset();
    r.require(nbytes, std::to_string(lvl + 1) + "-gram data");
    const BitRegion bitsr(r.here(), static_cast<size_t>(nbytes));
    NgramLevel& l = levels[lvl];
    const bool top = lvl == order - 1;
    l.words.resize(entries);
    l.log10_prob.resize(entries);
    if (!top) {
      l.log10_backoff.resize(entries);
      l.children.resize(entries + 1);
    }
    const float* pt = top ? bins.data() + (order - 2) * 2 * kBins : prob_table(lvl);
    const float* bt = top ? nullptr : backoff_table(lvl);
    const std::string what = std::to_string(lvl + 1) + "-gram";
    // Byte offset in the file of bit `off` of the level, for messages.
    auto at = [&](uint64_t off) { return start + static_cast<size_t>(off / 8); };
    for (uint64_t i = 0; i <= entries; ++i) {
      uint64_t off = i * total_bits[lvl];
      if (i == entries) {  // sentinel: only the end of the last child range
        if (!top) {
          const uint64_t next_off = off + word_bits + 2 * kQuantBits;
          const uint32_t next = bitsr.read(next_off, next_bits[lvl]);
          check_child_index(r, at(next_off), what, i, entries, next,
                            entries ? l.children[entries - 1] : 0, counts[lvl + 1]);
          l.children[entries] = next;
        }
        break;
      }
      l.words[i] = bitsr.read(off, word_bits);
      if (l.words[i] >= counts[0])
        r.fail_at(at(off), what + " " + std::to_string(i) + " has word id " +
                               std::to_string(l.words[i]) + ", beyond the " +
                               std::to_string(counts[0]) + " unigrams");
      off += word_bits;
      if (top) {
        l.log10_prob[i] = pt[bitsr.read(off, kQuantBits)];
      } else {
        // The 32 quantizer bits hold the back-off code low, the probability
        // code high (sphinxbase writes (prob << 16) | backoff).
        l.log10_backoff[i] = bt[bitsr.read(off, kQuantBits)];
        l.log10_prob[i] = pt[bitsr.read(off + kQuantBits, kQuantBits)];
        const uint32_t next = bitsr.read(off + 2 * kQuantBits, next_bits[lvl]);
        check_child_index(r, at(off + 2 * kQuantBits), what, i, entries, next,
                          i ? l.children[i - 1] : 0, counts[lvl + 1]);
        l.children[i] = next;
      }
    }
    r.seek(start + nbytes, std::to_string(lvl + 1) + "-gram data");
  }

  // Word strings.
  const size_t words_at = r.offset();
  const int32_t total = r.i32("size of the word strings");
  if (total < 0 || static_cast<size_t>(total) > r.remaining())
    r.fail_at(words_at, "truncated: the word strings declare " + std::to_string(total) +
                            " bytes, " + std::to_string(r.remaining()) + " are left");
  const char* s = reinterpret_cast<const char*>(r.here());
  std::vector<std::string> vocab;
  vocab.reserve(counts[0]);
  size_t begin = 0;
  for (size_t i = 0; i < static_cast<size_t>(total); ++i) {
    if (s[i] != '\0') continue;
    if (i == begin) r.fail_at(words_at + 4 + i, "empty word string");
    if (vocab.size() == counts[0])
      r.fail_at(words_at + 4 + i, "more word strings than the " + std::to_string(counts[0]) +
                                      " unigrams");
    vocab.emplace_back(s + begin, i - begin);
    begin = i + 1;
  }
  if (begin != static_cast<size_t>(total))
    r.fail_at(words_at + 4 + total, "the last word string is not terminated");
  if (vocab.size() != counts[0])
    r.fail_at(words_at, "the file has " + std::to_string(vocab.size()) +
                            " word strings for " + std::to_string(counts[0]) + " unigrams");
  r.skip(static_cast<size_t>(total), "word strings");
  const size_t trailing = r.remaining();

  for (size_t lvl = 1; lvl < levels.size(); ++lvl)
    if (const size_t n = sort_children(levels, lvl))
      notes.push_back(name + ": " + std::to_string(n) + " node" + (n > 1 ? "s" : "") +
                      " of the " + std::to_string(lvl) + "-gram level had " +
                      std::to_string(lvl + 1) + "-gram children out of word order (sorted)");

  NgramModel m = NgramModel::from_trie(std::move(vocab), std::move(levels), name,
                                       LmFileFormat::kSphinxTrie);
  for (std::string& n : notes) m.add_warning(std::move(n));
  if (trailing > 0)
    m.add_warning(name + ": " + std::to_string(trailing) + " bytes after the word strings ignored");
  return m;
}

}  // namespace gpuspeech
