#include "mdef.h"

#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "byte_reader.h"
#include "text_lines.h"  // quote_for_message

namespace gpuspeech {

namespace {

// Base phones are stored as int16 in the binary format; the lookup key
// packs three of them.
constexpr int kMaxBasePhones = 32767;
// No Sphinx topology has more; it bounds per-phone allocations.
constexpr int kMaxEmittingStates = 64;
constexpr uint32_t kBinaryFormatVersion = 1;

const char* const kSilenceName = "SIL";

bool parse_int(const std::string& word, long long& out) {
  if (word.empty()) return false;
  const char* s = word.c_str();
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s, &end, 10);
  if (errno != 0 || end != s + word.size()) return false;
  out = v;
  return true;
}

}  // namespace

char word_position_char(WordPosition pos) {
  switch (pos) {
    case WordPosition::kInternal:
      return 'i';
    case WordPosition::kBegin:
      return 'b';
    case WordPosition::kEnd:
      return 'e';
    case WordPosition::kSingle:
      return 's';
    case WordPosition::kUndefined:
      break;
  }
  return '-';
}

// ----------------------------------------------------------- shared pieces

int ModelDefinition::base_phone_id(const std::string& name) const {
  const auto it = base_ids_.find(name);
  return it == base_ids_.end() ? -1 : it->second;
}

int ModelDefinition::senone(int phone, int state) const {
  if (state < 0 || state >= num_emitting_)
    throw std::out_of_range("ModelDefinition::senone: state out of range");
  return sequences_[static_cast<size_t>(phones_.at(phone).sequence) * num_emitting_ + state];
}

std::vector<int> ModelDefinition::senones_of(int phone) const {
  const size_t at = static_cast<size_t>(phones_.at(phone).sequence) * num_emitting_;
  return std::vector<int>(sequences_.begin() + at, sequences_.begin() + at + num_emitting_);
}

std::string ModelDefinition::phone_name(int phone) const {
  const Phone& p = phones_.at(phone);
  if (phone < num_base_) return base_names_[p.base];
  return base_names_[p.base] + " " + base_names_[p.left] + " " + base_names_[p.right] + " " +
         word_position_char(p.pos);
}

uint64_t ModelDefinition::key(int base, int left, int right, WordPosition pos) const {
  return uint64_t(static_cast<uint8_t>(pos)) << 48 | uint64_t(base) << 32 | uint64_t(left) << 16 |
         uint64_t(right);
}

void ModelDefinition::add_base_phone(const std::string& name, bool filler) {
  const int id = static_cast<int>(base_names_.size());
  base_names_.push_back(name);
  base_filler_.push_back(filler ? 1 : 0);
  base_ids_.emplace(name, id);
}

bool ModelDefinition::index_triphone(int phone_id) {
  const Phone& p = phones_[phone_id];
  return triphones_.emplace(key(p.base, p.left, p.right, p.pos), phone_id).second;
}

int ModelDefinition::intern_sequence(const int* senones) {
  const std::string k(reinterpret_cast<const char*>(senones), sizeof(int) * num_emitting_);
  const auto it = sequence_ids_.emplace(k, num_sequences_);
  if (it.second) {
    sequences_.insert(sequences_.end(), senones, senones + num_emitting_);
    ++num_sequences_;
  }
  return it.first->second;
}

void ModelDefinition::finish_senone_maps() {
  silence_ = base_phone_id(kSilenceName);
  senone_base_.assign(static_cast<size_t>(num_senones_), -1);
  cross_base_senones_ = 0;
  for (const Phone& p : phones_) {
    const int32_t* seq = &sequences_[static_cast<size_t>(p.sequence) * num_emitting_];
    for (int j = 0; j < num_emitting_; ++j) {
      int32_t& b = senone_base_[seq[j]];
      if (b < 0)
        b = p.base;
      else if (b != p.base)
        ++cross_base_senones_;
    }
  }
  sequence_ids_.clear();
}

int ModelDefinition::exact_phone_id(int base, int left, int right, WordPosition pos) const {
  if (base < 0 || base >= num_base_ || left < 0 || left >= num_base_ || right < 0 ||
      right >= num_base_ || static_cast<int>(pos) >= kNumWordPositions)
    return -1;
  const auto it = triphones_.find(key(base, left, right, pos));
  return it == triphones_.end() ? -1 : it->second;
}

int ModelDefinition::phone_id(int base, int left, int right, WordPosition pos) const {
  if (base < 0 || base >= num_base_ || left >= num_base_ || right >= num_base_ ||
      static_cast<int>(pos) >= kNumWordPositions)
    throw std::invalid_argument("ModelDefinition::phone_id: phone or position out of range");
  if (left < 0 || right < 0) return base;
  if (silence_ >= 0) {
    if (base_filler_[left]) left = silence_;
    if (base_filler_[right]) right = silence_;
  }
  return exact_phone_id(base, left, right, pos);
}

int ModelDefinition::nearest_phone_id(int base, int left, int right, WordPosition pos) const {
  if (base < 0 || base >= num_base_ || left >= num_base_ || right >= num_base_ ||
      static_cast<int>(pos) >= kNumWordPositions)
    throw std::invalid_argument(
        "ModelDefinition::nearest_phone_id: phone or position out of range");
  if (left < 0 || right < 0) return base;
  auto at_any_position = [&](int l, int r) {
    int p = phone_id(base, l, r, pos);
    for (int other = 0; p < 0 && other < kNumWordPositions; ++other)
      if (other != static_cast<int>(pos))
        p = phone_id(base, l, r, static_cast<WordPosition>(other));
    return p;
  };
  int p = at_any_position(left, right);
  if (p >= 0) return p;
  if (silence_ >= 0) {
    const bool word_start = pos == WordPosition::kBegin || pos == WordPosition::kSingle;
    const bool word_end = pos == WordPosition::kEnd || pos == WordPosition::kSingle;
    const int new_left = (base_filler_[left] || word_start) ? silence_ : left;
    const int new_right = (base_filler_[right] || word_end) ? silence_ : right;
    if (new_left != left || new_right != right) {
      p = at_any_position(new_left, new_right);
      if (p >= 0) return p;
    }
  }
  return base;
}

// --------------------------------------------------------------- text form

class MdefTextParser {
 public:
  MdefTextParser(const std::string& text, const std::string& name) : text_(text), name_(name) {}

  ModelDefinition run() {
    ModelDefinition m;
    std::vector<std::string> words;
    if (!next_line(words)) fail("empty file (no \"0.3\" version line)");
    if (words[0] != "0.3")
      fail("expected the version line \"0.3\", found " + quote_for_message(words[0]));

    // Header: six "COUNT TAG" lines in any order.
    const char* const tags[] = {"n_base",       "n_tri",           "n_state_map",
                                "n_tied_state", "n_tied_ci_state", "n_tied_tmat"};
    long long counts[6] = {-1, -1, -1, -1, -1, -1};
    int seen = 0;
    while (seen < 6) {
      if (!next_line(words)) fail("incomplete header: end of file before all six counts");
      long long n = 0;
      if (words.size() != 2 || !parse_int(words[0], n) || n < 0 || n > INT32_MAX)
        fail("bad header line (expected 'COUNT TAG' with a non-negative count)");
      int t = 0;
      while (t < 6 && words[1] != tags[t]) ++t;
      if (t == 6) fail("unknown header tag " + quote_for_message(words[1]));
      if (counts[t] >= 0) fail("header tag " + quote_for_message(words[1]) + " given twice");
      counts[t] = n;
      ++seen;
    }
    const long long n_base = counts[0], n_tri = counts[1], n_map = counts[2];
    m.num_senones_ = static_cast<int>(counts[3]);
    m.num_ci_senones_ = static_cast<int>(counts[4]);
    m.num_tmats_ = static_cast<int>(counts[5]);
    if (n_base == 0) fail("n_base is 0");
    if (n_base > kMaxBasePhones)
      fail("n_base " + std::to_string(n_base) + " exceeds the limit " +
           std::to_string(kMaxBasePhones));
    if (m.num_ci_senones_ == 0) fail("n_tied_ci_state is 0");
    if (m.num_tmats_ == 0) fail("n_tied_tmat is 0");
    if (m.num_ci_senones_ > m.num_senones_)
      fail("n_tied_ci_state (" + std::to_string(m.num_ci_senones_) + ") exceeds n_tied_state (" +
           std::to_string(m.num_senones_) + ")");
    const long long n_phone = n_base + n_tri;
    if (n_phone > INT32_MAX) fail("too many phones");
    if (n_map % n_phone != 0 || n_map / n_phone < 2)
      fail("n_state_map " + std::to_string(n_map) + " is not (states per phone + 1) x " +
           std::to_string(n_phone) + " phones with at least one emitting state");
    if (n_map / n_phone - 1 > kMaxEmittingStates)
      fail("more than " + std::to_string(kMaxEmittingStates) + " emitting states per phone");
    m.num_emitting_ = static_cast<int>(n_map / n_phone - 1);
    if (n_base * m.num_emitting_ != m.num_ci_senones_)
      fail("n_tied_ci_state " + std::to_string(m.num_ci_senones_) + " != n_base " +
           std::to_string(n_base) + " x " + std::to_string(m.num_emitting_) + " emitting states");
    if (static_cast<long long>(m.num_senones_) > n_phone * m.num_emitting_)
      fail("n_tied_state " + std::to_string(m.num_senones_) + " exceeds the " +
           std::to_string(n_phone * m.num_emitting_) + " state slots of all phones");

    m.num_base_ = static_cast<int>(n_base);
    std::vector<int> seq(static_cast<size_t>(m.num_emitting_));
    for (long long p = 0; p < n_phone; ++p) {
      if (!next_line(words))
        fail("end of file after " + std::to_string(p) + " of " + std::to_string(n_phone) +
             " phones (n_base + n_tri)");
      if (p < n_base)
        base_line(m, words);
      else
        triphone_line(m, words);
      m.phones_.back().sequence = tail(m, words, p < n_base, seq);
      if (p >= n_base && !m.index_triphone(static_cast<int>(p)))
        fail("duplicate triphone " + quote_for_message(m.phone_name(static_cast<int>(p))));
    }
    if (next_line(words)) fail("more phone lines than n_base + n_tri = " + std::to_string(n_phone));
    m.finish_senone_maps();
    return m;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw ModelError(name_ + ":" + std::to_string(line_) + ": " + why);
  }

  // Next line that is neither a comment ('#' in the first column, as
  // pocketsphinx) nor blank, split into words.
  bool next_line(std::vector<std::string>& words) {
    while (pos_ < text_.size()) {
      size_t end = text_.find('\n', pos_);
      if (end == std::string::npos) end = text_.size();
      ++line_;
      const size_t start = pos_;
      pos_ = end + 1;
      if (text_[start] == '#') continue;
      words.clear();
      size_t i = start;
      while (i < end) {
        while (i < end && std::isspace(static_cast<unsigned char>(text_[i]))) ++i;
        const size_t w = i;
        while (i < end && !std::isspace(static_cast<unsigned char>(text_[i]))) ++i;
        if (i > w) words.emplace_back(text_, w, i - w);
      }
      if (!words.empty()) return true;
    }
    return false;
  }

  bool filler_attribute(const std::string& word) const {
    if (word == "filler") return true;
    if (word == "n/a") return false;
    fail("bad attribute " + quote_for_message(word) + " (expected 'filler' or 'n/a')");
  }

  void base_line(ModelDefinition& m, const std::vector<std::string>& w) {
    if (w.size() < 5) fail("base phone line needs 'NAME - - - ATTRIB TMAT SENONES... N'");
    if (m.base_ids_.count(w[0])) fail("duplicate base phone " + quote_for_message(w[0]));
    for (int k = 1; k <= 3; ++k)
      if (w[k] != "-")
        fail("base phone " + quote_for_message(w[0]) +
             ": context and position must be '-', found " + quote_for_message(w[k]));
    m.add_base_phone(w[0], filler_attribute(w[4]));
    ModelDefinition::Phone ph;
    ph.base = static_cast<int>(m.base_names_.size()) - 1;
    m.phones_.push_back(ph);
  }

  void triphone_line(ModelDefinition& m, const std::vector<std::string>& w) {
    if (w.size() < 5) fail("triphone line needs 'BASE LEFT RIGHT POS ATTRIB TMAT SENONES... N'");
    ModelDefinition::Phone ph;
    const char* what[] = {"base phone", "left context", "right context"};
    int* ids[] = {&ph.base, &ph.left, &ph.right};
    for (int k = 0; k < 3; ++k) {
      *ids[k] = m.base_phone_id(w[k]);
      if (*ids[k] < 0) fail(std::string("unknown ") + what[k] + " " + quote_for_message(w[k]));
    }
    if (w[3].size() != 1)
      fail("bad word position " + quote_for_message(w[3]) + " (expected b, e, i or s)");
    switch (w[3][0]) {
      case 'b':
        ph.pos = WordPosition::kBegin;
        break;
      case 'e':
        ph.pos = WordPosition::kEnd;
        break;
      case 'i':
        ph.pos = WordPosition::kInternal;
        break;
      case 's':
        ph.pos = WordPosition::kSingle;
        break;
      default:
        fail("bad word position " + quote_for_message(w[3]) + " (expected b, e, i or s)");
    }
    if (filler_attribute(w[4]) != static_cast<bool>(m.base_filler_[ph.base]))
      fail("attribute " + quote_for_message(w[4]) + " differs from that of base phone " +
           quote_for_message(w[0]));
    m.phones_.push_back(ph);
  }

  // TMAT SENONE... N: sets the tmat, returns the senone sequence id.
  int tail(ModelDefinition& m, const std::vector<std::string>& w, bool is_base,
           std::vector<int>& seq) {
    const size_t need = 5 + 1 + static_cast<size_t>(m.num_emitting_) + 1;
    long long v = 0;
    if (w.size() < 6 || !parse_int(w[5], v) || v < 0) fail("missing or bad transition matrix id");
    if (v >= m.num_tmats_)
      fail("transition matrix id " + w[5] + " >= n_tied_tmat " + std::to_string(m.num_tmats_));
    m.phones_.back().tmat = static_cast<int>(v);
    for (int s = 0; s < m.num_emitting_; ++s) {
      const size_t k = 6 + static_cast<size_t>(s);
      if (k >= w.size() || !parse_int(w[k], v) || v < 0)
        fail("missing or bad senone id for emitting state " + std::to_string(s) + " (" +
             std::to_string(m.num_emitting_) + " states per phone)");
      if (is_base && v >= m.num_ci_senones_)
        fail("base phone senone " + w[k] + " >= n_tied_ci_state " +
             std::to_string(m.num_ci_senones_));
      if (v >= m.num_senones_)
        fail("senone " + w[k] + " >= n_tied_state " + std::to_string(m.num_senones_));
      seq[s] = static_cast<int>(v);
    }
    if (w.size() < need || w[need - 1] != "N")
      fail("missing the non-emitting final state 'N' after " + std::to_string(m.num_emitting_) +
           " senones");
    if (w.size() > need) fail("unexpected " + quote_for_message(w[need]) + " after the final 'N'");
    return m.intern_sequence(seq.data());
  }

  const std::string& text_;
  const std::string& name_;
  size_t pos_ = 0;
  int line_ = 0;
};

// ------------------------------------------------------------- binary form

class MdefBinaryParser {
 public:
  MdefBinaryParser(const std::string& bytes, const std::string& name) : r_(bytes, name) {}

  ModelDefinition run() {
    ModelDefinition m;
    m.binary_ = true;
    r_.require(4, "byte-order mark");
    const std::string mark(reinterpret_cast<const char*>(r_.here()), 4);
    if (mark == "BMDF")
      r_.set_big_endian(false);
    else if (mark == "FDMB")
      r_.set_big_endian(true);
    else
      r_.fail("not a binary mdef (no BMDF byte-order mark)");
    r_.skip(4, "byte-order mark");
    const uint32_t version = r_.u32("format version");
    if (version > kBinaryFormatVersion)
      r_.fail("format version " + std::to_string(version) + " is newer than " +
              std::to_string(kBinaryFormatVersion));
    const int32_t desc_len = r_.count("format description length", INT32_MAX);
    r_.skip(static_cast<size_t>(desc_len), "format description");

    const int32_t n_ci = r_.count("n_ciphone", kMaxBasePhones);
    const int32_t n_phone = r_.count("n_phone", INT32_MAX);
    const int32_t n_emit = r_.count("n_emit_state", kMaxEmittingStates);
    const int32_t n_ci_sen = r_.count("n_ci_sen", INT32_MAX);
    const int32_t n_sen = r_.count("n_sen", 65536);  // senone ids are uint16
    const int32_t n_tmat = r_.count("n_tmat", INT32_MAX);
    const int32_t n_sseq = r_.count("n_sseq", INT32_MAX);
    const int32_t n_ctx = r_.i32("n_ctx");
    const int32_t n_cd_tree = r_.count("n_cd_tree", INT32_MAX);
    r_.i32("sil");  // pocketsphinx ignores it and looks up "SIL"; so do we
    if (n_ci == 0) r_.fail("n_ciphone is 0");
    if (n_phone < n_ci) r_.fail("n_phone < n_ciphone");
    if (n_emit == 0) r_.fail("heterogeneous topologies (n_emit_state 0) are not supported");
    if (n_ctx != 3)
      r_.fail("n_ctx " + std::to_string(n_ctx) + " (only triphones, 3, are supported)");
    if (n_tmat == 0) r_.fail("n_tmat is 0");
    if (n_ci_sen == 0 || n_ci_sen > n_sen) r_.fail("n_ci_sen must be in [1, n_sen]");
    if (int64_t(n_ci) * n_emit != n_ci_sen)
      r_.fail("n_ci_sen " + std::to_string(n_ci_sen) + " != n_ciphone x n_emit_state");
    if (int64_t(n_sen) > int64_t(n_phone) * n_emit)
      r_.fail("n_sen exceeds the state slots of all phones");
    m.num_base_ = n_ci;
    m.num_emitting_ = n_emit;
    m.num_senones_ = n_sen;
    m.num_ci_senones_ = n_ci_sen;
    m.num_tmats_ = n_tmat;

    // Base phone names, NUL-terminated, then padding to 4 bytes from their
    // start.
    const size_t names_start = r_.offset();
    std::vector<std::string> names;
    for (int i = 0; i < n_ci; ++i) {
      const void* nul = std::memchr(r_.here(), 0, r_.remaining());
      if (!nul) r_.fail("truncated: base phone name " + std::to_string(i) + " has no end");
      const size_t len = static_cast<const uint8_t*>(nul) - r_.here();
      if (len == 0) r_.fail("empty base phone name");
      names.emplace_back(reinterpret_cast<const char*>(r_.here()), len);
      r_.skip(len + 1, "base phone name");
    }
    const size_t tree_start = names_start + ((r_.offset() - names_start + 3) & ~size_t(3));
    r_.seek(tree_start, "context tree");

    r_.require(size_t(n_cd_tree) * 8, "context tree of " + std::to_string(n_cd_tree) + " nodes");
    tree_.resize(static_cast<size_t>(n_cd_tree));
    for (Node& node : tree_) {
      node.ctx = r_.i16("tree node context");
      node.n_down = r_.i16("tree node child count");
      node.down = r_.i32("tree node child or phone");
    }

    const size_t phones_at = r_.offset();
    r_.require(size_t(n_phone) * 12, std::to_string(n_phone) + " phone records");
    struct Raw {
      int32_t ssid, tmat;
      uint8_t info[4];
    };
    std::vector<Raw> raw(static_cast<size_t>(n_phone));
    for (Raw& p : raw) {
      p.ssid = r_.i32("phone senone sequence");
      p.tmat = r_.i32("phone tmat");
      for (uint8_t& b : p.info) b = r_.u8("phone info");
    }
    const size_t sseq_at = r_.offset();
    const int32_t sseq_size = r_.count("senone sequence table size", INT32_MAX);
    if (int64_t(sseq_size) != int64_t(n_sseq) * n_emit)
      r_.fail_at(sseq_at, "senone sequence table size " + std::to_string(sseq_size) +
                              " != n_sseq x n_emit_state");
    r_.require(size_t(sseq_size) * 2, "senone sequence table");
    m.sequences_.resize(static_cast<size_t>(sseq_size));
    for (int32_t& s : m.sequences_) {
      const size_t at = r_.offset();
      s = r_.u16("senone id");
      if (s >= n_sen)
        r_.fail_at(at, "senone " + std::to_string(s) + " >= n_sen " + std::to_string(n_sen));
    }
    if (r_.remaining() != 0)
      r_.fail(std::to_string(r_.remaining()) + " unexpected bytes after the senone sequences");
    m.num_sequences_ = n_sseq;

    for (int i = 0; i < n_ci; ++i) {
      if (m.base_ids_.count(names[i]))
        r_.fail("duplicate base phone " + quote_for_message(names[i]));
      if (raw[i].info[0] > 1)
        r_.fail_at(phones_at + 12 * size_t(i) + 8,
                   "filler flag of base phone " + quote_for_message(names[i]) + " is not 0 or 1");
      m.add_base_phone(names[i], raw[i].info[0] != 0);
    }
    m.phones_.resize(static_cast<size_t>(n_phone));
    for (int i = 0; i < n_phone; ++i) {
      const size_t at = phones_at + 12 * size_t(i);
      const Raw& p = raw[i];
      ModelDefinition::Phone& ph = m.phones_[i];
      if (p.ssid < 0 || p.ssid >= n_sseq)
        r_.fail_at(at, "phone " + std::to_string(i) + ": senone sequence " +
                           std::to_string(p.ssid) + " out of range");
      if (p.tmat < 0 || p.tmat >= n_tmat)
        r_.fail_at(at + 4, "phone " + std::to_string(i) + ": tmat " + std::to_string(p.tmat) +
                               " out of range");
      ph.sequence = p.ssid;
      ph.tmat = p.tmat;
      if (i < n_ci) {
        ph.base = i;
        for (int j = 0; j < n_emit; ++j)
          if (m.sequences_[size_t(p.ssid) * n_emit + j] >= n_ci_sen)
            r_.fail_at(at, "base phone " + quote_for_message(names[i]) + " uses a non-CI senone");
        continue;
      }
      if (p.info[0] >= kNumWordPositions || p.info[1] >= n_ci || p.info[2] >= n_ci ||
          p.info[3] >= n_ci)
        r_.fail_at(at + 8,
                   "phone " + std::to_string(i) + ": word position or context out of range");
      ph.pos = static_cast<WordPosition>(p.info[0]);
      ph.base = p.info[1];
      ph.left = p.info[2];
      ph.right = p.info[3];
      if (!m.index_triphone(i))
        r_.fail_at(at, "duplicate triphone " + quote_for_message(m.phone_name(i)));
    }
    check_tree(m, tree_start);
    m.finish_senone_maps();
    return m;
  }

 private:
  struct Node {
    int16_t ctx, n_down;
    int32_t down;  // first child, or the phone id of a leaf
  };

  // pocketsphinx finds triphones by walking this tree (word position, base,
  // left, right); we use the phone records. Check they agree: every leaf
  // names the triphone of its path, and every triphone has one leaf.
  void check_tree(const ModelDefinition& m, size_t tree_at) {
    const int n_tree = static_cast<int>(tree_.size());
    if (m.num_triphones() == 0 && n_tree == 0) return;
    if (n_tree < kNumWordPositions) r_.fail_at(tree_at, "context tree has fewer than 4 roots");
    std::vector<uint8_t> found(static_cast<size_t>(m.num_phones()), 0);
    long long visited = 0, pushed = kNumWordPositions;
    int path[4];
    // Explicit stack of (node, level); the tree is at most 4 deep.
    struct Item {
      int node, level;
    };
    std::vector<Item> stack;
    for (int i = 0; i < kNumWordPositions; ++i) stack.push_back({i, 0});
    auto bad = [&](int node, const std::string& why) {
      r_.fail_at(tree_at + 8 * size_t(node),
                 "context tree node " + std::to_string(node) + ": " + why);
    };
    while (!stack.empty()) {
      const Item it = stack.back();
      stack.pop_back();
      if (++visited > n_tree) bad(it.node, "the tree has cycles or shared nodes");
      const Node& nd = tree_[it.node];
      const int limit = it.level == 0 ? kNumWordPositions : m.num_base_phones();
      if (nd.ctx < 0 || nd.ctx >= limit) bad(it.node, "context out of range");
      if (it.level == 0 && nd.ctx != it.node) bad(it.node, "root out of word-position order");
      path[it.level] = nd.ctx;
      if (nd.n_down < 0) bad(it.node, "negative child count");
      if (nd.n_down == 0) {  // a leaf: a triphone at level 3, else nothing
        if (it.level < 3) {
          if (nd.down != -1) bad(it.node, "leaf above the right-context level names a phone");
          continue;
        }
        const int pid = nd.down;
        if (pid < m.num_base_phones() || pid >= m.num_phones())
          bad(it.node, "leaf names phone " + std::to_string(pid) + ", not a triphone");
        if (found[pid]++) bad(it.node, "triphone " + std::to_string(pid) + " appears twice");
        if (static_cast<int>(m.position_of(pid)) != path[0] || m.base_of(pid) != path[1] ||
            m.left_of(pid) != path[2] || m.right_of(pid) != path[3])
          bad(it.node,
              "leaf for " + quote_for_message(m.phone_name(pid)) + " lies on another context path");
        continue;
      }
      if (it.level == 3) bad(it.node, "right-context node has children");
      if (nd.down < 0 || int64_t(nd.down) + nd.n_down > n_tree)
        bad(it.node, "children out of range");
      // A tree has each node once; more children than nodes means a cycle.
      pushed += nd.n_down;
      if (pushed > n_tree) bad(it.node, "the tree has cycles or shared nodes");
      for (int c = 0; c < nd.n_down; ++c) stack.push_back({nd.down + c, it.level + 1});
    }
    for (int p = m.num_base_phones(); p < m.num_phones(); ++p)
      if (!found[p])
        r_.fail_at(tree_at, "triphone " + quote_for_message(m.phone_name(p)) +
                                " is missing from the context tree");
  }

  ByteReader r_;
  std::vector<Node> tree_;
};

// ------------------------------------------------------------- entry points

ModelDefinition ModelDefinition::parse_text(const std::string& text, const std::string& name) {
  return MdefTextParser(text, name).run();
}

ModelDefinition ModelDefinition::parse_binary(const std::string& bytes, const std::string& name) {
  return MdefBinaryParser(bytes, name).run();
}

ModelDefinition ModelDefinition::parse(const std::string& bytes, const std::string& name) {
  if (bytes.size() >= 4 && (bytes.compare(0, 4, "BMDF") == 0 || bytes.compare(0, 4, "FDMB") == 0))
    return parse_binary(bytes, name);
  return parse_text(bytes, name);
}

ModelDefinition ModelDefinition::load(const std::string& path) {
  return parse(read_model_file(path), path);
}

}  // namespace gpuspeech
