#include "common/search/ngram_image.h"

#include <cstring>
#include <stdexcept>

#include "common/search/cache_file_io.h"

namespace gpuspeech {

namespace {

constexpr char kMagic[8] = {'G', 'P', 'U', 'S', 'N', 'G', 'R', 'M'};
constexpr uint32_t kVersion = 1;
constexpr uint64_t kFixedHeaderBytes = 8 + 4 + 4 + 4 + 4 + 8;
constexpr uint64_t kLevelHeaderBytes = 8 + 4 + 4;
constexpr uint32_t kMaxWordBytes = 65536;
constexpr uint32_t kHasBackoffs = 1;
constexpr uint32_t kHasDerived = 2;

uint32_t level_flags(const NgramLevel& l) {
  return (l.log10_backoff.empty() ? 0 : kHasBackoffs) | (l.derived.empty() ? 0 : kHasDerived);
}

NgramModel parse_from(ByteSource& source, size_t size, const std::string& name) {
  CacheFileReader r(source, size, name);
  if (size < 8 || r.get_string(8, "magic") != std::string(kMagic, 8))
    throw std::runtime_error(name + ": not a gpuspeech n-gram image (bad magic)");
  const uint32_t version = r.get<uint32_t>("version");
  if (version != kVersion)
    r.fail("unsupported version " + std::to_string(version) + " (this build reads " +
           std::to_string(kVersion) + ")");
  const uint32_t format = r.get<uint32_t>("source format");
  if (format > static_cast<uint32_t>(LmFileFormat::kBuilt))
    r.fail("unknown source format " + std::to_string(format));
  const uint32_t order = r.get<uint32_t>("order");
  if (order < 1 || order > static_cast<uint32_t>(NgramModel::kMaxOrder))
    r.fail("order " + std::to_string(order) + " is outside 1.." +
           std::to_string(NgramModel::kMaxOrder));
  const uint32_t vocab_size = r.get<uint32_t>("vocabulary size");
  const uint64_t vocab_bytes = r.get<uint64_t>("vocabulary bytes");

  // The exact size the counts imply, computed without overflow: each term
  // is bounded by the file's size before it is added.
  const uint64_t avail = size;
  uint64_t need = kFixedHeaderBytes;
  auto add = [&](uint64_t count, uint64_t unit, const std::string& what) {
    if (count > avail / unit || need + count * unit > avail)
      r.fail("file too short for its " + what + " (" + std::to_string(count) + " declared, " +
             std::to_string(avail) + " bytes in the file)");
    need += count * unit;
  };
  std::vector<uint64_t> entries(order);
  std::vector<uint32_t> flags(order);
  add(order, kLevelHeaderBytes, "order headers");
  for (uint32_t n = 0; n < order; ++n) {
    entries[n] = r.get<uint64_t>("entry count");
    flags[n] = r.get<uint32_t>("order flags");
    if (r.get<uint32_t>("reserved field") != 0) r.fail("reserved field is not 0");
    if (flags[n] & ~(kHasBackoffs | kHasDerived)) r.fail("unknown order flags");
    if (n + 1 < order && !(flags[n] & kHasBackoffs))
      r.fail(std::to_string(n + 1) + "-grams lack back-off weights");
    if (entries[n] > UINT32_MAX) r.fail(std::to_string(n + 1) + "-grams: too many entries");
  }
  if (entries[0] != vocab_size) r.fail("vocabulary size does not match the unigram count");
  add(vocab_bytes, 1, "vocabulary");
  for (uint32_t n = 0; n < order; ++n) {
    const std::string ord = std::to_string(n + 1) + "-grams";
    if (n > 0) add(entries[n], 4, ord + "' words");
    add(entries[n], 4, ord + "' probabilities");
    if (flags[n] & kHasBackoffs) add(entries[n], 4, ord + "' back-off weights");
    if (n + 1 < order) add(entries[n] + 1, 4, ord + "' child offsets");
    if (flags[n] & kHasDerived) add(entries[n], 1, ord + "' derived flags");
  }
  add(1, 8, "checksum");
  if (need != avail)
    r.fail("file size " + std::to_string(avail) + " does not match the " + std::to_string(need) +
           " bytes its header implies");
  if (vocab_bytes < 4ull * vocab_size) r.fail("vocabulary too small for its word count");

  std::vector<std::string> vocabulary;
  vocabulary.reserve(vocab_size);
  const size_t vocab_start = r.pos();
  for (uint32_t i = 0; i < vocab_size; ++i) {
    const uint32_t len = r.get<uint32_t>("word length");
    if (len > kMaxWordBytes)
      r.fail("word " + std::to_string(i) + " length " + std::to_string(len) + " too large");
    if (r.pos() - vocab_start + len > vocab_bytes)
      r.fail("word " + std::to_string(i) + " runs past the vocabulary");
    vocabulary.push_back(r.get_string(len, "word"));
  }
  if (r.pos() - vocab_start != vocab_bytes) r.fail("vocabulary size does not match its words");

  std::vector<NgramLevel> levels(order);
  for (uint32_t n = 0; n < order; ++n) {
    NgramLevel& l = levels[n];
    if (n > 0) r.get_array(l.words, entries[n], "words");
    r.get_array(l.log10_prob, entries[n], "probabilities");
    if (flags[n] & kHasBackoffs) r.get_array(l.log10_backoff, entries[n], "back-off weights");
    if (n + 1 < order) r.get_array(l.children, entries[n] + 1, "child offsets");
    if (flags[n] & kHasDerived) r.get_array(l.derived, entries[n], "derived flags");
  }
  // Checked before the trie is, so that a damaged file is named as such.
  if (!r.checksum_matches()) throw std::runtime_error(name + ": checksum mismatch (file corrupt)");
  for (uint32_t n = 0; n < order; ++n)
    for (uint8_t d : levels[n].derived)
      if (d > 1) r.fail(std::to_string(n + 1) + "-grams: a derived flag other than 0 or 1");
  return NgramModel::from_trie(std::move(vocabulary), std::move(levels), name,
                               static_cast<LmFileFormat>(format));
}

}  // namespace

bool is_ngram_image(std::string_view bytes) {
  return bytes.size() >= 8 && std::memcmp(bytes.data(), kMagic, 8) == 0;
}

std::vector<uint8_t> format_ngram_image(const NgramModel& model) {
  const std::vector<NgramLevel>& levels = model.levels();
  uint64_t vocab_bytes = 0, total = kFixedHeaderBytes + levels.size() * kLevelHeaderBytes + 8;
  for (const std::string& w : model.vocabulary()) {
    if (w.size() > kMaxWordBytes)
      throw std::invalid_argument(model.source() + ": a word of " + std::to_string(w.size()) +
                                  " bytes is too long for an n-gram image");
    vocab_bytes += 4 + w.size();
  }
  total += vocab_bytes;
  for (const NgramLevel& l : levels)
    total += (l.words.size() + l.log10_prob.size() + l.log10_backoff.size() + l.children.size()) * 4 +
             l.derived.size();

  CacheFileWriter w;
  w.bytes.reserve(total);
  w.put_bytes(kMagic, 8);
  w.put<uint32_t>(kVersion);
  w.put<uint32_t>(static_cast<uint32_t>(model.format()));
  w.put<uint32_t>(static_cast<uint32_t>(levels.size()));
  w.put<uint32_t>(static_cast<uint32_t>(model.vocabulary().size()));
  w.put<uint64_t>(vocab_bytes);
  for (const NgramLevel& l : levels) {
    w.put<uint64_t>(l.size());
    w.put<uint32_t>(level_flags(l));
    w.put<uint32_t>(0);
  }
  for (const std::string& word : model.vocabulary()) {
    w.put<uint32_t>(static_cast<uint32_t>(word.size()));
    w.put_bytes(word);
  }
  for (size_t n = 0; n < levels.size(); ++n) {
    const NgramLevel& l = levels[n];
    if (n > 0) w.put_array(l.words);
    w.put_array(l.log10_prob);
    w.put_array(l.log10_backoff);
    w.put_array(l.children);
    w.put_array(l.derived);
  }
  w.put_checksum();
  return std::move(w.bytes);
}

void write_ngram_image(const std::string& path, const NgramModel& model) {
  const std::vector<uint8_t> bytes = format_ngram_image(model);
  write_file_atomically(path, bytes.data(), bytes.size());
}

NgramModel parse_ngram_image(const uint8_t* bytes, size_t size, const std::string& name) {
  MemorySource source(bytes, size);
  return parse_from(source, size, name);
}

NgramModel read_ngram_image(const std::string& path) {
  return parse_cache_file(path, [&](ByteSource& source, size_t size) {
    return parse_from(source, size, path);
  });
}

NgramModel read_cached_ngram_model(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  char head[8] = {};
  const size_t n = f ? std::fread(head, 1, sizeof head, f) : 0;
  if (f) std::fclose(f);
  if (is_ngram_image(std::string_view(head, n))) return read_ngram_image(path);
  return read_ngram_model(path);
}

}  // namespace gpuspeech
