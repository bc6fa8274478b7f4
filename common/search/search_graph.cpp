// The search graph file, all integers and floats little-endian:
//
//   char[8]  magic "GPUSGRPH"
//   u32      version (1)
//   u32      flags (0; reserved)
//   i32      num_states        i32 start_state
//   i64      num_arcs
//   i32      num_senones       i32 num_words
//   u32      source_hash bytes u32 reserved (0)
//   u64      word table bytes (the sum of 4 + length over all words)
//   u8[]     source_hash
//   i64[num_states + 1]  arc_begin
//   i32[num_arcs]        arc_dest, then arc_ilabel, then arc_olabel
//   f32[num_arcs]        arc_cost
//   f32[num_states]      final_cost
//   per word: u32 length, bytes
//   u8[num_words]        word_is_filler
//   u64      checksum: ContentHasher::low64 of every byte before it
//
// Every count is checked against the file size before anything is
// allocated; the checksum is compared once every section has been read,
// and the graph is then validate()d.
#include "common/search/search_graph.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "common/search/cache_file_io.h"

namespace gpuspeech {

namespace {

constexpr char kMagic[8] = {'G', 'P', 'U', 'S', 'G', 'R', 'P', 'H'};
constexpr uint32_t kVersion = 1;
constexpr size_t kFixedHeaderBytes = 8 + 4 + 4 + 4 + 4 + 8 + 4 + 4 + 4 + 4 + 8;
constexpr uint32_t kMaxHashBytes = 4096;
constexpr uint32_t kMaxWordBytes = 65536;

SearchGraph parse_from(ByteSource& source, size_t size, const std::string& name);

}  // namespace

void SearchGraph::validate() const {
  auto bad = [](const std::string& why) { throw std::invalid_argument("search graph: " + why); };
  const size_t ns = final_cost.size();
  if (ns == 0) bad("no states");
  if (ns > static_cast<size_t>(std::numeric_limits<int32_t>::max())) bad("too many states");
  if (start_state < 0 || static_cast<size_t>(start_state) >= ns)
    bad("start state " + std::to_string(start_state) + " out of range");
  if (arc_begin.size() != ns + 1)
    bad("arc_begin has " + std::to_string(arc_begin.size()) + " entries for " +
        std::to_string(ns) + " states");
  const size_t na = arc_dest.size();
  if (arc_ilabel.size() != na || arc_olabel.size() != na || arc_cost.size() != na)
    bad("arc arrays differ in length");
  if (arc_begin[0] != 0) bad("arc_begin[0] is not 0");
  for (size_t s = 0; s < ns; ++s)
    if (arc_begin[s + 1] < arc_begin[s])
      bad("arc offsets decrease at state " + std::to_string(s));
  if (static_cast<uint64_t>(arc_begin[ns]) != na)
    bad("arc_begin ends at " + std::to_string(arc_begin[ns]) + " but there are " +
        std::to_string(na) + " arcs");
  if (num_senones < 0) bad("negative senone count");
  if (word_is_filler.size() != words.size()) bad("word_is_filler and words differ in length");
  for (size_t a = 0; a < na; ++a) {
    if (arc_dest[a] < 0 || static_cast<size_t>(arc_dest[a]) >= ns)
      bad("arc " + std::to_string(a) + " goes to state " + std::to_string(arc_dest[a]) +
          " out of range");
    if (arc_ilabel[a] < 0 || arc_ilabel[a] > num_senones)
      bad("arc " + std::to_string(a) + " has input label " + std::to_string(arc_ilabel[a]) +
          " beyond " + std::to_string(num_senones) + " senones");
    if (arc_olabel[a] < 0 || static_cast<size_t>(arc_olabel[a]) > words.size())
      bad("arc " + std::to_string(a) + " has output label " + std::to_string(arc_olabel[a]) +
          " beyond " + std::to_string(words.size()) + " words");
    if (!std::isfinite(arc_cost[a]))
      bad("arc " + std::to_string(a) + " has a non-finite cost");
  }
  for (size_t s = 0; s < ns; ++s)
    if (std::isnan(final_cost[s]) || final_cost[s] == -kInfinity)
      bad("state " + std::to_string(s) + " has an invalid final cost");
  for (uint8_t f : word_is_filler)
    if (f > 1) bad("word_is_filler holds a value other than 0 or 1");
}

void SearchGraph::save(const std::string& path) const {
  validate();
  for (const std::string& w : words)
    if (w.size() > kMaxWordBytes) throw std::invalid_argument("search graph: word too long");
  if (source_hash.size() > kMaxHashBytes)
    throw std::invalid_argument("search graph: source hash too long");
  uint64_t word_bytes = 0;
  for (const std::string& w : words) word_bytes += 4 + w.size();

  CacheFileWriter w;
  w.bytes.reserve(kFixedHeaderBytes + source_hash.size() + arc_begin.size() * 8 +
                  arc_dest.size() * 16 + final_cost.size() * 4 + word_bytes + words.size() + 8);
  w.bytes.insert(w.bytes.end(), kMagic, kMagic + 8);
  w.put<uint32_t>(kVersion);
  w.put<uint32_t>(0);
  w.put<int32_t>(num_states());
  w.put<int32_t>(start_state);
  w.put<int64_t>(num_arcs());
  w.put<int32_t>(num_senones);
  w.put<int32_t>(static_cast<int32_t>(words.size()));
  w.put<uint32_t>(static_cast<uint32_t>(source_hash.size()));
  w.put<uint32_t>(0);
  w.put<uint64_t>(word_bytes);
  w.put_bytes(source_hash);
  w.put_array(arc_begin);
  w.put_array(arc_dest);
  w.put_array(arc_ilabel);
  w.put_array(arc_olabel);
  w.put_array(arc_cost);
  w.put_array(final_cost);
  for (const std::string& word : words) {
    w.put<uint32_t>(static_cast<uint32_t>(word.size()));
    w.put_bytes(word);
  }
  w.put_array(word_is_filler);
  w.put_checksum();
  // Written to a temporary name and renamed, so that a reader (or a second
  // compiler filling the same cache) never sees a half-written file.
  write_file_atomically(path, w.bytes.data(), w.bytes.size());
}

SearchGraph SearchGraph::load(const std::string& path) {
  return parse_cache_file(path, [&](ByteSource& source, size_t size) {
    return parse_from(source, size, path);
  });
}

SearchGraph SearchGraph::parse(const uint8_t* bytes, size_t size, const std::string& name) {
  MemorySource source(bytes, size);
  return parse_from(source, size, name);
}

namespace {

SearchGraph parse_from(ByteSource& source, size_t size, const std::string& name) {
  CacheFileReader r(source, size, name);
  if (size < 8 || r.get_string(8, "magic") != std::string(kMagic, 8))
    throw std::runtime_error(name + ": not a gpuspeech search graph (bad magic)");
  const uint32_t version = r.get<uint32_t>("version");
  if (version != kVersion)
    r.fail("unsupported version " + std::to_string(version) + " (this build reads " +
           std::to_string(kVersion) + "); recompile the graph");
  if (r.get<uint32_t>("flags") != 0) r.fail("unknown flags");
  const int32_t num_states = r.get<int32_t>("state count");
  const int32_t start = r.get<int32_t>("start state");
  const int64_t num_arcs = r.get<int64_t>("arc count");
  const int32_t num_senones = r.get<int32_t>("senone count");
  const int32_t num_words = r.get<int32_t>("word count");
  const uint32_t hash_bytes = r.get<uint32_t>("hash length");
  if (r.get<uint32_t>("reserved field") != 0) r.fail("reserved field is not 0");
  const uint64_t word_bytes = r.get<uint64_t>("word table size");
  if (num_states < 1) r.fail("state count " + std::to_string(num_states) + " is not positive");
  if (num_arcs < 0) r.fail("negative arc count");
  if (num_senones < 0) r.fail("negative senone count");
  if (num_words < 0) r.fail("negative word count");
  if (hash_bytes > kMaxHashBytes) r.fail("source hash length " + std::to_string(hash_bytes) + " too large");

  // The exact size the counts imply, computed without overflow: each term
  // is bounded by the checks before it is added.
  const uint64_t avail = size;
  uint64_t need = kFixedHeaderBytes;
  auto add = [&](uint64_t count, uint64_t unit, const char* what) {
    if (count > avail / unit || need + count * unit > avail)
      r.fail(std::string("file too short for its ") + what + " (" + std::to_string(count) +
             " declared, " + std::to_string(avail) + " bytes in the file)");
    need += count * unit;
  };
  add(hash_bytes, 1, "source hash");
  add(static_cast<uint64_t>(num_states) + 1, 8, "arc offsets");
  add(static_cast<uint64_t>(num_arcs), 16, "arcs");
  add(static_cast<uint64_t>(num_states), 4, "final costs");
  add(word_bytes, 1, "word table");
  add(static_cast<uint64_t>(num_words), 1, "filler flags");
  add(1, 8, "checksum");
  if (need != avail)
    r.fail("file size " + std::to_string(avail) + " does not match the " + std::to_string(need) +
           " bytes its header implies");
  if (word_bytes < 4ull * static_cast<uint64_t>(num_words))
    r.fail("word table too small for its word count");

  SearchGraph g;
  g.start_state = start;
  g.num_senones = num_senones;
  g.source_hash = r.get_string(hash_bytes, "source hash");
  r.get_array(g.arc_begin, static_cast<uint64_t>(num_states) + 1, "arc offsets");
  r.get_array(g.arc_dest, static_cast<uint64_t>(num_arcs), "arc destinations");
  r.get_array(g.arc_ilabel, static_cast<uint64_t>(num_arcs), "input labels");
  r.get_array(g.arc_olabel, static_cast<uint64_t>(num_arcs), "output labels");
  r.get_array(g.arc_cost, static_cast<uint64_t>(num_arcs), "arc costs");
  r.get_array(g.final_cost, static_cast<uint64_t>(num_states), "final costs");
  const size_t words_start = r.pos();
  g.words.reserve(static_cast<size_t>(num_words));
  for (int32_t i = 0; i < num_words; ++i) {
    const uint32_t len = r.get<uint32_t>("word length");
    if (len > kMaxWordBytes) r.fail("word " + std::to_string(i) + " length " + std::to_string(len) + " too large");
    if (r.pos() - words_start + len > word_bytes) r.fail("word " + std::to_string(i) + " runs past the word table");
    g.words.push_back(r.get_string(len, "word"));
  }
  if (r.pos() - words_start != word_bytes) r.fail("word table size does not match its words");
  r.get_array(g.word_is_filler, static_cast<uint64_t>(num_words), "filler flags");
  // Checked before validate(), so that a damaged file is named as such.
  if (!r.checksum_matches()) throw std::runtime_error(name + ": checksum mismatch (file corrupt)");
  try {
    g.validate();
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(name + ": " + e.what());
  }
  return g;
}

}  // namespace

}  // namespace gpuspeech
